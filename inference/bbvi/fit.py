"""Black-box VI: the public functions :func:`fit` and :func:`gradient`, which validate and explain."""

import numbers
import time
import numpy as np

from ...expfam import DiagonalGaussian, ExponentialFamily, Gaussian
from ...expfam.checks import check_integer
from . import _estimators
from ._joint import SINGLE_BLOCK, LogJoint
from ._steps import STEPS, Stepper
from .result import BBVIResult

ESTIMATORS = ("score", "reparam")
REPARAMETERISABLE = (Gaussian, DiagonalGaussian)
DEFAULT_LEARNING_RATE = {"natural": 0.1, "sgd": 0.01, "adam": 0.05}


class GradientEstimate:
    """One Monte Carlo estimate of the ELBO gradient for every block, from ``S`` shared draws.

    Attributes
    ----------
    posterior : dict
        Block name -> the ``q`` the estimate is taken at.
    euclidean : dict
        Block name -> ``grad_lambda ELBO``, flattened, shape ``batch + (P,)``
        (:func:`efvi.expfam.flatten` order; :func:`efvi.expfam.unflatten` gives the tuple).
    natural : dict
        Block name -> ``grad_mu ELBO = F(lambda)^{-1} grad_lambda ELBO``, the
        natural gradient, flattened likewise.
    variance, natural_variance : dict
        Block name -> the trace of the covariance of :attr:`euclidean` (of
        :attr:`natural`), ``sum_d Var_s(c_sd) / S`` from the per-draw terms ``c_s``.
    elbo : float
        ``mean_s [log p(z_s) - log q(z_s)]``, the Monte Carlo ELBO of the same draws.
    """

    def __init__(self, posterior, euclidean, natural, variance, natural_variance, elbo):
        self.posterior = posterior
        self.euclidean = euclidean
        self.natural = natural
        self.variance = variance
        self.natural_variance = natural_variance
        self.elbo = float(elbo)


def gradient(log_joint, q, estimator="score", control_variate=None, n_samples=10, seed=None, vectorized=False):
    """Estimate the ELBO gradient at ``q`` once (what every iteration of :func:`fit` does).

    Parameters are those of :func:`fit` (``q`` plays the role of ``init``).

    Returns
    -------
    GradientEstimate
    """
    joint, posterior, options = _check(log_joint, q, estimator, control_variate, n_samples, vectorized)
    return _estimate(joint, posterior, options, _rng(seed))


