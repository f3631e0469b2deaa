r"""How data point ``i`` sees a Gaussian latent: the parameter of the one site factor.

Every structure on the Gaussian site path (:mod:`efvi.models.sites`) is seen by
its data points through scalars :math:`a_i = H_i z`.  What :math:`H_i` is -- the
``i``-th value of a structured block, or a row of a design matrix -- is a
*projection*, given to :class:`efvi.models.GaussianSiteFactor` as a parameter.
A projection is bound to its block when the model is built
(``projection.bind(factor, block)``) and the bound form answers five questions:

``marginals(q, index) -> (m, v)``
    the marginals of :math:`a_i` under the block's posterior ``q``;
``message(sites, index)``
    the sum of the stored sites in the block's parameterisation;
``targets(q, gamma, pi, g_m, index)``
    the sites' CVI targets in their stored form (usually ``(gamma, pi)``);
``zero_sites()``
    empty sites in that form;
``informed(block, gamma, pi, g_m, point_targets=None)``
    data-informed first sites in that form, or None to start at the prior;
    ``point_targets(a) -> (gamma, pi, g_m, log_lik)`` gives the zero-variance
    targets at other values ``a`` of the points and ``sum_i log p(y_i | a_i)``,
    for a projection that refines its start (the GLM's full rows take Newton
    steps on the log joint).

This module has the identity projection (:class:`PointValues`): point ``i`` is
the ``i``-th value of a structured block (a GP's :math:`f(x_i)`, a state-space
model's :math:`H x_t`, the GLM's dual route), whose message is the sites
themselves.  The rows of a design matrix are :class:`efvi.models.glm.Rows`.
"""

import numpy as np


def scatter_sites(sites, index, n_data):
    """The per-point sites ``(gamma, pi)`` of the points ``index`` placed in length-``n_data`` arrays (zeros elsewhere).

    Parameters
    ----------
    sites : tuple of two ndarrays, shape (len(index),) or (n_data,) when ``index`` is None
    index : ndarray of int or None
    n_data : int

    Returns
    -------
    tuple of two ndarrays, shape (n_data,)
    """
    if index is None:
        return (sites[0], sites[1])
    full = (np.zeros(n_data), np.zeros(n_data))
    full[0][index], full[1][index] = sites[0], sites[1]
    return full


class PointValues:
    """The identity projection: point ``i`` sees the ``i``-th value of a structured Gaussian block.

    The block (:class:`efvi.models.gp.GP`, :class:`efvi.models.lds.MarkovGP`,
    :class:`efvi.models.lds.LDS`, or any block following the structured-block
    contract) has ``n_points`` points; its posterior has per-point ``mean`` and
    ``var``, and it takes the per-point sites ``(gamma, pi)`` as its message.

    Parameters
    ----------
    points : callable, optional
        Maps the block's posterior to the object holding the points' ``mean``
        and ``var`` (default: the posterior itself; the GLM's dual route passes
        its ``q.points``).
    """

    families = None
    """Any block family with points (checked in :meth:`bind`)."""

    def __init__(self, points=None):
        self._points = points

    def replace_block(self, block):
        """None: a structured block is solved as it is."""
        return None

    def bind(self, factor, block):
        """Check that ``block`` has one point per data point of ``factor``; return this projection.

        Raises
        ------
        ValueError
            If the block has no points (a plain Gaussian weight vector) or another number of them.
        """
        point_view = getattr(block, "point_view", None)
        if point_view is not None:      # a block that says how its points are seen (a sparse GP)
            return point_view(factor)
        n_points = getattr(block, "n_points", None)
        if n_points is None:
            raise ValueError(
                f"{factor.describe()}: this factor needs a structured Gaussian block (gp.GP, lds.MarkovGP, "
                f"lds.LDS); got {type(block).__name__} for {block.name!r} (use glm.GLM for a weight vector)"
            )
        if n_points != factor.n_data:
            raise ValueError(f"{factor.describe()}: y has {factor.n_data} entries but block "
                             f"{block.name!r} has {n_points} points")
        self.n_data = factor.n_data
        return self

    def marginals(self, q, index):
        points = q if self._points is None else self._points(q)
        if index is None:
            return points.mean, points.var
        return points.mean[index], points.var[index]

    def message(self, sites, index):
        return scatter_sites(sites, index, self.n_data)

    def targets(self, q, natural_mean, precision, g_m, index):
        return (natural_mean, precision)

    def zero_sites(self):
        return (np.zeros(self.n_data), np.zeros(self.n_data))

    def informed(self, block, natural_mean, precision, g_m, point_targets=None):
        return (natural_mean, precision)


__all__ = ["PointValues", "scatter_sites"]
