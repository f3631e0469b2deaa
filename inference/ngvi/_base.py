"""What every optimiser of :mod:`efvi.inference.ngvi` shares: arguments, the model call, the commit.

The model is duck-typed (``inference`` never imports ``models``); it provides

- ``n_params``, ``init_params(rng) -> (P,)``, ``task``, ``validate(X, y)``;
- ``log_lik_and_grads(params, X, y, curvature=None) -> (log_lik, grad, curv)``
  with ``params`` of shape (P,) or (S, P), ``log_lik`` the sum over the batch;
- ``predictive(params_samples (S, P), X)``.

A step evaluates the model, builds the next state from the current one
without touching it, checks the result (finite, positive precision) and only
then commits, so a failing step leaves the optimiser as it was.
"""

import numbers

import numpy as np

from ...expfam import DiagonalGaussian
from ...expfam.checks import check_integer

from ..divergence import DivergenceRule
from . import _state_rules as rules
from ._kernels import PRECISION_BIT, perturb, standard_normal

_PROTOCOL = ("n_params", "init_params", "log_lik_and_grads", "predictive", "validate")


class NonFiniteGradientError(FloatingPointError):
    """The model returned a NaN or infinite log-likelihood, gradient or curvature at a step.

    Attributes
    ----------
    step : int
        The step (counting from 1) whose evaluation failed; the optimiser's
        state is that of the step before.
    """

    def __init__(self, message, step):
        super().__init__(message)
        self.step = step


