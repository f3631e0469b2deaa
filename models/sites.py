"""The Gaussian site path shared by GLMs, Gaussian processes and state-space models.

Data point ``i`` sees the Gaussian latent only through a scalar
``a_i = H_i z`` with marginal ``N(a_i; m_i, v_i)``.  With ``E_i = E[log p(y_i|a_i)]``
and its derivatives ``g_m = dE_i/dm_i``, ``g_v = dE_i/dv_i`` (a numba
Gauss-Hermite kernel, or a closed form), the natural-gradient target of the
site is a 1-D Gaussian in ``a``-space (Khan and Nielsen, 2018, eqs. 15-17):

.. math:: \\pi_i = -2 g_v, \\qquad \\gamma_i = g_m + \\pi_i m_i,

so the site is ``t_i(a) = exp(gamma_i a - pi_i a^2 / 2)`` -- pseudo-observation
``gamma_i / pi_i`` with noise variance ``1 / pi_i``.  One factor class serves
every structure; how point ``i`` sees the latent is its *projection*
(:mod:`efvi.models.projection`), which supplies the marginals ``(m_i, v_i)`` of
the block's posterior and the message that sums the sites into the block's own
parameterisation (a Bayesian linear regression for a GLM, per-point noise for
a GP, a Kalman pass for a state-space model).

A likelihood may hold parameters as latent blocks and declares them
(``Likelihood.latent_parameters``): a Gaussian likelihood whose precision is
a Gamma block (``likelihoods.Gaussian(precision="tau")``) is conjugate in both
blocks, the precision's site of point ``i`` being ``(1/2, -E[(y_i - a_i)^2] / 2)``
and the latent's site using ``E[tau]`` (``Likelihood.site_expectations``).
Missing observations (NaN in ``y``) keep empty sites.

Weights ``w_i >= 0`` (``weights=``) multiply the log-likelihood of each point,
``w_i log p(y_i | a_i)``: the expectations and their derivatives scale by
``w_i``, and so do the site targets ``(gamma_i, pi_i)`` (and a latent
parameter block's sites).  An integer weight is the same as repeating the
point, a zero weight the same as dropping it.
"""

import copy

import numba
import numpy as np

from ..expfam.numba_cache import readonly
from ..inference import Factor, FactorEval, GaussianSiteView

from ._numba import NUMBA_OPTIONS
from ._parallel import overlap_points
from .likelihoods import Likelihood
from .projection import PointValues

COARSE_POINTS = 20
"""Gauss-Hermite points used far from the optimum (see :attr:`efvi.inference.Factor.has_coarse_rule`)."""


