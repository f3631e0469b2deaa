"""Batched linear algebra shared by the matrix families (Gaussian, Wishart, Normal-Wishart).

Every function works on stacks: a matrix argument has shape ``(..., D, D)`` and
the leading dimensions are a batch.  Positive-definite matrices are handled
through their Cholesky factors :math:`A = L L^T`, which give

.. math::

    \\log|A| = 2 \\sum_i \\log L_{ii}, \\qquad
    A^{-1} b = L^{-T} (L^{-1} b), \\qquad
    A^{-1} = L^{-T} L^{-1}.

Triangular solves go through ``numpy.linalg.solve``, a compiled gufunc over the
batch; on a triangular factor it is as accurate as a dedicated triangular solve
(scipy's batched routines loop in Python and are much slower on large stacks).

Inverses and solves of positive-definite matrices get one step of iterative
refinement, :math:`x \\leftarrow x + A^{-1}(b - A x)`, with the residual formed in
extended precision (``numpy.longdouble``) for matrices up to
``REFINE_MAX_DIM`` wide, where that costs little.  Their relative error drops
from about :math:`\\kappa(A)\\,u` to about :math:`u + \\kappa(A)\\,u_{ext}` (``u`` and
``u_ext`` the double and extended unit roundoffs; 1e-14 instead of 1e-10 at
:math:`\\kappa = 10^6` on x86-64), so that round trips of ill-conditioned
Gaussians reach the limit set by the float64 mean parameters.  Where
``longdouble`` is plain double the step changes little.
"""

import autograd.numpy as anp
import numpy as np
from scipy.linalg.lapack import dtrtrs as _dtrtrs


def symmetrise(a):
    """Return the symmetric part ``(a + a^T) / 2`` over the last two axes.

    Parameters
    ----------
    a : array or autograd box, shape ``(..., D, D)``

    Returns
    -------
    array, shape ``(..., D, D)``
    """
    return 0.5 * (a + anp.swapaxes(a, -1, -2))


def is_pd(a):
    """Whether each matrix of a stack is positive definite (its Cholesky factor exists).

    Parameters
    ----------
    a : array, shape ``(..., D, D)``
        Only the lower triangle is read, as by ``numpy.linalg.cholesky``.

    Returns
    -------
    bool array, shape ``(...)``
    """
    a = np.asarray(a, dtype=float)
    finite = np.all(np.isfinite(a), axis=(-2, -1))
    safe = np.where(finite[..., None, None], a, np.eye(a.shape[-1]))
    try:
        np.linalg.cholesky(safe)
        return finite
    except np.linalg.LinAlgError:
        pass
    # Failure path only: find which matrices of the stack fail.
    ok = np.empty(a.shape[:-2], dtype=bool)
    for index in np.ndindex(ok.shape):
        try:
            np.linalg.cholesky(safe[index])
            ok[index] = finite[index]
        except np.linalg.LinAlgError:
            ok[index] = False
    return ok


def is_symmetric(a, rtol=1e-10):
    """Whether each matrix of a stack is symmetric to ``rtol`` relative to its largest entry.

    Parameters
    ----------
    a : array, shape ``(..., D, D)``
    rtol : float

    Returns
    -------
    bool array, shape ``(...)``; False for a matrix with a NaN entry.
    """
    a = np.asarray(a, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.all(np.abs(a - np.swapaxes(a, -1, -2))
                      <= rtol * np.max(np.abs(a), axis=(-2, -1), keepdims=True), axis=(-2, -1))


def is_spd(a):
    """Whether each matrix of a stack is symmetric (:func:`is_symmetric`) and positive definite; shape ``(...)``."""
    return is_symmetric(a) & is_pd(symmetrise(np.asarray(a, dtype=float)))


def cholesky(a, name):
    """Lower Cholesky factors of a stack of positive-definite matrices.

    Parameters
    ----------
    a : array, shape ``(..., D, D)``
    name : str
        Argument name used in the error message.

    Returns
    -------
    array, shape ``(..., D, D)``, lower triangular.

    Raises
    ------
    ValueError
        If some matrix is not positive definite; the message names ``name``
        and the first failing batch index.
    """
    a = np.asarray(a, dtype=float)
    try:
        if np.all(np.isfinite(a)):
            return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        pass
    bad = np.argwhere(~is_pd(a))
    where = tuple(int(i) for i in bad[0]) if bad.size else ()
    raise ValueError(
        f"{name} must be a finite positive-definite matrix (stack) of shape (..., D, D); "
        f"the matrix at batch index {where} is not (shape {a.shape})"
    )


def logdet_from_cholesky(chol):
    """``log|A|`` from the Cholesky factor ``L`` of ``A``; shape ``(...)``."""
    return 2.0 * np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)


