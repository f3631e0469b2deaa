"""The Gaussian-mixture likelihood: each point from the component its assignment picks.

.. math:: p(x_i \\mid z_i, \\theta) = \\prod_k N(x_i; \\mu_k, \\Lambda_k^{-1})^{[z_i = k]}.

Blocks: a Categorical ``assignments`` block of batch shape ``(N,)`` over K
classes, and either a Normal-Wishart ``components`` block of batch shape
``(K,)`` (the joint posterior used by scikit-learn's BayesianGaussianMixture),
or, mean field, Gaussian ``means`` and Wishart ``precisions`` blocks of batch
shape ``(K,)``.  With ``l_ik = E_q[log N(x_i; mu_k, Lambda_k^{-1})]`` and
responsibilities ``r_ik = q(z_i = k)`` the sites are

* assignments: ``l_ik - l_iK`` (minimal Categorical coordinates);
* components (statistics ``(Lambda mu, -mu^T Lambda mu / 2, -Lambda / 2, log|Lambda| / 2)``):
  ``r_ik (x_i, 1, x_i x_i^T, 1)``, stored compactly as ``r`` (N, K);
* means: ``r_ik (E[Lambda_k] x_i, -E[Lambda_k] / 2)``;
* precisions: ``r_ik (1/2, -S_ik / 2)`` with ``S_ik = E[(x_i - mu_k)(x_i - mu_k)^T]``.

The mixing weights enter through :class:`efvi.inference.CategoricalDirichlet`.
"""

import numpy as np

from ...expfam import Categorical, Gaussian, NormalWishart, Wishart
from ...expfam.checks import as_float

from ..factor import Factor, FactorEval

_LOG_2PI = np.log(2.0 * np.pi)


class GaussianMixture(Factor):
    """Gaussian-mixture likelihood of data ``X`` given assignments and components.

    Parameters
    ----------
    X : array_like, shape (N, D)
    assignments : str
        Categorical block, batch shape (N,), K classes.
    components : str, optional
        NormalWishart block, batch shape (K,).
    means, precisions : str, optional
        Gaussian and Wishart blocks of batch shape (K,) (instead of ``components``).
    """

    conjugate = True

    def __init__(self, X, assignments, components=None, means=None, precisions=None):
        self.X = as_float(X, "X", ndim_min=2)
        if self.X.ndim != 2:
            raise ValueError(f"X must have shape (N, D); got {self.X.shape}")
        self.n_data = self.X.shape[0]
        if (components is None) == (means is None and precisions is None) or \
                (components is None and (means is None or precisions is None)):
            raise ValueError("give either components= (a NormalWishart block) or both means= "
                             "(Gaussian) and precisions= (Wishart)")
        self.roles = {"assignments": assignments}
        if components is not None:
            self.roles["components"] = components
        else:
            self.roles.update(means=means, precisions=precisions)

    def bind(self, blocks):
        n, dim = self.X.shape
        z = self._require_family(blocks, "assignments", Categorical)
        k = z.prior.natural[0].shape[-1] + 1
        if z.prior.batch_shape != (n,):
            raise ValueError(f"{self.describe()}: assignments must have batch shape ({n},); got "
                             f"{z.prior.batch_shape}")
        expected = {"components": NormalWishart, "means": Gaussian, "precisions": Wishart}
        for role, family in expected.items():
            if role in self.roles:
                block = self._require_family(blocks, role, family)
                event_dim = block.prior.natural[0 if role != "precisions" else 1].shape[-1]
                if block.prior.batch_shape != (k,) or event_dim != dim:
                    raise ValueError(
                        f"{self.describe()}: {role} must have batch shape ({k},) and dimension "
                        f"{dim}; got batch {block.prior.batch_shape}, dimension {event_dim}"
                    )
        self.n_components = k

    def local_blocks(self):
        return (self.roles["assignments"],)

    def init_sites(self, blocks):
        n, dim = self.X.shape
        k = self.n_components
        sites = {self.roles["assignments"]: (np.zeros((n, k - 1)),)}
        if "components" in self.roles:
            sites[self.roles["components"]] = (np.zeros((n, k)),)
        else:
            sites[self.roles["means"]] = (np.zeros((n, k, dim)), np.zeros((n, k, dim, dim)))
            sites[self.roles["precisions"]] = (np.zeros((n, k)), np.zeros((n, k, dim, dim)))
        return sites

    def evaluate(self, q, index=None, rng=None):
        x = self.X if index is None else self.X[index]
        first = q[self.roles["assignments"]].mean_params[0]
        first = first if index is None else first[index]
        resp = np.concatenate([first, 1.0 - first.sum(axis=-1, keepdims=True)], axis=-1)
        targets = {}
        if "components" in self.roles:
            loglik = self._normal_wishart_loglik(q[self.roles["components"]], x)
            targets[self.roles["components"]] = (resp,)
        else:
            loglik, scatter, e_prec = self._mean_field_loglik(q, x)
            targets[self.roles["means"]] = (
                resp[:, :, None] * np.einsum("kde,ne->nkd", e_prec, x),
                -0.5 * resp[:, :, None, None] * e_prec[None],
            )
            targets[self.roles["precisions"]] = (0.5 * resp, -0.5 * resp[:, :, None, None] * scatter)
        targets[self.roles["assignments"]] = (loglik[:, :-1] - loglik[:, -1:],)
        return FactorEval(float(np.sum(resp * loglik)), targets)

    @staticmethod
    def _normal_wishart_loglik(q, x):
        lam_mu, neg_half_quad, neg_half_prec, half_logdet = q.mean_params
        dim = x.shape[1]
        return (x @ lam_mu.T + neg_half_quad + np.einsum("nd,kde,ne->nk", x, neg_half_prec, x)
                + half_logdet - 0.5 * dim * _LOG_2PI)

    def _mean_field_loglik(self, q, x):
        m, second = q[self.roles["means"]].mean_params
        cov = second - m[:, :, None] * m[:, None, :]
        e_logdet, e_prec = q[self.roles["precisions"]].mean_params
        resid = x[:, None, :] - m[None]                                     # (N, K, D)
        scatter = resid[..., :, None] * resid[..., None, :] + cov[None]      # (N, K, D, D)
        quad = np.einsum("kde,nked->nk", e_prec, scatter)
        dim = x.shape[1]
        return 0.5 * e_logdet - 0.5 * dim * _LOG_2PI - 0.5 * quad, scatter, e_prec

    def message(self, block_name, sites, index=None):
        if block_name == self.roles["assignments"]:
            if index is None:
                return sites
            full = np.zeros((self.n_data, self.n_components - 1))
            full[index] = sites[0]
            return (full,)
        if block_name == self.roles.get("components"):
            x = self.X if index is None else self.X[index]
            resp = sites[0]
            counts = resp.sum(axis=0)
            return (resp.T @ x, counts, np.einsum("nk,nd,ne->kde", resp, x, x), counts)
        return tuple(s.sum(axis=0) for s in sites)