class GaussianSiteFactor(Factor):
    """A likelihood on scalar projections ``a_i = H_i z`` of a Gaussian block: the one site factor.

    Every structure uses this class; what differs is the ``projection``
    (:mod:`efvi.models.projection`): the values of a GP or state-space block
    (:class:`efvi.models.Observe`), or the rows of a design matrix
    (:class:`efvi.models.glm.GLM`).  Parameters of the likelihood held as
    latent blocks (``Gaussian(precision="tau")``) are declared by the
    likelihood (``latent_parameters``) and get their conjugate sites from it.

    Parameters
    ----------
    likelihood : efvi.models.likelihoods.Likelihood
    y : array_like, shape (N,)
        Observations; NaN marks a missing value (its site stays empty).
    on : str
        Name of the Gaussian (or structured Gaussian) block.
    projection : object, optional
        How point ``i`` sees the block (default: :class:`efvi.models.projection.PointValues`,
        the block's ``i``-th value).
    weights : array_like, shape (N,), optional
        Non-negative finite weight of each point's log-likelihood (default: all 1).
    """

    def __init__(self, likelihood, y, on, projection=None, weights=None):
        if not isinstance(likelihood, Likelihood):
            raise ValueError(
                f"likelihood must be a efvi.models.likelihoods.Likelihood; got {type(likelihood).__name__}"
            )
        self.likelihood = likelihood
        self.y = likelihood.validate_y(y, "y")
        self.n_data = self.y.shape[0]
        self.observed = ~np.isnan(self.y)
        self.all_observed = bool(self.observed.all())
        self.weights = None if weights is None else check_weights(weights, self.n_data)
        self.projection = PointValues() if projection is None else projection
        self.roles = {"on": on}
        for role, (block, _) in likelihood.latent_parameters.items():
            self.roles[role] = block

    def bind(self, blocks):
        for role, (name, family) in self.likelihood.latent_parameters.items():
            block = self._require_family(blocks, role, family)
            if block.prior.batch_shape != ():
                raise ValueError(f"{self.describe()}: the {role} block must be a single {family.__name__}; "
                                 f"got batch shape {block.prior.batch_shape}")
        if self.projection.families is not None:
            self._require_family(blocks, "on", *self.projection.families)
        self._view = self.projection.bind(self, blocks[self.roles["on"]])
        self._last_marginals = (None, None, None)
        self._row_likelihoods = {}

    def replace_block(self, block):
        """The projection's replacement of the block it projects (the GLM's dual route), or None."""
        if block.name != self.roles["on"]:
            return None
        return self.projection.replace_block(block)

    @property
    def n_observed(self):
        """Data points whose ``y`` is not NaN (missing)."""
        return int(self.observed.sum())

    @property
    def conjugate(self):
        """A Gaussian likelihood (known noise or a Gamma precision block) is conjugate, unless the way its
        points see the block makes the targets depend on the block (a mean-field GLM's sites)."""
        return bool(self.likelihood.conjugate) and not self.parallel_coordinates

    @property
    def parallel_coordinates(self):
        """Whether the block's coordinates are updated in parallel (a mean-field GLM's sites)."""
        return bool(getattr(getattr(self, "_view", None), "targets_depend_on_block", False))

    @property
    def has_coarse_rule(self):
        """Quadrature likelihoods use a fixed 20-point rule while ``coarse`` (their own rule otherwise)."""
        return not self.likelihood.conjugate

    def init_sites(self, blocks):
        sites = {self.roles["on"]: self._view.zero_sites()}
        for name, _ in self.likelihood.latent_parameters.values():
            sites[name] = tuple(np.zeros((self.n_data,) + np.shape(part)) for part in blocks[name].prior.natural)
        return sites

    def site_weights(self, block_name):
        """``1 / w_i`` (0 where ``w_i = 0``) for every part of the sites on ``on``; None without weights."""
        if self.weights is None or block_name != self.roles["on"]:
            return None
        inverse = np.divide(1.0, self.weights, out=np.zeros(self.n_data), where=self.weights > 0)
        return tuple(np.broadcast_to(inverse.reshape((-1,) + (1,) * (part.ndim - 1)), part.shape)
                     for part in self._view.zero_sites())

    def informed_sites(self, blocks):
        """The CVI targets at the likelihood's data-based guess of ``a`` with zero variance, or None.

        See :meth:`efvi.models.likelihoods.Likelihood.initial_latent`.  None when
        the likelihood has latent parameter blocks (its targets need their moments).
        """
        if self.likelihood.latent_parameters:
            return None
        guess = self.likelihood.initial_latent(self.y)
        if guess is None:
            return None
        guess = np.where(np.isnan(guess), 0.0, guess)   # missing points get zero sites anyway
        natural_mean, precision, g_m, _ = self._point_targets(guess)
        sites = self._view.informed(blocks[self.roles["on"]], natural_mean, precision, g_m, self._point_targets)
        return None if sites is None else {self.roles["on"]: sites}

    def _point_targets(self, a):
        """Zero-variance CVI targets at the point values ``a`` (N,): ``(gamma, pi, g_m, sum_i log p(y_i | a_i))``."""
        value, g_m, g_v = self.likelihood._variational_expectations(a, np.zeros(self.n_data), self.y)
        if self.weights is not None:
            value, g_m, g_v = value * self.weights, g_m * self.weights, g_v * self.weights
        natural_mean, precision = _site_targets(*map(readonly, (a, g_m, g_v)))
        return natural_mean, precision, g_m, float(np.sum(value))

    def first_step_targets(self, blocks):
        """The informed sites for an exponential-link likelihood (its CVI targets at a diffuse prior overflow)."""
        if not self.likelihood.exponential_link:
            return None
        return self.informed_sites(blocks)

    _last_marginals = (None, None, None)

    def evaluate(self, q, index=None, rng=None, coarse=False):
        q_block = q[self.roles["on"]]
        # a sweep of variational message passing evaluates the factor again after updating another
        # block (a Gamma precision): the latent's marginals are unchanged then, so they are kept
        last_q, last_index, marginals = self._last_marginals
        n_points = COARSE_POINTS if coarse else None
        overlapped = (last_q is not q_block and index is None and not self.likelihood.latent_parameters
                      and hasattr(self._view, "marginal_rows"))
        if overlapped:
            # the marginals of later rows (BLAS) overlap the quadrature of earlier ones (a pool thread)
            marginals, (expected, g_m, g_v) = overlap_points(
                self._view.marginal_rows(q_block),
                lambda rows, m, v: _rows_expectations(self._rows_likelihood(rows), m, v, n_points),
                self.n_data)
            self._last_marginals, targets = (q_block, index, marginals), {}
        elif last_q is not q_block or last_index is not index:
            marginals = self._view.marginals(q_block, index)
            self._last_marginals = (q_block, index, marginals)
        mean, var = marginals
        if not overlapped:
            y = self.y if index is None else self.y[index]
            lik = self.likelihood if index is None else self.likelihood.subset(index)
            expected, g_m, g_v, targets = lik.site_expectations(q, mean, var, y, n_points)
        if self.weights is not None:
            expected, g_m, g_v, targets = _weighted(self.weights if index is None else self.weights[index],
                                                    expected, g_m, g_v, targets)
        expected = float(np.sum(expected))      # summed first: one (N,) array fewer while the targets are made
        natural_mean, precision = _site_targets(*map(readonly, (mean, g_m, g_v)))
        targets[self.roles["on"]] = self._view.targets(q_block, natural_mean, precision, g_m, index)
        return FactorEval(expected, targets)

    def _rows_likelihood(self, rows):
        """The likelihood and observations of the points ``rows`` (a slice), kept for later evaluations.

        A likelihood caches what depends on ``y`` alone (the closed forms' ``log y!``),
        keyed on the ``y`` array it was given: each slice of the points gets its own
        copy of the likelihood and the same view of ``y`` every time, so the cache holds.
        """
        kept = self.__dict__.setdefault("_row_likelihoods", {})
        key = (rows.start, rows.stop)
        if key not in kept:
            likelihood = self.likelihood.subset(rows)
            kept[key] = (copy.copy(likelihood) if likelihood is self.likelihood else likelihood, self.y[rows])
        return kept[key]

    def message(self, block_name, sites, index=None):
        if block_name != self.roles["on"]:        # a latent parameter block: the sum of its conjugate sites
            return tuple(np.sum(part, axis=0) for part in sites)
        return self._view.message(sites, index)

    def site_view(self, sites):
        return GaussianSiteView(sites, self.roles["on"])


