"""The Gaussian site path shared by GLMs, Gaussian processes and state-space models.

Data point ``i`` sees the Gaussian latent only through a scalar
``a_i = H_i z`` with marginal ``N(a_i; m_i, v_i)``.  With ``E_i = E[log p(y_i|a_i)]``
and its derivatives ``g_m = dE_i/dm_i``, ``g_v = dE_i/dv_i`` (a numba
Gauss-Hermite kernel, or a closed form), the natural-gradient target of the
site is a 1-D Gaussian in ``a``-space (Khan and Nielsen, 2018, eqs. 15-17):

.. math:: \\pi_i = -2 g_v, \\qquad \\gamma_i = g_m + \\pi_i m_i,

so the site is ``t_i(a) = exp(gamma_i a - pi_i a^2 / 2)`` -- pseudo-observation
``gamma_i / pi_i`` with noise variance ``1 / pi_i``.  Each structure supplies
only two things: the marginals ``(m_i, v_i)`` of its posterior, and the message
that sums the sites into its own parameterisation (a Bayesian linear regression
for a GLM, per-point noise for a GP, a Kalman pass for a state-space model).

A Gaussian likelihood whose precision is a Gamma block (``likelihoods.Gaussian(
precision="tau")``) is conjugate in both blocks: the precision's site of point
``i`` is ``(1/2, -E[(y_i - a_i)^2] / 2)`` and the weights' site uses ``E[tau]``.
Missing observations (NaN in ``y``) keep empty sites.
"""

import numba
import numpy as np

from ..expfam import Gamma
from ..inference import Factor, FactorEval, GaussianSiteView

from ._numba import NUMBA_OPTIONS
from .likelihoods import Likelihood
from .likelihoods.gaussian import _gaussian_expectations, _gaussian_precision_site

COARSE_POINTS = 20
"""Gauss-Hermite points used far from the optimum (see :attr:`efvi.inference.Factor.has_coarse_rule`)."""


class GaussianSiteFactor(Factor):
    """Base class: a likelihood on scalar projections of a Gaussian block.

    Subclasses implement ``_marginals(q_block, index) -> (m, v)`` and
    ``_message(gamma, pi, index) -> message`` for their structure.

    Parameters
    ----------
    likelihood : efvi.models.likelihoods.Likelihood
    y : array_like, shape (N,)
        Observations; NaN marks a missing value (its site stays empty).
    on : str
        Name of the Gaussian (or structured Gaussian) block.
    """

    def __init__(self, likelihood, y, on):
        if not isinstance(likelihood, Likelihood):
            raise ValueError(
                f"likelihood must be a efvi.models.likelihoods.Likelihood; got {type(likelihood).__name__}"
            )
        self.likelihood = likelihood
        self.y = likelihood.validate_y(y, "y")
        self.n_data = self.y.shape[0]
        self.observed = ~np.isnan(self.y)
        self.all_observed = bool(self.observed.all())
        self.roles = {"on": on}
        self.precision_block = getattr(likelihood, "precision_block", None)
        if self.precision_block is not None:
            self.roles["precision"] = self.precision_block

    def bind(self, blocks):
        if self.precision_block is not None:
            block = self._require_family(blocks, "precision", Gamma)
            if block.prior.batch_shape != ():
                raise ValueError(f"{self.describe()}: the precision block must be a single Gamma; "
                                 f"got batch shape {block.prior.batch_shape}")

    @property
    def conjugate(self):
        """A Gaussian likelihood (known noise or a Gamma precision block) is conjugate."""
        return bool(self.likelihood.conjugate)

    @property
    def has_coarse_rule(self):
        """Quadrature likelihoods use a fixed 20-point rule while ``coarse`` (their own rule otherwise)."""
        return self.precision_block is None and not self.likelihood.conjugate

    def init_sites(self, blocks):
        sites = {self.roles["on"]: self._zero_sites()}
        if self.precision_block is not None:
            sites[self.precision_block] = (np.zeros(self.n_data), np.zeros(self.n_data))
        return sites

    def informed_sites(self, blocks):
        """The CVI targets at the likelihood's data-based guess of ``a`` with zero variance, or None.

        See :meth:`efvi.models.likelihoods.Likelihood.initial_latent`.
        """
        if self.precision_block is not None:
            return None
        guess = self.likelihood.initial_latent(self.y)
        if guess is None:
            return None
        guess = np.where(np.isnan(guess), 0.0, guess)   # missing points get zero sites anyway
        _, g_m, g_v = self.likelihood._variational_expectations(guess, np.zeros(self.n_data), self.y)
        natural_mean, precision = _site_targets(guess, g_m, g_v)
        sites = self._informed_form(blocks[self.roles["on"]], natural_mean, precision, g_m)
        return None if sites is None else {self.roles["on"]: sites}

    def first_step_targets(self, blocks):
        """The informed sites for an exponential-link likelihood (its CVI targets at a diffuse prior overflow)."""
        if not self.likelihood.exponential_link:
            return None
        return self.informed_sites(blocks)

    def _informed_form(self, block, natural_mean, precision, g_m):
        """The informed sites in this factor's stored form, or None to start at the prior (default: ``(gamma, pi)``)."""
        return (natural_mean, precision)

    def _zero_sites(self):
        return (np.zeros(self.n_data), np.zeros(self.n_data))

    _last_marginals = (None, None, None)

    def evaluate(self, q, index=None, rng=None, coarse=False):
        q_block = q[self.roles["on"]]
        # a sweep of variational message passing evaluates the factor again after updating another
        # block (a Gamma precision): the latent's marginals are unchanged then, so they are kept
        last_q, last_index, marginals = self._last_marginals
        if last_q is not q_block or last_index is not index:
            marginals = self._marginals(q_block, index)
            self._last_marginals = (q_block, index, marginals)
        mean, var = marginals
        y = self.y if index is None else self.y[index]
        targets = {}
        if self.precision_block is not None:
            e_log_tau, e_tau = q[self.precision_block].mean_params
            expected, g_m, g_v = _gaussian_expectations(mean, var, y, float(e_tau), float(e_log_tau))
            targets[self.precision_block] = _gaussian_precision_site(mean, var, y)
        else:
            lik = self.likelihood if index is None else self.likelihood.subset(index)
            expected, g_m, g_v = lik._variational_expectations(mean, var, y, COARSE_POINTS if coarse else None)
        natural_mean, precision = _site_targets(mean, g_m, g_v)
        targets[self.roles["on"]] = self._targets(q_block, natural_mean, precision, g_m, index)
        return FactorEval(float(np.sum(expected)), targets)

    def _targets(self, q_block, natural_mean, precision, g_m, index):
        """Site targets in this factor's stored form (default: ``(gamma, pi)``)."""
        return (natural_mean, precision)

    def message(self, block_name, sites, index=None):
        if block_name == self.precision_block:
            return (np.sum(sites[0]), np.sum(sites[1]))
        return self._message(sites, index)

    def site_view(self, sites):
        return GaussianSiteView(sites, self.roles["on"])

    def _marginals(self, q_block, index):
        raise NotImplementedError

    def _message(self, sites, index):
        raise NotImplementedError


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


__all__ = ["GaussianSiteFactor", "site_divergence", "site_kl"]
