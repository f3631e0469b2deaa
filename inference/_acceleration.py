"""Anderson acceleration of the CVI fixed-point iteration, safeguarded by the ELBO.

With ``rho = 1`` CVI is the fixed-point iteration ``s <- G(s)``: the sites
``s`` are replaced by their targets ``G(s)`` computed at the posterior they
define.  It converges linearly; when some direction has a negative or a near-one
eigenvalue it zig-zags or crawls (logistic regression with poorly determined
points: a ratio of about 0.75 per iteration).  Anderson acceleration (type II,
"Anderson mixing") extrapolates from the last ``depth`` pairs
``(s_j, G(s_j))``: with residuals ``f_j = G(s_j) - s_j``,

.. math:: \\gamma = \\arg\\min_\\gamma \\| f_k - \\Delta F \\gamma \\|, \\qquad
          s_{k+1} = G(s_k) - \\Delta G \\gamma,

where the columns of ``Delta F`` and ``Delta G`` are successive differences.
The engine records the pair of every iteration while convergence is slow
(:meth:`AndersonAccelerator.record`), extrapolated or not, and restarts the
history after a gap, so the differences are those of consecutive iterates (the
secants of the map); recording only when extrapolating mixed pairs iterations
apart and took 1 (informed start) and 4 (from the prior) more iterations on
breast-cancer logistic regression.
The engine only proposes this point: it is accepted when the posterior is valid
and the exact ELBO does not decrease, otherwise the ordinary damped step is
taken.  With several blocks the map is a whole sweep of block updates, and the
pair is (all sites before the sweep, all sites after it).  The history lives in two preallocated ring buffers of differences, and
``gamma`` comes from the ``depth x depth`` normal equations (with a relative
ridge), so an iteration costs ``O(depth * P)`` arithmetic and no allocation of
``P``-sized arrays beyond the proposal itself.
"""

import numpy as np


class AndersonAccelerator:
    """Keeps the last ``depth`` differences of (residuals, targets) and proposes extrapolated sites.

    Parameters
    ----------
    depth : int
        Number of differences used (``m`` in the literature).
    """

    def __init__(self, depth=5):
        self.depth = int(depth)
        self.reset()

    def reset(self):
        """Forget the history (after the fixed-point map changed, e.g. new hyperparameters)."""
        self._delta_f = self._delta_g = None
        self._last_f = self._last_g = None
        self._count = self._next = 0

    @property
    def size(self):
        """Length of the flattened sites the history is about (None before the first call)."""
        return None if self._last_f is None else self._last_f.shape[0]

    def record(self, sites, targets):
        """Add the pair ``(sites, targets)`` of this iteration to the history.

        The engine records consecutive iterations, extrapolated or not (and
        resets the history after a gap), so that it holds the differences of
        consecutive iterates.

        Parameters
        ----------
        sites, targets : ndarray, shape (P,)
            Flattened current sites and their targets ``G(sites)``; ``targets``
            is kept (not copied): the caller must not change it afterwards.
        """
        residual = targets - sites
        if self._last_f is None or self._last_f.shape != residual.shape:
            self.reset()
            size = residual.shape[0]
            self._delta_f = np.zeros((self.depth, size))
            self._delta_g = np.zeros((self.depth, size))
        else:
            row = self._next
            np.subtract(residual, self._last_f, out=self._delta_f[row])
            np.subtract(targets, self._last_g, out=self._delta_g[row])
            self._next = (row + 1) % self.depth
            self._count = min(self._count + 1, self.depth)
        self._last_f, self._last_g = residual, targets

    def propose(self, metric=None):
        """The extrapolated sites from the history up to the last recorded pair, or None without history.

        Parameters
        ----------
        metric : ndarray, shape (P,), optional
            Weights of the least-squares norm of the residuals (default: all 1).
            A site that stands for ``w`` copies of a data point holds ``w``
            times a copy's parameters; weight ``1 / w`` makes the proposal the
            one the data with the copies written out would give.
        """
        if not self._count:
            return None
        used = slice(0, self._count)
        delta_f, delta_g = self._delta_f[used], self._delta_g[used]
        residual = self._last_f
        weighted = delta_f if metric is None else delta_f * metric
        gram = weighted @ delta_f.T
        rhs = weighted @ residual
        ridge = 1e-12 * np.trace(gram) + 1e-300
        try:
            coef = np.linalg.solve(gram + ridge * np.eye(self._count), rhs)
        except np.linalg.LinAlgError:
            return None
        proposal = self._last_g - coef @ delta_g
        return proposal if np.all(np.isfinite(proposal)) else None

    def state(self):
        """The history as arrays, for saving a fit (empty before the first call)."""
        if self._last_f is None:
            return {}
        return {"delta_f": self._delta_f.copy(), "delta_g": self._delta_g.copy(),
                "last_f": self._last_f.copy(), "last_g": self._last_g.copy(),
                "counters": np.array([self._count, self._next])}

    def set_state(self, state):
        """Restore :meth:`state`."""
        self.reset()
        if state:
            self._delta_f, self._delta_g = np.array(state["delta_f"]), np.array(state["delta_g"])
            self._last_f, self._last_g = np.array(state["last_f"]), np.array(state["last_g"])
            self._count, self._next = (int(c) for c in state["counters"])
