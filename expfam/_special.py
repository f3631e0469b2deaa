"""Digamma equations shared by the Gamma, Dirichlet and Beta families.

The mean parameters of these families are expectations of logarithms, which
involve the digamma function :math:`\\psi`:

* Gamma(shape a, rate b): :math:`E \\log z = \\psi(a) - \\log b` and
  :math:`E z = a / b`, so :math:`a` solves
  :math:`\\log a - \\psi(a) = \\log E z - E \\log z` (> 0 by Jensen);
* Dirichlet(alpha) (Beta is the case K = 2):
  :math:`E \\log z_k = \\psi(\\alpha_k) - \\psi(\\alpha_0)`,
  :math:`\\alpha_0 = \\sum_k \\alpha_k`, a K-dimensional equation for
  :math:`\\alpha` (solvable iff :math:`\\sum_k \\exp E\\log z_k < 1`).

Both inverses are Halley/Chebyshev (cubically convergent) solves in compiled
kernels (:mod:`efvi.expfam._kernels`), accurate to about 1e-13 relative plus what
float64 mean parameters leave undetermined (about :math:`\\alpha_0 \\epsilon`
for the Dirichlet, :math:`2 a \\epsilon |E \\log z|` for the Gamma shape).
The forward Dirichlet map is computed here too, without the cancellation of
:math:`\\psi(\\alpha_k) - \\psi(\\alpha_0)` when one component dominates.
"""

import numpy as np

from . import _kernels
from ._newton import ConvergenceError


def _check_converged(failed, total, what):
    if failed:
        raise ConvergenceError(
            f"{what} did not converge within {_kernels.MAX_ITER} iterations for {failed} of "
            f"{total} inputs; please report this with the inputs"
        )


def gamma_shape_from_log_gap(log_gap):
    """Solve :math:`\\log a - \\psi(a) = g` for the Gamma shape ``a``, elementwise.

    Parameters
    ----------
    log_gap : array_like, any shape
        ``g = log E[z] - E[log z]``, finite and > 0.

    Returns
    -------
    ndarray, same shape
        The shape ``a > 0``, solving the equation to 1e-14 relative.
    """
    log_gap = np.asarray(log_gap, dtype=float)
    flat = np.ascontiguousarray(log_gap.reshape(-1))
    out = np.empty_like(flat)
    _check_converged(_kernels.gamma_shape_kernel(flat, out), flat.size, "the Gamma shape solve")
    return out.reshape(log_gap.shape)


def dirichlet_mean_log(concentration):
    """:math:`E \\log z_k = \\psi(\\alpha_k) - \\psi(\\alpha_0)` for Dirichlet concentrations.

    Parameters
    ----------
    concentration : array_like, shape ``batch + (K,)``
        All entries > 0, ``K >= 2``.

    Returns
    -------
    ndarray, shape ``batch + (K,)``
    """
    concentration = np.asarray(concentration, dtype=float)
    rows = np.ascontiguousarray(concentration.reshape(-1, concentration.shape[-1]))
    out = np.empty_like(rows)
    _kernels.dirichlet_mean_log_kernel(rows, out)
    return out.reshape(concentration.shape)


def dirichlet_from_mean_log(mean_log):
    """Invert :func:`dirichlet_mean_log`: the concentrations with these expected logs.

    Parameters
    ----------
    mean_log : array_like, shape ``batch + (K,)``
        Finite, ``K >= 2``, with ``sum_k exp(mean_log_k) < 1`` in every row.

    Returns
    -------
    ndarray, shape ``batch + (K,)``
        Concentrations ``alpha > 0``, accurate to 1e-12 relative plus
        ``4 eps alpha_0`` (the spread float64 rounding of ``mean_log`` causes).
    """
    mean_log = np.asarray(mean_log, dtype=float)
    rows = np.ascontiguousarray(mean_log.reshape(-1, mean_log.shape[-1]))
    out = np.empty_like(rows)
    _check_converged(_kernels.dirichlet_solve_kernel(rows, out), rows.shape[0], "the Dirichlet solve")
    return out.reshape(mean_log.shape)