def check_real(value, name, *, low=None, high=None, low_open=True, high_open=True, expected=None):
    """``value`` as a float after checking it is a finite real in the given interval."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and np.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        raise ValueError(f"{name} must be {expected}; got {value!r}")
    return float(value)


def check_betas(betas, names=("beta1", "beta2")):
    """Each beta a float in [0, 1)."""
    try:
        values = tuple(betas)
    except TypeError:
        raise ValueError(f"betas must be a pair of floats in [0, 1); got {betas!r}") from None
    if len(values) != len(names):
        raise ValueError(f"betas must be a pair of floats in [0, 1); got {betas!r}")
    return tuple(check_real(b, name, low=0.0, high=1.0, low_open=False, expected="a float in [0, 1)")
                 for b, name in zip(values, names))


def check_prior_vector(value, name, n_params, *, positive):
    """A prior parameter as a float or a read-only float ndarray (P,) after checking it.

    Parameters
    ----------
    value : float or array_like (P,)
    name : str
        The argument's name, for the error message.
    n_params : int
    positive : bool
        Whether every entry must be > 0 (a precision) or only finite (a mean).

    Raises
    ------
    ValueError
        Naming the argument, the expected shape and range and what was received.
    """
    expected = ("a positive finite float or an array of shape (P,) of them" if positive
                else "a finite float or an array of shape (P,) of them")
    if np.ndim(value) == 0:
        scalar = value.item() if isinstance(value, np.ndarray) else value
        return check_real(scalar, name, low=0.0 if positive else None, expected=expected)
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {expected}, P = {n_params}; got {type(value).__name__}") from None
    if array.shape != (n_params,):
        raise ValueError(f"{name} must be {expected}, P = {n_params} (the model's n_params); "
                         f"got an array of shape {array.shape}")
    bad = ~np.isfinite(array) | ((array <= 0) if positive else False)
    if np.any(bad):
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be {expected}; entry {first} is {float(array[first])!r}")
    array.setflags(write=False)
    return array


def check_model(model):
    missing = [name for name in _PROTOCOL if not hasattr(model, name)]
    if missing:
        raise TypeError(
            f"model must follow the ngvi model protocol ({', '.join(_PROTOCOL)}); "
            f"{type(model).__name__} lacks {', '.join(missing)}"
        )
    return model


class Optimizer:
    """Base of the ngvi optimisers: validation, the model call, step bookkeeping, predictions.

    Parameters
    ----------
    model : object following the ngvi model protocol
    n_data : int
        Training-set size N (a minibatch may not be larger).
    prior_precision : float or ndarray (P,)
        Precision of the Gaussian prior on the parameters: one number (isotropic)
        or one per parameter.
    lr : float
        Learning rate (> 0).
    ess : float, optional
        Effective sample size: the weight of the data term against the KL (the KL is
        scaled by ``1 / ess`` internally). Default ``n_data``; ``n_data / T`` tempers
        the posterior at temperature T.
    mc_samples : int
        Monte Carlo weight samples per step (vectorised in one model call).
    seed : int
        Seeds the initial parameters, the weight samples and (by a separate stream)
        the posterior samples of :meth:`sample` and :meth:`predict`.
    prior_mean : float or ndarray (P,)
        Mean of the Gaussian prior (default 0).  With a vector the mean starts at
        ``prior_mean`` (a previous task's posterior mean: training continues from
        it); with a number it starts at ``model.init_params`` (random, which breaks
        the symmetry of hidden units).

    Attributes
    ----------
    prior_mean, prior_precision : float or ndarray (P,)
        The prior ``N(prior_mean, diag(1 / prior_precision))`` as given (vectors are copies).

    Notes
    -----
    The prior enters every step through the KL term, whose gradient per example
    is ``delta * (m - prior_mean)`` with ``delta = prior_precision / ess``
    elementwise; with ``prior_mean`` and ``prior_precision`` from a previous
    posterior (:meth:`as_prior`) this is variational continual learning
    (Nguyen et al., 2018).
    """

    #: curvature keyword passed to the model (None: gradients only)
    curvature = None
    #: whether ``_propose`` checks its own proposal (a compiled update reports NaN, inf and bad precisions)
    _checks_proposal = False
    #: attribute -> rule that :meth:`check_state` applies (:mod:`._state_rules`); subclasses extend it
    state_rules = {"n_data": rules.count(1), "lr": rules.real(0.0), "ess": rules.real(0.0),
                   "mc_samples": rules.count(1), "seed": rules.count(0), "n_steps": rules.count(0)}

    def __init__(self, model, n_data, *, prior_precision, lr, ess, mc_samples, seed, prior_mean=0.0):
        self.model = check_model(model)
        self.n_data = check_integer(n_data, "n_data", minimum=1)
        self.n_params = check_integer(model.n_params, "model.n_params", minimum=1)
        self.prior_precision = check_prior_vector(prior_precision, "prior_precision", self.n_params, positive=True)
        self.prior_mean = check_prior_vector(prior_mean, "prior_mean", self.n_params, positive=False)
        self.lr = check_real(lr, "lr", low=0.0, expected="a positive finite float")
        self.ess = float(self.n_data) if ess is None else check_real(
            ess, "ess", low=0.0, expected="a positive finite float or None")
        self.mc_samples = check_integer(mc_samples, "mc_samples", minimum=1)
        self.seed = check_integer(seed, "seed", minimum=0)
        train_seed, sample_seed = np.random.SeedSequence(self.seed).spawn(2)
        self._rng = np.random.default_rng(train_seed)
        self._sample_rng = np.random.default_rng(sample_seed)
        self.n_steps = 0
        self.divergence = DivergenceRule(name=type(self).__name__)

    def check_state(self):
        """Check every attribute as the constructor and :meth:`step` keep them: for a state restored from a file.

        A loaded estimator sets the optimiser's attributes from its file and
        calls this: hyperparameters in their ranges, counters non-negative
        (and no larger than the steps allow), arrays finite and of the
        network's size, curvatures that give a positive posterior precision.

        Raises
        ------
        ValueError
            Naming the first attribute that is out of range, and its value.
        """
        if self.n_params != self.model.n_params:
            raise ValueError(f"n_params must be the network's number of parameters {self.model.n_params}; "
                             f"got {self.n_params!r}")
        check_prior_vector(self.prior_precision, "prior_precision", self.n_params, positive=True)
        check_prior_vector(self.prior_mean, "prior_mean", self.n_params, positive=False)
        for name, rule in self.state_rules.items():
            rule(getattr(self, name), name, self)
        self._check_state_invariants()

    def _check_state_invariants(self):
        """Subclasses check what involves several attributes (a positive posterior precision)."""

    @property
    def delta(self):
        """Prior precision per example, ``prior_precision / ess``: a float or an ndarray (P,)."""
        return self.prior_precision / self.ess

    def _prior_gradient(self, params):
        """Gradient of the per-example KL's prior term, ``delta * (params - prior_mean)``, shape (P,)."""
        return self.delta * (params - self.prior_mean)

    def as_prior(self):
        """The current posterior as the prior of the next optimiser (variational continual learning).

        Returns
        -------
        dict
            ``{"prior_mean": ndarray (P,), "prior_precision": ndarray (P,)}``, copies of
            the posterior's mean and precisions, to pass as keyword arguments:
            ``IVON(model, n_next, **opt.as_prior())``.  The next optimiser's mean
            starts at ``prior_mean``.

        Raises
        ------
        ValueError
            For an optimiser without a mean-field Gaussian posterior (the point
            estimates ``Adam`` and ``RMSprop``; ``VAN``, whose full covariance a
            per-parameter precision would not represent).
        """
        precision = getattr(self, "precision", None)
        if precision is None or np.ndim(precision) != 1:
            kind = "a full-covariance" if precision is not None else "no"
            raise ValueError(f"as_prior needs a mean-field Gaussian posterior (per-parameter mean and precision); "
                             f"{type(self).__name__} has {kind} posterior")
        return {"prior_mean": np.array(self.mean, dtype=float), "prior_precision": np.array(precision, dtype=float)}

    def _init_params(self):
        if np.ndim(self.prior_mean) == 1:
            return self.prior_mean.copy()
        params = np.array(self.model.init_params(self._rng), dtype=float)
        if params.shape != (self.n_params,) or not np.all(np.isfinite(params)):
            raise ValueError(f"model.init_params must return {self.n_params} finite floats; got shape {params.shape}")
        return params

    def step(self, X_batch, y_batch):
        """One optimisation step on a minibatch.

        Parameters
        ----------
        X_batch : ndarray (B, ...)
        y_batch : ndarray (B,) or (B, ...)

        Returns
        -------
        float
            Monte Carlo estimate of the minibatch's average negative log-likelihood
            under the current posterior (at the current parameters for point estimates).

        Raises
        ------
        ValueError
            For invalid data or a batch larger than ``n_data``.
        NonFiniteGradientError
            When the model's outputs are not finite; the state is left unchanged.
        efvi.inference.DivergenceError
            When the loss or the parameters' norm grew by orders of magnitude within
            the last steps (:class:`efvi.inference.divergence.DivergenceRule`, held in
            ``self.divergence``); the diverging step is not applied.
        """
        X_batch, y_batch = self.model.validate(X_batch, y_batch)
        batch_size = len(y_batch)
        if batch_size < 1:
            raise ValueError("the batch must hold at least one data point; got an empty batch")
        if batch_size > self.n_data:
            raise ValueError(f"n_data must be at least the batch size {batch_size}; got n_data={self.n_data}")
        step = self.n_steps + 1
        new_state, nll = self._propose(X_batch, y_batch, batch_size, step)
        if not self._checks_proposal:
            for name, value in new_state.items():
                if not np.all(np.isfinite(value)):
                    _raise_not_finite(name, step)
            self._check_precision(new_state, step)
        location = new_state.get("mean", new_state.get("params"))
        norm = None if location is None else float(np.linalg.norm(location))
        self.divergence(step, loss=nll, norm=norm)
        for name, value in new_state.items():
            setattr(self, name, value)
        self.n_steps = step
        return nll

    def _check_precision(self, state, step):
        """Subclasses with a posterior refuse a proposal without a positive precision."""

    @staticmethod
    def _raise_for_status(status, names, step):
        """Refuse a proposal as :meth:`step` would, from a compiled update's status bits.

        Bit ``k`` set: the entry ``names[k]`` is not finite; bit ``PRECISION_BIT``: a
        precision is not positive.
        """
        for bit, name in enumerate(names):
            if status & (1 << bit):
                _raise_not_finite(name, step)
        if status & PRECISION_BIT:
            _raise_not_positive(step)

    def _evaluate(self, params, X, y, batch_size, step, curvature=None):
        """Model outputs divided by -B: average NLL, its gradient and curvature; finite or raise."""
        log_lik, grad, curv = self.model.log_lik_and_grads(params, X, y, curvature=curvature)
        outputs = {"log-likelihood": log_lik, "gradient": grad}
        if curvature is not None:
            outputs[f"curvature ({curvature})"] = curv
        for what, value in outputs.items():
            if value is None or not np.all(np.isfinite(value)):
                raise NonFiniteGradientError(
                    f"step {step}: the model returned a non-finite {what}; the state was left unchanged", step)
        scale = -1.0 / batch_size
        nll = scale * np.asarray(log_lik, dtype=float)
        grad = scale * np.asarray(grad, dtype=float)
        if curvature is None:
            return nll, grad, None
        curv = np.asarray(curv, dtype=float)
        # squared gradients and the Gauss-Newton matrix already describe the negative log-lik
        return nll, grad, (scale if curvature == "hessian" else 1.0 / batch_size) * curv

    def _n_fresh(self):
        """Rows of fresh draws among the ``mc_samples``: half of them with antithetic pairs."""
        return self.mc_samples // 2 if getattr(self, "antithetic", False) else self.mc_samples

    def _standard_normal(self):
        """(mc_samples, P) standard-normal draws; antithetic pairs ``(eps, -eps)`` if asked.

        The draws are those of ``self._rng.standard_normal`` (the compiled kernel runs
        numpy's algorithm on the generator's own bit stream).
        """
        noise = np.empty((self.mc_samples, self.n_params))
        standard_normal(self._rng, noise, self._n_fresh())
        return noise

    def _set_antithetic(self, antithetic):
        self.antithetic = bool(antithetic)
        if self.antithetic and self.mc_samples % 2:
            raise ValueError(f"mc_samples must be even with antithetic=True; got {self.mc_samples}")

    def sample(self, n, seed=None):
        """``n`` posterior samples, shape (n, P).

        Parameters
        ----------
        n : int
        seed : int, optional
            Default: the optimiser's own sampling stream (which training never uses).
        """
        n = check_integer(n, "n", minimum=1)
        rng = self._sample_rng if seed is None else np.random.default_rng(check_integer(seed, "seed"))
        return self._sample(rng, n)

    def predict(self, X, n_samples=100, seed=None):
        """Posterior predictive: the model's ``predictive`` averaged over ``n_samples`` weight samples.

        Returns
        -------
        ndarray (B, K) of class probabilities, or (mean (B,), var (B,)) for regression.
        """
        return self.model.predictive(self.sample(n_samples, seed=seed), X)


