r"""The variational predictive natural gradient (VPNG) of Tang and Ranganath.

The q-Fisher natural gradient :math:`F_q^{-1} \nabla \mathcal L` measures how
the variational parameters :math:`\lambda` move :math:`q`, whatever the model:
when the model correlates what :math:`q` factorises it leaves the gradient's
bad direction alone.  VPNG preconditions with the Fisher of the variational
predictive distribution :math:`r(x' \mid \lambda) = \int p(x' \mid z)
q(z; \lambda) \, dz` instead (their eq. 3),

.. math:: F_r = \mathbb E_{x' \sim r}\big[\nabla_\lambda \log r(x' \mid \lambda)
          \nabla_\lambda \log r(x' \mid \lambda)^\top\big], \qquad
          \delta\lambda = (F_r + \mu I)^{-1} \nabla_\lambda \mathcal L .

What is here:

- :func:`linear_gaussian_fisher`: :math:`F_r` in closed form for
  Gaussian-linear models (Theorem 1 is a special case);
- :func:`predictive_fisher_mc` (nested Monte Carlo of :math:`F_r`) and
  :func:`gauss_newton_fisher` (the seed's :math:`F_{r'}`) for reparameterisable
  models, with :class:`GaussianOutput` and :class:`BernoulliOutput`;
- :class:`KroneckerFisher`: block-diagonal K-FAC of :math:`F_{r'}` for dense
  networks such as a VAE;
- :class:`VPNG`: the optimiser (RMSprop step sizes on the damped natural
  direction; plain RMSprop without curvature);
- :class:`BivariateToy`: the toy of section 3, with the corrected ELBO gradient.

See ``docs/vpng.md``.
"""

from .kfac import KroneckerFisher
from .linear_gaussian import linear_gaussian_fisher
from .montecarlo import gauss_newton_fisher, predictive_fisher_mc
from .optimizer import VPNG
from .outputs import BernoulliOutput, GaussianOutput
from .toy import BivariateToy, cosine, toy_covariance

__all__ = ["linear_gaussian_fisher", "predictive_fisher_mc", "gauss_newton_fisher", "GaussianOutput",
           "BernoulliOutput", "KroneckerFisher", "VPNG", "BivariateToy", "cosine", "toy_covariance"]
