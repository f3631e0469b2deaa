"""Compiled discretisation of state-space kernels, written into given arrays.

:meth:`Kernel.discretise` builds ``A_t = expm(F dt_t)`` and
``Q_t = P_inf - A_t P_inf A_t^T`` (:mod:`.statespace`) in autograd.numpy,
through temporaries of the size of the output; for a long series that is
most of the time of a Kalman pass.  :func:`discretise_into` computes the same
matrices in one compiled loop per kernel part, into arrays the caller keeps
(a low-memory Markov GP reuses one pair per segment), with the same formulas
and operations in the same order:

* Matern: ``A_t = exp(-lam dt_t) sum_k (dt_t^k / k!) N^k`` with ``N^k``,
  ``k!`` from :func:`.statespace.matern_series` and ``exp`` from numpy;
* Periodic: rotations by ``j omega_0 dt_t`` with numpy's ``cos``/``sin``;
* Constant: ``A_t = 1``;
* Sum: the parts' transitions on the diagonal blocks; Product: their
  Kronecker product (numpy, as :func:`.statespace.kron`);
* ``Q_t``: the congruence of :func:`.statespace.process_noise`, summed in
  the same order.

The results agree with :meth:`Kernel.discretise` to rounding (tested to
1e-15 relative for every kind; they are usually identical bit for bit).
Kernels of other classes (including subclasses) are not covered:
:func:`discretise_into` then returns False and :func:`discretise` falls back
to :meth:`Kernel.discretise`.
"""

import numba
import numpy as np

from ..._numba import NUMBA_OPTIONS
from . import statespace
from ._kernels import congruence_into
from ._validation import as_time_gaps
from .combination import Product, Sum
from .constant import Constant
from .matern import Matern12, Matern32, Matern52
from .periodic import Periodic

_MATERN = (Matern12, Matern32, Matern52)


def covered(kernel):
    """Whether :func:`discretise_into` handles ``kernel`` (every part of a class it knows)."""
    if type(kernel) in (Sum, Product):
        return all(covered(part) for part in kernel.parts)
    return type(kernel) in _MATERN + (Constant, Periodic)


def discretise(kernel, dt):
    """``(A, Q)``, each (T, d, d): :meth:`Kernel.discretise` of the gaps ``dt`` (T,), compiled when covered."""
    dt = as_time_gaps(dt)
    d = kernel.state_dim
    A, Q = np.empty((dt.shape[0], d, d)), np.empty((dt.shape[0], d, d))
    if discretise_into(kernel, dt, A, Q, kernel.state_space().Pinf):
        return A, Q
    return kernel.discretise(dt)


def discretise_into(kernel, dt, A, Q, Pinf):
    """Write ``A_t`` and ``Q_t`` of the gaps ``dt`` (T,) into ``A``, ``Q`` (T, d, d); False if not covered.

    ``Pinf`` (d, d) is the kernel's stationary covariance
    (``kernel.state_space().Pinf``).  Raises ``ValueError`` for gaps that
    are negative or not finite, as :meth:`Kernel.discretise`.
    """
    if not covered(kernel):
        return False
    dt = as_time_gaps(dt)
    _transition_into(kernel, kernel._param_vector(), dt, A)
    congruence_into(A, np.ascontiguousarray(Pinf, dtype=float), Q, True, (0,) * A.shape[1])
    return True


def _transition_into(kernel, p, dt, out):
    """``out[t] = expm(F dt[t])`` of a covered kernel with positive hyperparameters ``p``."""
    if type(kernel) is Sum:
        out[...] = 0.0
        offset = 0
        for part, q in zip(kernel.parts, kernel._split(p)):
            size = part._ss_dim()
            _transition_into(part, q, dt, out[:, offset:offset + size, offset:offset + size])
            offset += size
    elif type(kernel) is Product:
        stacks = []
        for part, q in zip(kernel.parts, kernel._split(p)):
            size = part._ss_dim()
            stacks.append(np.empty((dt.shape[0], size, size)))
            _transition_into(part, q, dt, stacks[-1])
        product = stacks[0]
        for stack in stacks[1:]:
            product = statespace.kron(product, stack)
        out[...] = product
    elif type(kernel) is Constant:
        out[...] = 1.0
    elif type(kernel) is Periodic:
        n = kernel.n_harmonics
        angle = (2.0 * np.pi / kernel._unpack(p)[0]) * np.outer(dt, np.arange(n + 1))
        _rotations(np.cos(angle), np.sin(angle), out)
    else:
        lam = kernel._rate(p)[0]
        powers, factorials = statespace.matern_series(kernel._order, lam)
        _matern(dt, np.exp(-lam * dt), np.ascontiguousarray(powers), factorials, out, (0,) * out.shape[1])


@numba.jit(**NUMBA_OPTIONS)
def _matern(dt, decay, powers, factorials, out, dims):
    """``out[t] = decay[t] sum_k (dt[t]^k / k!) powers[k]`` (``powers`` (d, d * d)), summed over ``k`` in order."""
    T, d = dt.shape[0], len(dims)
    weights = np.empty(d)
    for t in range(T):
        power = 1.0
        for k in range(d):
            if k > 0:
                power = power * dt[t]
            weights[k] = power / factorials[k]
        for a in range(d):
            for b in range(d):
                s = 0.0
                for k in range(d):
                    s += weights[k] * powers[k, a * d + b]
                out[t, a, b] = decay[t] * s


@numba.jit(**NUMBA_OPTIONS)
def _rotations(cos, sin, out):
    """``out[t]``: 1 then, per harmonic ``j``, the rotation ``[[cos, -sin], [sin, cos]]`` of ``cos[t, j]``, ``sin[t, j]``."""
    T, d = out.shape[0], out.shape[1]
    for t in range(T):
        for a in range(d):
            for b in range(d):
                out[t, a, b] = 0.0
        out[t, 0, 0] = cos[t, 0]
        for j in range(1, cos.shape[1]):
            i = 2 * j - 1
            out[t, i, i] = cos[t, j]
            out[t, i + 1, i + 1] = cos[t, j]
            out[t, i, i + 1] = -sin[t, j]
            out[t, i + 1, i] = sin[t, j]
