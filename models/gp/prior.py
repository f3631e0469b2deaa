"""The Gaussian-process prior as a latent block: ``f = (f(x_1), ..., f(x_N)) ~ N(mu_0, K)``.

Factors on a GP block (:class:`efvi.models.Observe`) send per-point 1-D sites
``(gamma_i, pi_i)``; the block's conjugate computation is GP regression with
per-point noise (:func:`efvi.models.gp.solver.site_posterior`).  Its KL term is
``KL(q || p) = sum_i E_q[log t_i(f_i)] - log Z``, so the ELBO is the site
formula ``log Z + sum_i (E_q[log p(y_i|f_i)] - E_q[log t_i(f_i)])``; the
solver evaluates the same number as
``(m^T K^{-1} m - sum_i pi_i v_i + log|I + S K S|) / 2``, which has no terms
that grow with the site precisions (accurate at small noise).

Hyperparameters (``learn_hyperparameters=True``) are learned by the engine's
L-BFGS on the ELBO with the sites re-converged at each trial value
(:mod:`efvi.inference._hyperparameters`).  At converged sites the ELBO's gradient
is
that of ``log Z(theta)`` with the sites held fixed,
``(1/2) tr((alpha alpha^T - W) dK/dtheta)``, which :meth:`GP.log_normaliser`
computes with one reverse pass of autograd through the kernel matrix.
"""

import numpy as np
from autograd import make_vjp

from ...expfam import Gaussian
from ...expfam.checks import as_float, check_integer
from ...inference import Block
from ...inference.result import register_rebuilder

from .._hyper import KernelHyperparameters
from .._joint_draws import JointDraws, stacked_gaussian_draws
from ..sites import site_divergence

from . import kernels
from .kernels import Kernel
from .kernels._validation import as_inputs
from .solver import site_posterior


class GPPosterior(JointDraws):
    """Posterior of a GP block at its inputs.

    Attributes
    ----------
    mean, var : ndarray, shape (N,)
        Marginal means and variances of ``f(x_i)``.
    log_normaliser : float
        ``log Z`` of the prior times the sites (on ``f``, prior mean included).
    """

    def __init__(self, prior, solved, natural_mean, precision):
        self._prior, self._solved = prior, solved
        self.mean = solved.mean + prior.mean_value
        self.var = solved.var
        shift = prior.mean_value
        # log Z of the sites on f = mu_0 + g: the solver's (for g) plus the shift's constant
        self.log_normaliser = solved.log_normaliser + float(
            np.sum(natural_mean * shift - 0.5 * precision * shift ** 2))
        self.natural_mean, self.precision = natural_mean, precision

    @property
    def batch_shape(self):
        return self.mean.shape

    @property
    def n_features(self):
        """int: number of input columns ``D`` that :meth:`predict` expects."""
        return self._prior.X.shape[1]

    def predict(self, X_new, full_cov=False):
        """Predictive distribution of ``f`` at new inputs.

        Parameters
        ----------
        X_new : array_like, shape (M, D) or (M,)
        full_cov : bool
            Return the full (M, M) predictive covariance instead of the variances.

        Returns
        -------
        mean : ndarray, shape (M,)
        var : ndarray, shape (M,)
            Predictive variances (clipped at 0 against rounding); with
            ``full_cov=True`` the covariance, shape (M, M), instead.
        """
        kernel, X = self._prior.kernel, self._prior.X
        X_new = as_inputs(X_new, "X_new", X.shape[1])
        cross = kernel(X, X_new)
        mean = cross.T @ self._solved.alpha + self._prior.mean_value
        if full_cov:
            return mean, kernel(X_new) - self._solved.predictive_cov_reduction(cross)
        var = kernel.diag(X_new) - self._solved.predictive_var_reduction(cross)
        return mean, np.maximum(var, 0.0)

    def _draws(self, rng, n, inputs):
        """Joint draws from the covariance over the block's inputs and ``inputs`` (:class:`JointDraws`;
        ``O(N^2)`` memory, ``O(N^3)`` time)."""
        return stacked_gaussian_draws(self, self._prior.X, rng, n, inputs)

    def predictive_state(self):
        """What a fit file keeps so that a loaded fit predicts: ``("gp", spec, arrays)``, or None.

        The inputs, the kernel (its kind and options in ``spec``, its
        hyperparameters as arrays), the prior mean and the summed sites; the
        posterior is rebuilt from them exactly (:func:`_rebuild_gp`).  None for
        a kernel outside :mod:`efvi.models.gp.kernels` (only marginals are saved).
        """
        arrays = {"X": self._prior.X, "mean": np.asarray(self._prior.mean_value),
                  "natural_mean": self.natural_mean, "precision": self.precision}
        spec = kernel_layout(self._prior.kernel, "kernel/", arrays)
        return None if spec is None else ("gp", {"kernel": spec, "repr": repr(self._prior.kernel)}, arrays)

    def __repr__(self):
        return f"GPPosterior(n={self.mean.shape[0]})"


