"""The whitened kernel features of a sparse GP: ``Phi = K_xz L_z^{-T}`` and the conditional variances ``d``.

Shared by the block (:mod:`efvi.models.gp.sparse`), which keeps or streams them,
and by its posterior, which builds them at new inputs to predict.
"""

import numpy as np
from scipy.linalg import lapack

from ...inference import InvalidPosterior

from ..glm._linalg import precision_inverse, whiten_rows


def inducing_cholesky(kernel, Z, jitter):
    """Lower Cholesky factor of ``K_zz + jitter * mean(diag K_zz) I``, shape (M, M)."""
    K = kernel(Z)
    K[np.diag_indices_from(K)] += jitter * max(float(np.mean(np.diag(K))), 1e-300)
    chol, info = lapack.dpotrf(K, lower=1, clean=1)
    if info != 0:
        raise InvalidPosterior(f"the kernel matrix of the {Z.shape[0]} inducing inputs is not positive definite "
                               "(duplicate or very close inducing inputs?); spread them out or raise jitter")
    return chol


def features(kernel, X, Z, chol):
    """``Phi = K_xz L_z^{-T}``, shape (N, M), and ``d = diag(K_xx) - rowsums(Phi^2)`` (clipped at 0), shape (N,).

    Built a block of rows at a time, so that the kernel's temporaries stay in cache;
    each block of ``K_xz`` is whitened in place by one triangular product with
    ``L_z^{-1}`` (3x faster than a triangular solve at N = 1e5, M = 100).
    """
    n, m = X.shape[0], Z.shape[0]
    phi, d = np.empty((n, m)), np.empty(n)
    inverse = precision_inverse(chol)
    for start in range(0, n, FEATURE_ROWS):
        rows = slice(start, start + FEATURE_ROWS)
        block = phi[rows]
        block[...] = kernel(X[rows], Z)
        whiten_rows(block, inverse, d[rows])
        np.subtract(kernel.diag(X[rows]), d[rows], out=d[rows])
    np.maximum(d, 0.0, out=d)
    return phi, d


FEATURE_ROWS = 512
"""Data points per block when the features are built."""

STREAM_ROWS = 65536
"""Data points per block when the features are not kept and are rebuilt on use."""
