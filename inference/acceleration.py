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
The engine only proposes this point: it is accepted when the posterior is valid
and the exact ELBO does not decrease, otherwise the ordinary damped step is
taken.  The cost is a small least-squares problem per iteration.
"""

import numpy as np


class AndersonAccelerator:
    """Keeps the last ``depth + 1`` (sites, targets) pairs and proposes extrapolated sites.

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
        self._points, self._targets = [], []

    def propose(self, sites, targets):
        """Record ``(sites, targets)`` and return the extrapolated sites, or None without history.

        Parameters
        ----------
        sites, targets : ndarray, shape (P,)
            Flattened current sites and their targets ``G(sites)``.
        """
        self._points.append(np.array(sites, dtype=float))
        self._targets.append(np.array(targets, dtype=float))
        if len(self._points) > self.depth + 1:
            self._points.pop(0)
            self._targets.pop(0)
        if len(self._points) < 2:
            return None
        residuals = np.stack([g - x for x, g in zip(self._points, self._targets)], axis=1)
        targets_hist = np.stack(self._targets, axis=1)
        delta_f = np.diff(residuals, axis=1)
        delta_g = np.diff(targets_hist, axis=1)
        scale = np.linalg.norm(delta_f, axis=0)
        keep = scale > 0
        if not np.any(keep):
            return None
        coef, *_ = np.linalg.lstsq(delta_f[:, keep] / scale[keep], residuals[:, -1], rcond=1e-10)
        proposal = targets_hist[:, -1] - (delta_g[:, keep] / scale[keep]) @ coef
        return proposal if np.all(np.isfinite(proposal)) else None

    def state(self):
        """The history as two arrays (rows: stored pairs), for saving a fit."""
        if not self._points:
            return {}
        return {"points": np.stack(self._points), "targets": np.stack(self._targets)}

    def set_state(self, state):
        """Restore :meth:`state`."""
        self.reset()
        if state:
            self._points = [np.array(p) for p in state["points"]]
            self._targets = [np.array(t) for t in state["targets"]]
