"""The scratch of the compiled Kalman passes (:mod:`efvi.models.lds.smoother`): conditionals, checkpoints and
filter moments, the carried state, a workspace reused across passes, and the ``(A, Q)`` stacks of a segment.
"""

import threading
from typing import NamedTuple

import numpy as np

from . import _kernels


class PerThreadScratch:
    """Base of objects that keep scratch arrays per thread in ``self._local``: they pickle without them.

    A ``threading.local`` cannot be pickled, and its arrays are scratch, so a
    pickled copy (``pickle``, ``joblib``, ``multiprocessing``) starts with
    none and allocates them on first use.
    """

    def __init__(self):
        self._local = threading.local()

    def __getstate__(self):
        return {key: value for key, value in self.__dict__.items() if key != "_local"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._local = threading.local()


class Workspace(PerThreadScratch):
    """Scratch arrays of the compiled passes, reused by successive passes of one problem size.

    A state-space block smooths a new set of sites every CVI iteration.
    Allocating the scratch afresh each time costs as much as the backward
    pass itself (the operating system hands out new pages), so a block keeps
    one workspace.  Each thread gets its own arrays.

    Parameters
    ----------
    segment_steps : int, optional
        Smooth in segments of this many steps (the notes of
        :mod:`efvi.models.lds.smoother`): the scratch holds
        ``min(T, segment_steps) (2 d^2 + d)`` values instead of
        ``T (2 d^2 + d)``.  None: one segment of ``T`` steps.
    """

    def __init__(self, segment_steps=None):
        super().__init__()
        self.segment_steps = segment_steps

    def arrays(self, T, d):
        """``(gains, offsets, cond_covs, checkpoints)`` for ``T`` steps of size ``d`` (see :func:`_new_scratch`)."""
        arrays = getattr(self._local, "arrays", None)
        key = (T, d)
        if arrays is None or arrays[0] != key:
            arrays = self._local.arrays = (key, _new_scratch(T, d, self.segment_steps))
        return arrays[1]


def _new_scratch(T, d, segment_steps=None):
    """Rows for the conditionals of one segment of ``n = min(T, segment_steps)`` steps, plus one spare
    (``_kernels._filter``), and the checkpoints of every segment start (None for a single segment)."""
    n = T if segment_steps is None else min(T, segment_steps)
    n_segments = -(-T // n) if n else 0
    checkpoints = (np.empty((n_segments, d)), np.empty((n_segments, d, d)),
                   np.empty((n_segments, _kernels.CARRY_SIZE))) if n_segments > 1 else None
    return np.empty((n + 1, d, d)), np.empty((n + 1, d)), np.empty((n + 1, d, d)), checkpoints


def _start_carry(m0, P0):
    """The ``carry`` arguments of the compiled passes at step 0: ``(m_0, P_0, [log Z, det, indefinite, singular])``."""
    return np.array(m0, dtype=float), np.array(P0, dtype=float), np.array([0.0, 1.0, 0.0, -1.0])


def segment_of(transitions, start, stop):
    """The ``(A, Q)`` stacks of steps ``start..stop-1`` (a constant stays one matrix).

    ``transitions`` is a pair of ``(1 or T, d, d)`` stacks, or a callable
    ``(start, stop) -> (A, Q)`` that computes a segment's stacks on demand
    (a Markov GP that does not store them).
    """
    if callable(transitions):
        return transitions(start, stop)
    return tuple(x if x.shape[0] == 1 else x[start:stop] for x in transitions)


class _Moments(NamedTuple):
    """The filter moments that :func:`_kernels._filter` keeps, one row per step (of a pass or a segment):
    the first six fields of :class:`FilterResult`."""

    means: np.ndarray
    covs: np.ndarray
    pred_means: np.ndarray
    pred_covs: np.ndarray
    a_pred_mean: np.ndarray
    a_pred_var: np.ndarray


def _new_moments(n, d):
    """:class:`_Moments` of ``n`` rows for state dimension ``d`` (``n = 1``: dummies for a pass that keeps none)."""
    return _Moments(np.empty((n, d)), np.empty((n, d, d)), np.empty((n, d)), np.empty((n, d, d)), np.empty(n),
                    np.empty(n))
