"""Multivariate Gaussian observations with a Wishart precision (and a known or Gaussian mean).

.. math:: x_i \\sim N(\\mu, \\Lambda^{-1}), \\qquad \\Lambda \\sim \\mathcal{W}(\\nu, W),
          \\qquad \\mu \\text{ known or } \\mu \\sim N(m_0, S_0) \\text{ (mean field)}.

Sites, with ``S_i = E[(x_i - mu)(x_i - mu)^T] = (x_i - E mu)(x_i - E mu)^T + Cov(mu)``:

* on the Wishart block (statistics ``(log|Lambda|, Lambda)``): ``(1/2, -S_i / 2)``;
* on a Gaussian mean block (statistics ``(mu, mu mu^T)``): ``(E[Lambda] x_i, -E[Lambda] / 2)``.

``E_q[log p(x_i)] = E[log|Lambda|]/2 - (D/2) log(2 pi) - tr(E[Lambda] S_i)/2``.
"""

import numpy as np

from ...expfam import Gaussian, Wishart
from ...expfam.checks import as_float

from ..factor import FactorEval
from .._summed import SummedSitesFactor


class GaussianWishart(SummedSitesFactor):
    """Gaussian vectors with a Wishart precision-matrix block.

    Parameters
    ----------
    X : array_like, shape (N, D)
        Observations.
    precision : str
        Name of the Wishart block (batch shape ``()``, dimension D).
    mean : array_like (D,) or str, optional
        Known mean (default zeros) or the name of a Gaussian block of dimension D.
    """

    conjugate = True

    def __init__(self, X, precision, mean=None):
        self.X = as_float(X, "X", ndim_min=2)
        if self.X.ndim != 2:
            raise ValueError(f"X must have shape (N, D); got {self.X.shape}")
        self.n_data, dim = self.X.shape
        self.roles = {"precision": precision}
        self.known_mean = None
        if isinstance(mean, str):
            self.roles["mean"] = mean
        else:
            self.known_mean = np.zeros(dim) if mean is None else as_float(mean, "mean")
            if self.known_mean.shape != (dim,):
                raise ValueError(f"mean must have shape ({dim},); got {self.known_mean.shape}")

    def bind(self, blocks):
        super().bind(blocks)
        dim = self.X.shape[1]
        wishart = self._require_family(blocks, "precision", Wishart)
        if wishart.prior.batch_shape != () or wishart.prior.natural[1].shape[-1] != dim:
            raise ValueError(f"{self.describe()}: precision block must be a single {dim}x{dim} "
                             f"Wishart; got batch {wishart.prior.batch_shape}, dimension "
                             f"{wishart.prior.natural[1].shape[-1]}")
        if "mean" in self.roles:
            mean = self._require_family(blocks, "mean", Gaussian)
            if mean.prior.batch_shape != () or mean.prior.natural[0].shape[-1] != dim:
                raise ValueError(f"{self.describe()}: mean block must be a single {dim}-dimensional "
                                 "Gaussian")

    def evaluate(self, q, index=None, rng=None):
        x = self._rows(self.X, index)
        e_logdet, e_prec = q[self.roles["precision"]].mean_params
        if "mean" in self.roles:
            m_mu, second = q[self.roles["mean"]].mean_params
            cov_mu = second - np.outer(m_mu, m_mu)
        else:
            m_mu, cov_mu = self.known_mean, 0.0
        resid = x - m_mu
        scatter = resid[:, :, None] * resid[:, None, :] + cov_mu
        dim = x.shape[1]
        expected = np.sum(
            0.5 * e_logdet - 0.5 * dim * np.log(2 * np.pi)
            - 0.5 * np.einsum("ij,nij->n", e_prec, scatter)
        )
        targets = {self.roles["precision"]: (np.full(len(x), 0.5), -0.5 * scatter)}
        if "mean" in self.roles:
            targets[self.roles["mean"]] = (
                x @ e_prec, np.broadcast_to(-0.5 * e_prec, (len(x), dim, dim)).copy()
            )
        return FactorEval(float(expected), targets)