class GP(KernelHyperparameters, Block):
    """Gaussian-process prior on the function values at inputs ``X``.

    Parameters
    ----------
    kernel : efvi.models.gp.kernels.Kernel
    X : array_like, shape (N, D) or (N,)
    mean : float
        Constant prior mean.
    learn_hyperparameters : bool
        Learn the kernel's log hyperparameters by maximising the ELBO.
    hyper_max_iter : int
        Iterations of the outer L-BFGS over the log hyperparameters (each re-converges the sites).
    """

    family = Gaussian

    def __init__(self, kernel, X, mean=0.0, learn_hyperparameters=False, hyper_max_iter=100):
        if not isinstance(kernel, Kernel):
            raise ValueError(f"kernel must be a efvi.models.gp.kernels.Kernel; got {type(kernel).__name__}")
        self.X = as_inputs(X, "X")
        if self.X.shape[0] == 0:
            raise ValueError(f"X must hold at least one input point; got shape {self.X.shape}")
        mean = as_float(mean, "mean")
        if mean.ndim != 0:
            raise ValueError(f"mean must be a scalar (a constant prior mean); got an array of shape {mean.shape}")
        self.mean_value = float(mean)
        self.learns_hyperparameters = bool(learn_hyperparameters)
        self.hyper_max_iter = check_integer(hyper_max_iter, "hyper_max_iter", minimum=1)
        self._set_kernel(kernel)
        self.n_points = self.X.shape[0]

    def __repr__(self):
        """``GP(kernel=RBF(lengthscale=1.0, variance=1.0), X=<40 inputs of dimension 1>, mean=0.0)``."""
        options = ", learn_hyperparameters=True" if self.learns_hyperparameters else ""
        return (f"GP(kernel={self.kernel!r}, X=<{self.X.shape[0]} inputs of dimension {self.X.shape[1]}>, "
                f"mean={self.mean_value!r}{options})")

    def blas_flops(self):
        """``N^3``: the Cholesky factorisation and solves of the ``N x N`` posterior."""
        return float(self.n_points) ** 3

    def _set_kernel(self, kernel):
        self.kernel = kernel
        self._K = kernel(self.X)

    def zero_message(self):
        return (np.zeros(self.n_points), np.zeros(self.n_points))

    def posterior(self, message):
        natural_mean, precision = message
        # sites on f = mu_0 + g  ->  sites on g with natural mean gamma - pi mu_0
        shifted = natural_mean - precision * self.mean_value
        solved = site_posterior(self._K, shifted, precision)
        return GPPosterior(self, solved, natural_mean, precision)

    def kl(self, q):
        # the solver's closed form: equal to the site formula's sum_i E_q[log t_i] - log Z, without
        # its cancellation of pi-sized terms at small noise (the prior mean shifts both q and p)
        return q._solved.kl

    def divergence(self, q, other):
        return site_divergence(q, other)

    # ------------------------------------------------------------------ hyperparameters
    def log_normaliser(self, log_params, message):
        """``log Z(theta)`` of the prior times the sites, and its gradient in the log hyperparameters.

        Parameters
        ----------
        log_params : array_like, shape (n_params,)
            Log hyperparameters, ordered as ``kernel.param_names``.
        message : tuple of two ndarrays, shape (N,)
            The summed sites' natural means and precisions.

        Returns
        -------
        value : float
            ``log Z(theta)`` up to a term of the prior mean that does not depend on ``theta``.
        gradient : ndarray, shape (n_params,)
            ``(1/2) tr((alpha alpha^T - W) dK/dtheta)``.
        """
        self.kernel.with_log_params(log_params)  # validates shape and range, names the argument
        log_params = np.asarray(log_params, dtype=float)
        natural_mean, precision = message
        shifted = natural_mean - precision * self.mean_value
        # one forward pass builds K(theta); its reverse pass contracts dK/dtheta with the weights
        matrix_vjp, K = make_vjp(self.kernel.matrix_fn(self.X))(log_params)
        solved = site_posterior(np.asarray(K, dtype=float), shifted, precision)
        weights = np.outer(solved.alpha, solved.alpha)
        weights -= solved.w_matrix()
        weights *= 0.5
        return solved.log_normaliser, matrix_vjp(weights)


