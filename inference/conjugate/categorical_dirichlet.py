"""Categorical draws with Dirichlet-distributed probabilities.

.. math:: z_i \\sim \\mathrm{Categorical}(\\pi), \\qquad \\pi \\sim \\mathrm{Dir}(\\alpha).

The draws are either observed labels or a latent Categorical block (the
assignments of a mixture).  With the Dirichlet statistic ``log pi`` the site of
point ``i`` on the weights is ``E_q[onehot(z_i)]`` (the responsibilities
``r_i``), and ``E_q[log p(z_i | pi)] = sum_k r_ik E[log pi_k]``.

For a latent assignment block this factor *is* the prior of ``z_i``: it
replaces the block's own (placeholder) prior ``p0``, by sending the site
``E[log pi_k] - E[log pi_K] - eta0_k`` (minimal Categorical coordinates) and
subtracting ``E_q[log p0(z_i)]`` from its expected log-density, so the
ELBO is that of the model without ``p0`` whatever placeholder was given.
"""

import numpy as np

from ...expfam import Categorical, Dirichlet

from ..factor import Factor, FactorEval


class CategoricalDirichlet(Factor):
    """Categorical labels or assignments drawn with Dirichlet weights.

    Parameters
    ----------
    on : str
        Name of the Dirichlet block of weights (batch shape ``()``, K classes).
    labels : array_like of int, shape (N,), optional
        Observed labels in ``range(K)``.
    assignments : str, optional
        Name of a Categorical block with batch shape ``(N,)`` (exactly one of
        ``labels`` and ``assignments``).
    """

    conjugate = True

    def __init__(self, on, labels=None, assignments=None):
        if (labels is None) == (assignments is None):
            raise ValueError("give exactly one of labels= (observed) and assignments= (a block name)")
        self.roles = {"on": on}
        self.labels = None
        if labels is not None:
            arr = np.asarray(labels)
            if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer) or np.any(arr < 0):
                raise ValueError(
                    f"labels must be a 1-D array of non-negative integers; got {arr.dtype} "
                    f"array of shape {arr.shape}"
                )
            self.labels = arr
            self.n_data = arr.shape[0]
        else:
            self.roles["assignments"] = assignments

    def bind(self, blocks):
        weights = self._require_family(blocks, "on", Dirichlet)
        if weights.prior.batch_shape != ():
            raise ValueError(f"{self.describe()}: the weights block must have batch shape (); "
                             f"got {weights.prior.batch_shape}")
        self.n_classes = weights.prior.natural[0].shape[-1]
        if self.labels is not None:
            if self.labels.max(initial=0) >= self.n_classes:
                raise ValueError(f"labels must lie in range({self.n_classes}); got max "
                                 f"{self.labels.max()}")
            return
        z = self._require_family(blocks, "assignments", Categorical)
        if len(z.prior.batch_shape) != 1 or z.prior.natural[0].shape[-1] != self.n_classes - 1:
            raise ValueError(
                f"{self.describe()}: assignments block must be a Categorical over "
                f"{self.n_classes} classes with batch shape (N,); got batch "
                f"{z.prior.batch_shape} over {z.prior.natural[0].shape[-1] + 1} classes"
            )
        self.n_data = z.prior.batch_shape[0]
        self._z_prior = z.prior

    def local_blocks(self):
        return () if self.labels is not None else (self.roles["assignments"],)

    def init_sites(self, blocks):
        sites = {self.roles["on"]: (np.zeros((self.n_data, self.n_classes)),)}
        if self.labels is None:
            sites[self.roles["assignments"]] = (np.zeros((self.n_data, self.n_classes - 1)),)
        return sites

    def responsibilities(self, q, index=None):
        """``E_q[onehot(z_i)]``, shape (N, K) (or the rows ``index``)."""
        if self.labels is not None:
            rows = self.labels if index is None else self.labels[index]
            return np.eye(self.n_classes)[rows]
        first = q[self.roles["assignments"]].mean_params[0]
        first = first if index is None else first[index]
        return np.concatenate([first, 1.0 - first.sum(axis=-1, keepdims=True)], axis=-1)

    def evaluate(self, q, index=None, rng=None):
        e_log_pi = q[self.roles["on"]].mean_params[0]
        resp = self.responsibilities(q, index)
        expected = float(np.sum(resp @ e_log_pi))
        targets = {self.roles["on"]: (resp,)}
        if self.labels is None:
            eta0 = self._z_prior.natural[0] if index is None else self._z_prior.natural[0][index]
            prior_rows = self._z_prior if index is None else self._z_prior[index]
            mean_rows = tuple(m if index is None else m[index] for m in q[self.roles["assignments"]].mean_params)
            expected -= float(np.sum(Categorical.inner(prior_rows.natural, mean_rows)
                                     - prior_rows.log_partition_value()))
            site = np.broadcast_to(e_log_pi[:-1] - e_log_pi[-1], eta0.shape) - eta0
            targets[self.roles["assignments"]] = (site,)
        return FactorEval(expected, targets)

    def message(self, block_name, sites, index=None):
        if block_name == self.roles["on"]:
            return (sites[0].sum(axis=0),)
        if index is None:
            return (sites[0],)
        full = np.zeros((self.n_data, self.n_classes - 1))
        full[index] = sites[0]
        return (full,)