def _rows_expectations(likelihood_and_y, mean, var, n_points):
    likelihood, y = likelihood_and_y
    return likelihood._variational_expectations(mean, var, y, n_points)


def check_weights(weights, n_data, name="weights"):
    """Per-point weights as a float64 vector of length ``n_data``, each finite and ``>= 0``.

    Raises
    ------
    ValueError
        Naming ``name``, what was expected and what was received.
    """
    values = np.asarray(weights)
    if values.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be real numbers, one per data point; got dtype {values.dtype}")
    if values.shape != (n_data,):
        raise ValueError(f"{name} must have shape ({n_data},), one per data point; got shape {values.shape}")
    values = values.astype(np.float64)
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        index = int(np.argmax(bad))
        raise ValueError(f"{name} must be finite and >= 0; got {values[index].item()!r} at index {index}")
    return np.ascontiguousarray(values)


def _weighted(weights, expected, d_mean, d_var, targets):
    """The expectations, derivatives and latent parameter blocks' sites of ``w_i log p(y_i | a_i)``."""
    scaled = {name: tuple(part * weights.reshape((-1,) + (1,) * (np.ndim(part) - 1)) for part in parts)
              for name, parts in targets.items()}
    return expected * weights, d_mean * weights, d_var * weights, scaled


def site_kl(natural_mean, precision, mean, var, log_normaliser):
    r"""``KL(q || p)`` of a structured Gaussian posterior ``q = p prod_i t_i / Z``.

    .. math:: KL = \sum_i E_q[\log t_i(a_i)] - \log Z,
              \quad E_q[\log t_i] = \gamma_i m_i - \pi_i (v_i + m_i^2) / 2,

    so that the ELBO is ``log Z + sum_i (E_q[log p(y_i | a_i)] - E_q[log t_i(a_i)])``.

    Parameters
    ----------
    natural_mean, precision, mean, var : ndarray, shape (N,)
    log_normaliser : float

    Returns
    -------
    float
    """
    return float(_expected_log_sites(natural_mean, precision, mean, var) - log_normaliser)


def site_divergence(q, other):
    r"""The Jeffreys divergence ``KL(q || other) + KL(other || q)`` of two posteriors of one structured prior.

    Both are the prior times per-point sites, so their natural parameters
    differ by ``(gamma'_i - gamma_i, -(pi'_i - pi_i) / 2)`` on the statistics
    ``(a_i, a_i^2)``, and

    .. math:: J = \sum_i \Delta\gamma_i \Delta m_i
              - \tfrac12 \Delta\pi_i \Delta(v_i + m_i^2).

    Parameters
    ----------
    q, other : posteriors with ``natural_mean``, ``precision``, ``mean`` and ``var``, each shape (N,)

    Returns
    -------
    float
    """
    second = (other.var + other.mean ** 2) - (q.var + q.mean ** 2)
    return float(np.sum((other.natural_mean - q.natural_mean) * (other.mean - q.mean)
                        - 0.5 * (other.precision - q.precision) * second))


@numba.jit(**NUMBA_OPTIONS)
def _site_targets(mean, d_mean, d_var):
    """Site targets ``gamma_i = g_m + pi_i m_i``, ``pi_i = -2 g_v`` (module notes) in one pass; each (N,)."""
    n = mean.shape[0]
    natural_mean, precision = np.empty(n), np.empty(n)
    for i in range(n):
        p = -2.0 * d_var[i]
        precision[i] = p
        natural_mean[i] = d_mean[i] + p * mean[i]
    return natural_mean, precision


@numba.jit(**NUMBA_OPTIONS)
def _expected_log_sites(natural_mean, precision, mean, var):
    """``sum_i gamma_i m_i - pi_i (v_i + m_i^2) / 2`` in one pass (no temporaries of length N)."""
    total = 0.0
    for i in range(mean.shape[0]):
        m = mean[i]
        total += natural_mean[i] * m - 0.5 * precision[i] * (var[i] + m * m)
    return total


__all__ = ["GaussianSiteFactor", "check_weights", "site_divergence", "site_kl"]
