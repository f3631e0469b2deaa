r"""Joint posterior draws of a state-space block: forward filtering, backward sampling.

The posterior of a linear-Gaussian prior times Gaussian sites factorises
backwards in time (:mod:`._kernels`),

.. math::

    q(x_0, \dots, x_{T-1}) = q(x_{T-1} \mid \text{sites } 0..T-1)
        \prod_{t < T-1} q(x_t \mid x_{t+1}, \text{sites } 0..t),

so one Kalman filter pass and one backward pass that draws each state given
the next give exact joint draws (Carter and Kohn, 1994;
Frühwirth-Schnatter, 1994).  The cost is ``O(T d^3)`` for the filter plus
``O(n T d^2)`` for ``n`` draws, and no ``T x T`` matrix is formed: the
draws of ``a_t = H_t x_t`` are the only output of size ``n T``.  A
low-memory block (segments and checkpoints, :mod:`.smoother`) samples segment
by segment, refiltering each earlier segment from its checkpoint; the
standard normals are drawn in the same order either way (step ``T - 1``
first), so a low-memory block's draws equal a stored block's bit for bit.
"""

import numpy as np

from ._sampling_kernels import _backward_sample
from .smoother import _check_status, _checkpointed_filter, _new_scratch, _refilter

__all__ = ["backward_draws"]


def backward_draws(gamma, pi, H, transitions, m0, P0, n, rng, workspace=None):
    """``n`` joint posterior draws of ``a_t = H_t x_t`` by forward filtering, backward sampling.

    On arrays already checked by the block (as :func:`.smoother._run_smoother`).

    Parameters
    ----------
    gamma, pi : ndarray, shape (T,)
        The summed sites.
    H : ndarray, shape (1 or T, d)
    transitions : pair of ndarray or callable
        ``A_t``, ``Q_t`` as :func:`.smoother.segment_of` reads them.
    m0 : ndarray, shape (d,)
    P0 : ndarray, shape (d, d)
    n : int
        Number of draws.
    rng : numpy.random.Generator
    workspace : Workspace, optional
        The block's scratch (its ``segment_steps`` sets the segments).

    Returns
    -------
    ndarray, shape (n, T)
        Row ``s`` is one joint draw of ``(a_0, ..., a_{T-1})``.

    Raises
    ------
    ValueError
        If the sites make the posterior invalid (as :func:`.smoother.kalman_smoother`).
    """
    T, d = gamma.shape[0], m0.shape[0]
    scratch = _new_scratch(T, d) if workspace is None else workspace.arrays(T, d)
    gains, offsets, cond_covs, checkpoints = scratch
    length = gains.shape[0] - 1
    _, status, step, last_mean, last_cov = _checkpointed_filter(gamma, pi, H, transitions, m0, P0, scratch)
    _check_status(status, step, False)
    out, states = np.empty((n, T)), np.empty((n, d))
    root, previous = np.empty((d, d)), np.empty(d)
    starts = range(0, T, length)
    for segment in range(len(starts) - 1, -1, -1):
        start = starts[segment]
        stop = min(T, start + length)
        if stop < T:
            _refilter(gamma, pi, H, transitions, start, stop, checkpoints, segment, scratch)
        normals = rng.standard_normal((stop - start, n, d))
        _backward_sample(H, gains, offsets, cond_covs, start - 1, start, stop, T, last_mean, last_cov, states,
                         normals, out, root, previous)
    return out
