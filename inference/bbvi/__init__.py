"""efvi.inference.bbvi: black-box variational inference with control variates.

The user writes the log joint ``log p(x, z)`` with ``autograd.numpy`` and
picks any registered exponential family for each block of ``z``; :func:`fit`
maximises the ELBO of the mean-field ``q`` with stochastic gradients
(Ranganath et al., 2014):

- score-function gradients in the natural parameters (Algorithm 1) with a
  leave-one-out baseline (the default), the optimal per-coordinate control
  variate ``a* = Cov(f, h) / Var(h)`` (Algorithm 2; Paisley et al., 2012), and
  Rao-Blackwellisation across blocks when the log joint is given as terms;
- reparameterisation gradients for Gaussian and DiagonalGaussian blocks
  (Kingma and Welling, 2014; Titsias and Lazaro-Gredilla, 2014);
- natural steps (the mean-parameter gradient, ``F^-1`` times the gradient)
  or Euclidean ones (SGD, Adam) on the natural parameters, backed off so
  that ``q`` stays valid;
- a stopping rule on the ELBO that accounts for the Monte Carlo error of its
  estimate, ``converged`` and ``message`` on the result, and save, load and
  :func:`resume` that continue a fit to the last bit.

:func:`gradient` gives one estimate (and its variance) without stepping.
``docs/bbvi.md`` explains the estimators.
"""

from .fit import GradientEstimate, fit, gradient, resume
from .result import BBVIResult

__all__ = ["fit", "resume", "gradient", "GradientEstimate", "BBVIResult"]