def fit(log_joint, init, estimator="score", control_variate=None, step="natural", learning_rate=None,
        n_iter=1000, n_samples=10, seed=None, expected_log_joint=None, vectorized=False):
    """Maximise the ELBO of a mean-field exponential-family ``q`` with stochastic gradients.

    .. math:: \\mathcal L(q) = E_q[\\log p(z)] + \\sum_b H[q_b], \\qquad q(z) = \\prod_b q_b(z_b).

    Parameters
    ----------
    log_joint : callable or list of (blocks, callable)
        The log joint ``log p(x, z)`` (priors included), written with
        ``autograd.numpy`` (reparameterisation differentiates it).  A callable
        takes the draws ``z`` -- a dict block name -> array when ``init`` is a
        dict, the bare array when ``init`` is one distribution -- and returns a
        scalar.  A list of terms ``(blocks, log_density)``, ``blocks`` a name or
        tuple of names, is the log joint as a sum; each ``log_density`` gets the
        draws of its blocks only, and block ``b``'s gradient uses only the terms
        that name it (Rao-Blackwellisation across mean-field blocks).
    init : ExponentialFamily or dict of str -> ExponentialFamily
        The initial ``q`` of each block; any registered family.  Draws have
        shape ``batch + event`` of that object.
    estimator : {"score", "reparam"}
        Score function (any family) or reparameterisation (Gaussian and
        DiagonalGaussian blocks only).
    control_variate : {"loo", "optimal", "none"} or None
        Score function only; None means ``"loo"``, the leave-one-out baseline.
        ``"optimal"`` is the per-coordinate scalar ``a* = Cov(f, h) / Var(h)``.
    step : {"natural", "sgd", "adam"}
        Natural-gradient steps (``F^-1 grad``, the mean-parameter gradient) or
        Euclidean steps on the natural parameters.
    learning_rate : float or callable, optional
        A step size > 0, or ``learning_rate(iteration) -> float`` (iterations
        from 0) for a Robbins-Monro schedule.  Default 0.1 (natural), 0.01 (sgd),
        0.05 (adam).
    n_iter : int
        Iterations (there is no stopping rule: the estimates are noisy).
    n_samples : int
        Draws per iteration, ``S >= 2`` (``>= 3`` for ``"optimal"``).
    seed : int or numpy.random.Generator, optional
    expected_log_joint : callable, optional
        ``expected_log_joint(q) -> float``, the exact ``E_q[log p(x, z)]`` for
        ``q`` shaped like ``init``; gives :attr:`BBVIResult.exact_elbo_trace`.
    vectorized : bool
        Whether ``log_joint`` (each term) takes all ``S`` draws at once (arrays with
        a leading sample axis) and returns shape ``(S,)``.

    Returns
    -------
    BBVIResult

    Raises
    ------
    ValueError
        Naming the argument, what it must be and what was received: an unknown
        option, a family that cannot be reparameterised, a log joint that
        returns a non-scalar, NaN or infinity (or reads a block its term does
        not declare), an ``expected_log_joint`` that is not a finite scalar.
    """
    joint, posterior, options = _check(log_joint, init, estimator, control_variate, n_samples, vectorized)
    if step not in STEPS:
        raise ValueError(f"step must be one of {', '.join(map(repr, STEPS))}; got {step!r}")
    schedule = _check_learning_rate(DEFAULT_LEARNING_RATE[step] if learning_rate is None else learning_rate)
    n_iter = check_integer(n_iter, "n_iter", minimum=0)
    if expected_log_joint is not None and not callable(expected_log_joint):
        raise ValueError(f"expected_log_joint must be callable or None; got {type(expected_log_joint).__name__}")
    rng = _rng(seed)
    options["step"] = step

    stepper = Stepper(step)
    elbo, exact, variance = [], [], {name: [] for name in posterior}
    start = time.perf_counter()
    for iteration in range(n_iter):
        estimate = _estimate(joint, posterior, options, rng)
        elbo.append(estimate.elbo)
        if expected_log_joint is not None:
            exact.append(_exact_elbo(expected_log_joint, posterior, joint.single))
        for name in posterior:
            variance[name].append((estimate.natural_variance if step == "natural" else estimate.variance)[name])
        rho = schedule(iteration)
        posterior = {name: stepper.step(name, q, estimate, rho, iteration) for name, q in posterior.items()}
    elbo.append(_monte_carlo_elbo(joint, posterior, options["n_samples"], rng))
    if expected_log_joint is not None:
        exact.append(_exact_elbo(expected_log_joint, posterior, joint.single))
    total = time.perf_counter() - start
    return BBVIResult(posterior, elbo, exact if expected_log_joint is not None else None, variance,
                      stepper.n_backoffs, {"total": total, "per_iteration": total / max(n_iter, 1)}, options)


# ---------------------------------------------------------------------- computation
def _estimate(joint, posterior, options, rng):
    n_samples = options["n_samples"]
    draws = {name: q.sample(rng, n_samples) for name, q in posterior.items()}
    values = joint.values(draws, n_samples)                               # (K, S)
    log_q = sum(np.asarray(q.logpdf(draws[name])).reshape(n_samples, -1).sum(axis=1)
                for name, q in posterior.items())
    elbo = float(np.mean(values.sum(axis=0) - log_q))
    estimate = GradientEstimate(dict(posterior), {}, {}, {}, {}, elbo)
    for name, q in posterior.items():
        family = type(q)
        if options["estimator"] == "score":
            log_p = values[joint.terms_of(name)].sum(axis=0)
            euclidean, _ = _estimators.score_terms(q, draws[name], log_p, options["control_variate"])
            natural = _estimators.natural_from_euclidean(family, q.natural, euclidean)
        else:
            natural = _estimators.reparameterisation_terms(q, draws[name], joint.block_gradient(draws, name, n_samples))
            euclidean = _estimators.euclidean_from_natural(family, q.natural, natural)
        estimate.euclidean[name], estimate.natural[name] = euclidean.mean(axis=0), natural.mean(axis=0)
        estimate.variance[name] = _estimators.trace_variance(euclidean)
        estimate.natural_variance[name] = _estimators.trace_variance(natural)
    return estimate


def _monte_carlo_elbo(joint, posterior, n_samples, rng):
    draws = {name: q.sample(rng, n_samples) for name, q in posterior.items()}
    log_q = sum(np.asarray(q.logpdf(draws[name])).reshape(n_samples, -1).sum(axis=1)
                for name, q in posterior.items())
    return float(np.mean(joint.values(draws, n_samples).sum(axis=0) - log_q))


