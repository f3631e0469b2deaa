"""Black-box VI: the public functions :func:`fit`, :func:`resume` and :func:`gradient`, which validate and explain."""

import copy

import numpy as np

from ...expfam.checks import check_integer
from ._checks import _check, _check_expected, _check_learning_rate, _check_tol, _check_warn
from ._gradient import GradientEstimate, estimate
from ._joint import SINGLE_BLOCK
from ._run import RunState, run
from ._steps import STEPS
from .result import BBVIResult

DEFAULT_LEARNING_RATE = {"natural": 0.1, "sgd": 0.01, "adam": 0.05}

__all__ = ["fit", "resume", "gradient", "GradientEstimate"]


def fit(log_joint, init, estimator="score", control_variate=None, step="natural", learning_rate=None,
        n_iter=1000, n_samples=10, seed=None, expected_log_joint=None, vectorized=False, tol=1e-4, window=100,
        warn=True):
    """Maximise the ELBO of a mean-field exponential-family ``q`` with stochastic gradients.

    .. math:: \\mathcal L(q) = E_q[\\log p(z)] + \\sum_b H[q_b], \\qquad q(z) = \\prod_b q_b(z_b).

    Parameters
    ----------
    log_joint : callable or list of (blocks, callable)
        The log joint ``log p(x, z)`` (priors included), written with
        ``autograd.numpy`` (reparameterisation differentiates it).  A callable
        takes the draws ``z`` -- a dict block name -> array when ``init`` is a
        dict, the bare array when ``init`` is one distribution -- and returns a
        real scalar.  A list of terms ``(blocks, log_density)``, ``blocks`` a
        name or tuple of names, is the log joint as a sum; each ``log_density``
        gets the draws of its blocks only, and block ``b``'s gradient uses only
        the terms that name it (Rao-Blackwellisation across mean-field blocks).
    init : ExponentialFamily or dict of str -> ExponentialFamily
        The initial ``q`` of each block; any registered family.  Draws have
        shape ``batch + event`` of that object.  (To continue a fit, see :func:`resume`.)
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
        The most iterations (steps) to take, ``>= 1``.
    n_samples : int
        Draws per iteration, ``S >= 2`` (``>= 3`` for ``"optimal"``).
    seed : int or numpy.random.Generator, optional
    expected_log_joint : callable, optional
        ``expected_log_joint(q) -> float``, the exact ``E_q[log p(x, z)]`` for
        ``q`` shaped like ``init``; gives :attr:`BBVIResult.exact_elbo_trace`,
        and the stopping rule then uses the exact ELBO.
    vectorized : bool
        Whether ``log_joint`` (each term) takes all ``S`` draws at once (arrays with
        a leading sample axis) and returns shape ``(S,)``.  Much faster,
        above all with ``estimator="reparam"``, which then differentiates one
        call instead of ``S``.
    tol : float
        The stopping rule (:mod:`efvi.inference.bbvi._stopping`): every
        ``window`` iterations, stop when the mean ELBO of the last ``window``
        iterations differs from that of the window before by at most
        ``tol * max(1, |ELBO|)`` plus two standard errors of the difference
        (the Monte Carlo error; zero for the exact ELBO).  ``tol=0`` stops
        only on a change within the Monte Carlo error.
    window : int
        Iterations per window of the stopping rule, ``>= 1``.
    warn : bool
        Emit :class:`efvi.inference.ConvergenceWarning` when the fit did not converge.

    Returns
    -------
    BBVIResult
        With ``converged`` and ``message``.  It is not converged when
        ``n_iter`` ran out first, or when more than half the steps had to be
        halved to keep ``q`` valid (the learning rate is too large).

    Raises
    ------
    ValueError
        Naming the argument, what it must be and what was received: an unknown
        option, a family that cannot be reparameterised, a log joint that
        returns a complex number, a non-number (a string), a non-scalar, NaN
        or infinity (or reads a block its term does not declare), one that
        autograd cannot differentiate (with ``estimator="reparam"``), an
        ``expected_log_joint`` that is not a finite scalar.
    efvi.inference.DivergenceError
        When the negative Monte Carlo ELBO or the norm of the posterior's mean
        parameters grows by orders of magnitude within 100 iterations (the rule of
        :mod:`efvi.inference.divergence`, shared by every stochastic optimiser).

    Warns
    -----
    efvi.inference.ConvergenceWarning
        When the result is not converged (``warn=True``); ``message`` says why.
    """
    joint, posterior, options = _check(log_joint, init, estimator, control_variate, n_samples, vectorized)
    if step not in STEPS:
        raise ValueError(f"step must be one of {', '.join(map(repr, STEPS))}; got {step!r}")
    learning_rate = DEFAULT_LEARNING_RATE[step] if learning_rate is None else learning_rate
    schedule = _check_learning_rate(learning_rate)
    n_iter = check_integer(n_iter, "n_iter", minimum=1)
    _check_expected(expected_log_joint)
    options.update(step=step, learning_rate=None if callable(learning_rate) else float(learning_rate),
                   tol=_check_tol(tol), window=check_integer(window, "window", minimum=1),
                   vectorized=bool(vectorized), single=joint.single)
    state = RunState(posterior, _rng(seed), step, exact=expected_log_joint is not None)
    converged, message = run(joint, state, options, schedule, expected_log_joint, n_iter, _check_warn(warn))
    return BBVIResult(state, options, converged, message)


