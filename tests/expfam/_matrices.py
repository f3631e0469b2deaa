"""Random matrices and per-batch scipy references shared by the matrix-family tests."""

import numpy as np
from hypothesis import strategies as st


def random_rotation(rng, dim, batch=()):
    """Haar-random orthogonal matrices, shape ``batch + (dim, dim)``."""
    q, r = np.linalg.qr(rng.standard_normal(batch + (dim, dim)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def random_spd(rng, dim, batch=(), log10_condition=0.0, log10_scale=0.0):
    """Symmetric positive-definite matrices with condition number exactly ``10**log10_condition``.

    Eigenvalues are ``10**log10_scale`` times log-uniform in ``[1, 10**log10_condition]``
    with both ends attained (for ``dim >= 2``), in a random basis.

    Returns
    -------
    matrix, inverse : arrays of shape ``batch + (dim, dim)``, both built from the
        same eigen-decomposition (so the inverse is accurate however ill-conditioned).
    """
    u = rng.uniform(size=batch + (dim,))
    if dim >= 2:
        u[..., 0], u[..., 1] = 0.0, 1.0
    eigenvalues = 10.0 ** (log10_scale + log10_condition * u)
    q = random_rotation(rng, dim, batch)
    qt = np.swapaxes(q, -1, -2)
    matrix = (q * eigenvalues[..., None, :]) @ qt
    inverse = (q / eigenvalues[..., None, :]) @ qt
    return 0.5 * (matrix + np.swapaxes(matrix, -1, -2)), 0.5 * (inverse + np.swapaxes(inverse, -1, -2))


@st.composite
def matrix_setup(draw, max_dim, max_log10_condition):
    """Draw ``(rng, dim, batch, log10_condition)`` for a hypothesis strategy."""
    dim = draw(st.integers(1, max_dim))
    batch = draw(st.sampled_from([(), (2,), (3,), (2, 2)]))
    seed = draw(st.integers(0, 2**32 - 1))
    log10_condition = draw(st.floats(0.0, max_log10_condition))
    return np.random.default_rng(seed), dim, batch, log10_condition


def per_batch(batch_shape, event_ndim, z, reference):
    """Evaluate ``reference(index, points)`` for each batch element of ``z``.

    Parameters
    ----------
    batch_shape : tuple
        Batch shape of the distribution.
    event_ndim : int
        Number of event dimensions of a draw.
    z : array, shape ``sample_shape + batch_shape + event``
    reference : callable(index, points) -> array, shape ``sample_shape``
        ``points`` has shape ``sample_shape + event``.

    Returns
    -------
    array, shape ``sample_shape + batch_shape``
    """
    z = np.asarray(z)
    nb = len(batch_shape)
    sample_shape = z.shape[: z.ndim - event_ndim - nb]
    out = np.empty(sample_shape + tuple(batch_shape))
    for index in np.ndindex(*batch_shape):
        points = z[(Ellipsis,) + index + (slice(None),) * event_ndim]
        out[(Ellipsis,) + index] = np.reshape(reference(index, points), sample_shape)
    return out