class DiagonalOptimizer(Optimizer):
    """A mean-field Gaussian posterior ``N(mean, diag(1 / (ess (hess + delta))))``.

    Attributes
    ----------
    mean : ndarray (P,)
    hess : ndarray (P,)
        Running per-example curvature ``h``; the precision is ``ess * h + prior_precision``.
    n_corrected_ : int
        Coordinates so far whose precision update took the positivity-preserving rule.
    """

    state_rules = {**Optimizer.state_rules, "mean": rules.array(), "hess": rules.array(), "momentum": rules.array(),
                   "n_corrected_": rules.count(per_step=lambda optimizer: optimizer.n_params)}

    def __init__(self, model, n_data, *, prior_precision, lr, ess, mc_samples, seed, hess_init, prior_mean=0.0):
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess,
                         mc_samples=mc_samples, seed=seed, prior_mean=prior_mean)
        hess_init = check_real(hess_init, "hess_init", low=0.0, low_open=False,
                               expected="a non-negative finite float")
        self.mean = self._init_params()
        self.hess = np.full(self.n_params, hess_init)
        self.momentum = np.zeros(self.n_params)
        self.n_corrected_ = 0

    @property
    def precision(self):
        """Posterior precisions, ``ess * hess + prior_precision``, shape (P,)."""
        return self.ess * self.hess + self.prior_precision

    @property
    def std(self):
        return 1.0 / np.sqrt(self.precision)

    @property
    def posterior(self):
        """The mean-field Gaussian posterior, an :class:`efvi.expfam.DiagonalGaussian`."""
        return DiagonalGaussian.from_mean_var(self.mean, 1.0 / self.precision)

    def _check_state_invariants(self):
        precision = self.ess * self.hess + self.prior_precision
        if not np.all(precision > 0):
            i = int(np.flatnonzero(~(precision > 0))[0])
            raise ValueError(f"hess must give positive posterior precisions ess * hess + prior_precision; entry {i} "
                             f"(hess {float(self.hess[i])!r}) gives {float(precision[i])!r}")

    def _check_precision(self, state, step):
        hess = state.get("hess", self.hess)
        if not np.all(self.ess * hess + self.prior_precision > 0):
            _raise_not_positive(step)

    def _diagonal_curvature(self, params, X, y, batch_size, step, curvature):
        """Average NLL (S,), its gradients (S, P) and a diagonal curvature (S, P) at each sample."""
        if curvature != "hessian":
            return self._evaluate(params, X, y, batch_size, step, curvature)
        outputs = [self._evaluate(w, X, y, batch_size, step, "hessian") for w in params]
        return (np.array([o[0] for o in outputs]), np.array([o[1] for o in outputs]),
                np.array([np.diag(o[2]) for o in outputs]))

    def _draw(self):
        """Weight samples of the posterior, in one compiled pass.

        Returns
        -------
        noise, params : ndarray (mc_samples, P)
            The standard normals ``eps`` (antithetic pairs if asked) and ``mean + std * eps``.
        std : ndarray (P,)
            The posterior standard deviations.
        """
        noise = np.empty((self.mc_samples, self.n_params))
        params, std = np.empty_like(noise), np.empty(self.n_params)
        perturb(self._rng, self.mean, self.hess, self.ess, as_vector(self.prior_precision), self._n_fresh(),
                noise, params, std)
        return noise, params, std

    def _sample(self, rng, n):
        return self.mean + rng.standard_normal((n, self.n_params)) * self.std


def as_vector(value):
    """A prior parameter (float or ndarray (P,)) as a fresh contiguous float64 array of length 1 or P."""
    return np.array(value, dtype=np.float64, ndmin=1)


def _raise_not_finite(name, step):
    raise NonFiniteGradientError(f"step {step}: the update of {name!r} is not finite; the state was left unchanged",
                                 step)


def _raise_not_positive(step):
    raise FloatingPointError(f"step {step}: the proposed precision is not positive; state left unchanged")
