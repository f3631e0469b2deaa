r"""Generic factors on a structured Gaussian block (GP, Markov GP, LDS): one value per data point.

A structured prior is indexed by the data points: point ``i`` sees only the
block's value :math:`a_i`, whose posterior marginal is :math:`N(m_i, v_i)`.
So a generic factor there works on the 1-D Gaussian site path: with the
marginal's mean parameters :math:`\mu_i = (m_i, m_i^2 + v_i)`, the natural
gradient of :math:`E_q[\log f_i]` is its gradient in :math:`\mu_i` (Khan and
Nielsen, 2018, Theorem 1), which is the natural parameter of a 1-D Gaussian
site :math:`t_i(a) = \exp(\gamma_i a - \pi_i a^2 / 2)`:

.. math:: \gamma_i = \partial E / \partial \mu_{i,1}, \qquad
          \pi_i = -2\, \partial E / \partial \mu_{i,2}.

In terms of the derivatives in :math:`(m_i, v_i)` that is
:math:`\pi_i = -2\, \partial_v E`, :math:`\gamma_i = \partial_m E + \pi_i m_i`;
by Monte Carlo with :math:`a = m_i + \sqrt{v_i}\,\varepsilon` (Bonnet and
Price), :math:`\partial_m E = E[g]` and :math:`\partial_v E = E[h] / 2` with
:math:`g, h` the first two derivatives of :math:`\log f_i(a)`.  The sites are
stored as ``(gamma, pi)`` per point and are the message to the block itself,
as for :class:`efvi.models.Observe`.
"""

import numpy as np

from ..factor import GaussianSiteView


def is_structured(block):
    """Whether ``block`` is a structured Gaussian prior indexed by the data points (it has ``n_points``)."""
    return getattr(block, "n_points", None) is not None


def check_points(factor, block):
    """The factor's data points must be the block's points."""
    if factor.n_data != block.n_points:
        raise ValueError(f"{factor.describe()}: the factor has {factor.n_data} data points but block "
                         f"{block.name!r} has {block.n_points} points (a structured block's point i is data point i)")


def zero_sites(n):
    """Empty 1-D Gaussian sites ``(gamma, pi)``, each shape (n,)."""
    return (np.zeros(n), np.zeros(n))


def marginals(posterior, index):
    """``(m_i, v_i)`` of the points ``index`` (all when None)."""
    if index is None:
        return np.asarray(posterior.mean, float), np.asarray(posterior.var, float)
    return np.asarray(posterior.mean, float)[index], np.asarray(posterior.var, float)[index]


def sites_from_derivatives(mean, d_mean, d_var):
    """Sites ``(gamma, pi)`` from ``dE/dm`` and ``dE/dv`` at the marginal means ``mean``; each (n,)."""
    precision = -2.0 * np.asarray(d_var, float)
    return (np.asarray(d_mean, float) + precision * mean, precision)


def message(sites, index, n):
    """The sites themselves, placed at ``index`` in zeros of length ``n`` for a minibatch."""
    if index is None:
        return tuple(sites)
    full = tuple(np.zeros(n) for _ in sites)
    for whole, part in zip(full, sites):
        whole[index] = part
    return full


def site_view(sites, block_name):
    """The user's view of 1-D Gaussian sites (``precision``, ``pseudo_obs``, ...)."""
    return GaussianSiteView(sites, block_name)


class PointwiseSites:
    """Mixin of the generic factors: on a structured block their sites are ``(gamma, pi)`` per point.

    It takes over ``init_sites``, ``message`` and ``site_view`` when the
    factor's block is structured (:meth:`_bind_pointwise`), and leaves them to
    the factor's other base class otherwise.
    """

    _pointwise = False

    def _bind_pointwise(self, blocks):
        """Whether the factor's block is structured (then its points are checked against the data points)."""
        block = blocks[self.roles["on"]]
        self._pointwise = is_structured(block)
        if self._pointwise:
            check_points(self, block)
        return self._pointwise

    def init_sites(self, blocks):
        if self._pointwise:
            return {self.roles["on"]: zero_sites(self.n_data)}
        return super().init_sites(blocks)

    def message(self, block_name, sites, index=None):
        if self._pointwise:
            return message(sites, index, self.n_data)
        return super().message(block_name, sites, index)

    def site_view(self, sites):
        return site_view(sites, self.roles["on"]) if self._pointwise else super().site_view(sites)
