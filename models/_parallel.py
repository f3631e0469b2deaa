"""Running a per-point kernel over blocks of points on several threads.

The compiled kernels are ``nogil`` (:mod:`efvi.models._numba`), and every point of
a per-point kernel (the likelihoods' quadrature uses this) is independent of
the others.
So a long array splits into one contiguous block per core, each block runs on
a thread of a shared pool, and the outputs are joined in order: the result is
identical, bit for bit, to one call on the whole array.  Short arrays run on
the calling thread (a pool round trip costs tens of microseconds).

``EFVI_NUM_THREADS`` in the environment caps the number of threads (1 turns
this off); the default is the number of cores this process may use.  A process
forked after a fit (``multiprocessing`` on Linux) starts a fresh pool.

While efvi's own threads run, the BLAS library (OpenBLAS, MKL) is limited to
one thread (threadpoolctl), so that the two kinds of thread do not
oversubscribe the cores; so is it in a fit whose BLAS calls are all small
(:mod:`efvi.inference.blas_threads`).  Set
``OPENBLAS_NUM_THREADS`` (or ``OMP_NUM_THREADS``) before starting Python to
limit BLAS in the rest of a fit as well, e.g. on a busy shared machine.
"""

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..inference.blas_threads import one_blas_thread

MIN_POINTS_PER_THREAD = 8192
"""Below this many points per thread the kernel runs on the calling thread."""


def _default_threads():
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:                                   # not on Linux
        cores = os.cpu_count() or 1
    requested = os.environ.get("EFVI_NUM_THREADS")
    if requested is None:
        return cores
    try:
        value = int(requested)
    except ValueError:
        raise ValueError(f"EFVI_NUM_THREADS must be a positive integer; got {requested!r}") from None
    if value < 1:
        raise ValueError(f"EFVI_NUM_THREADS must be a positive integer; got {requested!r}")
    return value


NUM_THREADS = _default_threads()
"""Threads a per-point kernel may use."""

_pool = None


def _shared_pool():
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=NUM_THREADS, thread_name_prefix="efvi")
    return _pool


def _forget_pool():
    """A forked child has none of its parent's threads: it must start a pool of its own."""
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def row_blocks(n, threads=None):
    """Contiguous slices covering ``range(n)``, one per thread that has enough points.

    Parameters
    ----------
    n : int
        Number of points.
    threads : int, optional
        Upper bound on the number of blocks (default ``NUM_THREADS``).

    Returns
    -------
    list of slice
        One slice (the whole range) when ``n`` is too short to share out.
    """
    threads = NUM_THREADS if threads is None else threads
    count = max(1, min(threads, n // MIN_POINTS_PER_THREAD))
    if count == 1:
        return [slice(0, n)]
    edges = np.linspace(0, n, count + 1).astype(int)
    return [slice(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:])]


def map_points(kernel, n):
    """Run ``kernel(rows)`` on blocks of ``range(n)`` in parallel; join the output arrays.

    Parameters
    ----------
    kernel : callable
        ``kernel(rows)`` with ``rows`` a slice returns a tuple of arrays, each
        with one entry per point of ``rows`` (shape ``(len(rows),)``); it
        should release the GIL (a ``nogil`` numba kernel).
    n : int
        Number of points.

    Returns
    -------
    tuple of ndarray, each of shape (n,)
        What one call ``kernel(slice(0, n))`` returns.
    """
    blocks = row_blocks(n)
    if len(blocks) == 1:
        return kernel(blocks[0])
    with one_blas_thread():
        parts = list(_shared_pool().map(kernel, blocks))
    return tuple(np.concatenate(outputs) for outputs in zip(*parts))


def overlap_points(produce, consume, n, chunk=MIN_POINTS_PER_THREAD):
    """Run ``consume`` on each chunk of points on the pool while the calling thread produces the next.

    For a per-point computation fed by BLAS work (a GLM's marginals, then the
    likelihood's quadrature on them), the calling thread runs the BLAS part
    of chunk ``k + 1`` while a pool thread runs the per-point part of chunk
    ``k``, so the two overlap instead of following each other; the calling
    thread consumes the last chunk itself.  Each chunk has
    at most ``chunk`` points, so ``consume``'s own :func:`map_points` stays on
    its thread (no nested use of the pool).  Short inputs and a single thread
    run ``produce`` then ``consume`` on the calling thread.

    Parameters
    ----------
    produce : callable
        ``produce(rows) -> tuple of (len(rows),) arrays`` for a slice ``rows``.
    consume : callable
        ``consume(rows, *produced) -> tuple of (len(rows),) arrays``; should release the GIL.
    n : int
        Number of points.

    Returns
    -------
    produced, consumed : tuple of ndarray, each of shape (n,)
        What ``produce`` and ``consume`` return for ``slice(0, n)``, joined in order.
    """
    if NUM_THREADS == 1 or n < 2 * chunk:
        produced = produce(slice(0, n))
        return produced, consume(slice(0, n), *produced)
    produced, futures = [], []
    pool = _shared_pool()
    with one_blas_thread():
        starts = range(0, n, chunk)
        for start in starts[:-1]:
            rows = slice(start, start + chunk)
            produced.append(produce(rows))
            futures.append(pool.submit(consume, rows, *produced[-1]))
        # the last chunk runs here, while the pool finishes the one before: no thread waits for the other
        rows = slice(starts[-1], n)
        produced.append(produce(rows))
        last = consume(rows, *produced[-1])
        consumed = [future.result() for future in futures] + [last]
    return (tuple(np.concatenate(parts) for parts in zip(*produced)),
            tuple(np.concatenate(parts) for parts in zip(*consumed)))

