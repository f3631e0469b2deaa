"""BLAS threads inside a fit: one, unless a single BLAS call of the fit is large enough to gain from more.

A multi-threaded BLAS (OpenBLAS, MKL) splits each call across its threads and
makes them wait for one another at its end.  For a call of a few million
floating-point operations that costs more than it saves on a quiet machine, and
on a busy one (more runnable threads than cores) every wait can last a
scheduler time slice: a fit of a 300-point GP classifier, all of whose calls
are small, took 72 s with two BLAS threads on a loaded two-core machine and
0.9 s with one.  So a fit asks its factors and blocks for the size of their
largest BLAS call (:meth:`efvi.inference.factor.Factor.blas_flops`,
:meth:`efvi.inference.blocks.Block.blas_flops`) and, when every call is below
:data:`SMALL_BLAS_FLOPS`, limits BLAS to one thread for the fit's duration
(threadpoolctl); BLAS keeps its threads for large problems (a GLM with
N = 1e6 and D = 200, a dense GP of thousands of points) and everywhere outside
fits.
"""

import contextlib
import functools

SMALL_BLAS_FLOPS = 3e7
"""A BLAS call below this many floating-point operations (~10 ms on one core) runs faster on one thread."""


@functools.cache
def blas_controller():
    """The BLAS libraries loaded by the time efvi first limits them (found once: a lookup costs ~0.5 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread():
    """A context manager that limits BLAS to one thread inside it (and restores its threads after)."""
    return blas_controller().limit(limits=1, user_api="blas")


def blas_threads_for(flops):
    """One BLAS thread for a computation whose largest BLAS call has ``flops`` operations, if that is small.

    Parameters
    ----------
    flops : float
        Floating-point operations of the computation's largest single BLAS call.

    Returns
    -------
    context manager
        :func:`one_blas_thread` below :data:`SMALL_BLAS_FLOPS`, else one that changes nothing.
    """
    return one_blas_thread() if flops < SMALL_BLAS_FLOPS else contextlib.nullcontext()