def solve_triangular(chol, b, transpose=False):
    """Solve ``L x = b`` (or ``L^T x = b``) for a stack of lower-triangular ``L``.

    Parameters
    ----------
    chol : array, shape ``(..., D, D)``
    b : array, shape ``(..., D, K)``
        Right-hand sides; batches broadcast.
    transpose : bool
        Solve with ``L^T`` instead of ``L``.

    Returns
    -------
    array, shape ``(..., D, K)``
    """
    if chol.ndim == 2 and b.ndim == 2:     # one matrix: LAPACK's triangular solve, not a general LU
        x, info = _dtrtrs(chol, b, lower=1, trans=1 if transpose else 0)
        if info == 0:
            return x
    lhs = np.swapaxes(chol, -1, -2) if transpose else chol
    return np.linalg.solve(lhs, b)


REFINE_MAX_DIM = 64


def cho_solve(chol, b):
    """Solve ``A x = b`` given the Cholesky factor of ``A``; ``b`` has shape ``(..., D, K)``."""
    return solve_triangular(chol, solve_triangular(chol, b), transpose=True)


def _refine(a, chol, x, b):
    """One step of iterative refinement of ``A x = b`` with an extended-precision residual."""
    if a.shape[-1] > REFINE_MAX_DIM:
        return x
    extended = np.longdouble
    residual = (b.astype(extended) - a.astype(extended) @ x.astype(extended)).astype(float)
    return x + cho_solve(chol, residual)


def pd_solve(a, chol, b):
    """Solve ``A x = b`` for positive-definite ``A`` with Cholesky factor ``chol``, refined.

    Parameters
    ----------
    a, chol : arrays, shape ``(..., D, D)``
    b : array, shape ``(..., D)``
        Vector right-hand sides; batches broadcast.

    Returns
    -------
    array, shape ``(..., D)``
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)[..., None]
    return _refine(a, chol, cho_solve(chol, b), b)[..., 0]


def pd_inverse_from_cholesky(a, chol):
    """``A^{-1}`` (exactly symmetric, refined) from ``A`` and its Cholesky factor; shape ``(..., D, D)``."""
    a = np.asarray(a, dtype=float)
    eye = np.broadcast_to(np.eye(a.shape[-1]), a.shape)
    linv = solve_triangular(chol, eye)
    return symmetrise(_refine(a, chol, np.swapaxes(linv, -1, -2) @ linv, eye))


def pd_inverse(a, name):
    """Inverse of a stack of positive-definite matrices, via Cholesky and refinement.

    Parameters
    ----------
    a : array, shape ``(..., D, D)``
    name : str
        Argument name for the error raised when ``a`` is not positive definite.

    Returns
    -------
    array, shape ``(..., D, D)``
    """
    return pd_inverse_from_cholesky(a, cholesky(a, name))


def quad_form_chol(chol, x):
    """``x^T A^{-1} x`` from the Cholesky factor of ``A``; ``x`` has shape ``(..., D)``."""
    y = solve_triangular(chol, np.asarray(x)[..., None])[..., 0]
    return np.sum(y * y, axis=-1)