def _exact_elbo(expected_log_joint, posterior, single):
    value = expected_log_joint(posterior[SINGLE_BLOCK] if single else dict(posterior))
    value = np.asarray(value, dtype=float)
    if value.shape != () or not np.isfinite(value):
        raise ValueError(f"expected_log_joint(q) must return a finite scalar; got "
                         f"{'shape ' + str(value.shape) if value.shape != () else value}")
    return float(value) + float(sum(np.sum(q.entropy()) for q in posterior.values()))


# ---------------------------------------------------------------------- validation
def _check(log_joint, init, estimator, control_variate, n_samples, vectorized):
    if isinstance(init, ExponentialFamily):
        posterior, single = {SINGLE_BLOCK: init}, True
    elif isinstance(init, dict) and init:
        for name, q in init.items():
            if not isinstance(name, str) or not isinstance(q, ExponentialFamily):
                raise ValueError(f"init must map block names (str) to expfam distributions; got "
                                 f"{name!r}: {type(q).__name__}")
        posterior, single = dict(init), False
    else:
        raise ValueError(f"init must be an expfam distribution or a non-empty dict of them; got "
                         f"{type(init).__name__}")
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(map(repr, ESTIMATORS))}; got {estimator!r}")
    if estimator == "reparam":
        if control_variate not in (None, "none"):
            raise ValueError(f"control_variate must be None with estimator='reparam' (control variates are "
                             f"for the score function); got {control_variate!r}")
        for name, q in posterior.items():
            if type(q) not in REPARAMETERISABLE:
                raise ValueError(f"estimator='reparam' needs Gaussian or DiagonalGaussian blocks; block {name!r} "
                                 f"is {type(q).__name__}: use estimator='score'")
        control_variate = "none"
    elif control_variate is None:
        control_variate = "loo"
    elif control_variate not in _estimators.CONTROL_VARIATES:
        raise ValueError(f"control_variate must be one of "
                         f"{', '.join(map(repr, _estimators.CONTROL_VARIATES))} or None; got {control_variate!r}")
    minimum = 3 if control_variate == "optimal" else 2
    n_samples = check_integer(n_samples, "n_samples", minimum=minimum,
                              suffix=" (the control variate is estimated from the other draws)")
    if not isinstance(vectorized, (bool, np.bool_)):
        raise ValueError(f"vectorized must be True or False; got {vectorized!r}")
    terms = _check_terms(log_joint, posterior, single)
    options = {"estimator": estimator, "control_variate": control_variate, "n_samples": n_samples,
               "rao_blackwellised": not callable(log_joint)}
    return LogJoint(terms, single, bool(vectorized)), posterior, options


def _check_terms(log_joint, posterior, single):
    names = tuple(posterior)
    if callable(log_joint):
        return [(names, log_joint)]
    if single or not isinstance(log_joint, (list, tuple)) or not log_joint:
        raise ValueError(
            "log_joint must be a callable"
            + ("" if single else " or a non-empty list of (blocks, log_density) terms")
            + f"; got {type(log_joint).__name__}")
    terms = []
    for k, term in enumerate(log_joint):
        if not isinstance(term, (tuple, list)) or len(term) != 2 or not callable(term[1]):
            raise ValueError(f"log_joint[{k}] must be a pair (blocks, log_density) with log_density callable; "
                             f"got {term!r}")
        blocks = (term[0],) if isinstance(term[0], str) else tuple(term[0])
        unknown = [b for b in blocks if b not in posterior]
        if not blocks or unknown:
            raise ValueError(f"log_joint[{k}] must name blocks of init ({', '.join(map(repr, names))}); "
                             f"got {term[0]!r}")
        terms.append((blocks, term[1]))
    missing = [b for b in names if not any(b in blocks for blocks, _ in terms)]
    if missing:
        raise ValueError(f"every block of init must appear in some term of log_joint; "
                         f"{', '.join(map(repr, missing))} appear in none")
    return terms


def _check_learning_rate(learning_rate):
    if callable(learning_rate):
        def schedule(iteration):
            value = learning_rate(iteration)
            if not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
                raise ValueError(f"learning_rate({iteration}) must return a finite float > 0; got {value!r}")
            return float(value)
        return schedule
    if (not isinstance(learning_rate, numbers.Real) or isinstance(learning_rate, bool)
            or not np.isfinite(learning_rate) or learning_rate <= 0):
        raise ValueError(f"learning_rate must be a finite float > 0 or a callable; got {learning_rate!r}")
    return lambda iteration: float(learning_rate)


def _rng(seed):
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None:
        check_integer(seed, "seed", suffix=", a numpy.random.Generator or None")
    return np.random.default_rng(seed)