# ---------------------------------------------------------------------- saved form
_LEAVES = {cls.__name__: cls for cls in (kernels.RBF, kernels.Matern12, kernels.Matern32, kernels.Matern52,
                                         kernels.Periodic, kernels.Linear, kernels.Constant, kernels.White)}
_COMBINATIONS = {"Sum": kernels.Sum, "Product": kernels.Product}


def kernel_layout(kernel, prefix, arrays):
    """The JSON form of ``kernel`` (kinds and options), adding its hyperparameters to ``arrays``.

    Returns None for a kernel that is not one of efvi's (it cannot be rebuilt from a file).
    """
    kind = type(kernel).__name__
    if _COMBINATIONS.get(kind) is type(kernel):
        parts = [kernel_layout(part, f"{prefix}{i}/", arrays) for i, part in enumerate(kernel.parts)]
        return None if None in parts else {"kind": kind, "parts": parts}
    if _LEAVES.get(kind) is not type(kernel):
        return None
    for name, value in kernel._params.items():
        arrays[f"{prefix}{name}"] = np.asarray(value, dtype=float)
    return {"kind": kind, "params": list(kernel._params), "options": dict(kernel._options)}


def kernel_from_layout(spec, array, prefix):
    """The kernel of :func:`kernel_layout`'s ``spec``; ``array(key)`` reads a hyperparameter.

    Raises ValueError for anything that does not describe one of efvi's kernels exactly.
    """
    if not isinstance(spec, dict) or spec.get("kind") not in {**_LEAVES, **_COMBINATIONS}:
        raise ValueError(f"must describe a kernel of efvi.models.gp.kernels; got {spec!r}"[:300])
    kind = spec["kind"]
    if kind in _COMBINATIONS:
        parts = spec.get("parts")
        if set(spec) != {"kind", "parts"} or not isinstance(parts, list) or len(parts) < 2:
            raise ValueError(f"a {kind} must be {{'kind', 'parts'}} with at least two parts; got {spec!r}"[:300])
        return _COMBINATIONS[kind](*(kernel_from_layout(p, array, f"{prefix}{i}/") for i, p in enumerate(parts)))
    names, options = spec.get("params"), spec.get("options")
    if set(spec) != {"kind", "params", "options"} or not isinstance(names, list) \
            or not all(isinstance(n, str) for n in names) or not isinstance(options, dict):
        raise ValueError(f"a {kind} must be {{'kind', 'params' (names), 'options'}}; got {spec!r}"[:300])
    values = {}
    for name in names:
        value = array(f"{prefix}{name}")
        values[name] = float(value) if value.ndim == 0 else value
    kernel = _LEAVES[kind](**values, **options)
    if list(kernel._params) != names or kernel._options != options:
        raise ValueError(f"does not describe a {kind} exactly (parameters {list(kernel._params)}, options "
                         f"{kernel._options}); got {spec!r}"[:300])
    return kernel


def saved_kernel(spec, array):
    """The kernel of a saved predictor's ``spec`` (``{"kernel": layout, "repr": its repr}``), checked against its repr."""
    if not isinstance(spec, dict) or set(spec) != {"kernel", "repr"}:
        raise ValueError(f"must be {{'kernel', 'repr'}}; got {spec!r}"[:300])
    kernel = kernel_from_layout(spec["kernel"], array, "kernel/")
    if repr(kernel) != spec["repr"]:
        raise ValueError(f"rebuilds the kernel {kernel!r}, not the saved {spec['repr']!r}"[:300])
    return kernel


def _rebuild_gp(spec, array, name):
    kernel = saved_kernel(spec, array)
    block = GP(kernel, array("X"), mean=float(array("mean")))
    block.name = name
    return block.posterior((array("natural_mean"), array("precision")))


register_rebuilder("gp", _rebuild_gp)