def resume(result, log_joint, n_iter, learning_rate=None, expected_log_joint=None, warn=True):
    """Continue a fit for up to ``n_iter`` more iterations, exactly as if it had never stopped.

    A fit of ``2n`` iterations equals, to the last bit, a fit of ``n`` that is
    saved (:meth:`BBVIResult.save`), loaded (:meth:`BBVIResult.load`) and
    resumed for ``n`` more with the same log joint and learning rate.

    Parameters
    ----------
    result : BBVIResult
        A fit, or one loaded from a file; it is not changed.
    log_joint : callable or list of (blocks, callable)
        The log joint of the fit (code is never saved), in the same form: a
        callable again, or terms again.
    n_iter : int
        The most further iterations, ``>= 1``.
    learning_rate : float or callable, optional
        Default: the fit's, when it was a number.  A schedule (a callable)
        cannot be saved: pass it again; it receives the iteration counted from
        the start of the first fit.
    expected_log_joint : callable, optional
        Needed exactly when the fit had one (its exact ELBO trace continues).
    warn : bool

    Returns
    -------
    BBVIResult
        A new result: the traces of ``result`` followed by the new iterations.
    """
    if not isinstance(result, BBVIResult):
        raise ValueError(f"result must be a BBVIResult (from bbvi.fit or BBVIResult.load); got "
                         f"{type(result).__name__}")
    options = dict(result.options)
    init = result.posterior[SINGLE_BLOCK] if options["single"] else result.posterior
    joint, posterior, checked = _check(log_joint, init, options["estimator"],
                                       None if options["estimator"] == "reparam" else options["control_variate"],
                                       options["n_samples"], options["vectorized"])
    if checked["rao_blackwellised"] != options["rao_blackwellised"]:
        raise ValueError(f"log_joint must be given as {'terms' if options['rao_blackwellised'] else 'a callable'}, "
                         f"as in the fit being resumed; got {'terms' if checked['rao_blackwellised'] else 'a callable'}")
    if learning_rate is None:
        if options["learning_rate"] is None:
            raise ValueError("learning_rate must be given: the fit being resumed used a schedule (a callable), "
                             "which a result does not keep; pass the same schedule again")
        learning_rate = options["learning_rate"]
    schedule = _check_learning_rate(learning_rate)
    options["learning_rate"] = None if callable(learning_rate) else float(learning_rate)
    n_iter = check_integer(n_iter, "n_iter", minimum=1)
    _check_expected(expected_log_joint)
    had_exact = result.exact_elbo_trace is not None
    if had_exact != (expected_log_joint is not None):
        raise ValueError(f"expected_log_joint must be {'given' if had_exact else 'None'} to resume this fit, which "
                         f"{'has' if had_exact else 'has no'} exact ELBO trace; got "
                         f"{'None' if expected_log_joint is None else 'a callable'}")
    state = copy.deepcopy(result.state)
    converged, message = run(joint, state, options, schedule, expected_log_joint, n_iter, _check_warn(warn))
    return BBVIResult(state, options, converged, message)


def gradient(log_joint, q, estimator="score", control_variate=None, n_samples=10, seed=None, vectorized=False):
    """Estimate the ELBO gradient at ``q`` once (what every iteration of :func:`fit` does).

    Parameters are those of :func:`fit` (``q`` plays the role of ``init``).

    Returns
    -------
    GradientEstimate
    """
    joint, posterior, options = _check(log_joint, q, estimator, control_variate, n_samples, vectorized)
    return estimate(joint, posterior, options, _rng(seed))


def _rng(seed):
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None:
        check_integer(seed, "seed", suffix=", a numpy.random.Generator or None")
    return np.random.default_rng(seed)
