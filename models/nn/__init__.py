r"""Neural networks whose weights carry a Gaussian posterior, trained by natural-gradient VI.

:class:`MLP` is a dense multilayer perceptron on numpy (float64) with
hand-written forward and backward passes, a likelihood on its outputs
(``likelihoods.Gaussian(variance=...)``, ``likelihoods.Bernoulli()`` with the
logit link, or :class:`Softmax` for K >= 2 classes) and the curvature the
optimisers of :mod:`efvi.inference.ngvi` need.  :class:`BayesianMLPClassifier`
and :class:`BayesianMLPRegressor` train one with an optimiser in the
scikit-learn style.  Those optimisers never import
this package: they use any object with the protocol below (duck typing).

The model protocol
------------------
``n_params`` : int
    P, the length of the flat float64 parameter vector (layer by layer:
    W (d_in x d_out) row-major, then b).
``n_outputs`` : int
    The number of outputs per example.
``task`` : ``"regression"`` or ``"classification"``
    What the outputs predict.
``init_params(rng) -> ndarray (P,)``
    An initial mean (He / Glorot / LeCun normal weights, zero biases);
    ``rng`` is a ``numpy.random.Generator`` or a seed.
``log_lik_and_grads(params, X, y, curvature=None) -> (log_lik, grad, curv)``
    ``params`` of shape (P,) or (S, P) (S Monte Carlo weight samples, one
    batched matmul per layer).  ``log_lik``: the *sum* over the batch of
    :math:`\log p(y_n \mid x_n, w)`, shape () or (S,); ``grad``: its gradient,
    (P,) or (S, P); ``curv``:

    * ``None`` for ``curvature=None``;
    * ``"squared_gradients"``: :math:`\sum_n g_n^{\circ 2}` of the per-example
      gradients, (P,) or (S, P), by :math:`(A^{\circ 2})^\top \Delta^{\circ 2}`
      per dense layer (no per-example tensors);
    * ``"gauss_newton"``: the diagonal of :math:`\sum_n J_n^\top \Lambda_n J_n`,
      the generalised Gauss-Newton matrix of the *negative* log-likelihood
      (:math:`\Lambda_n` = :math:`1/\sigma^2`, :math:`p(1-p)`,
      :math:`\mathrm{diag}(p) - pp^\top`), (P,) or (S, P);
    * ``"hessian"``: the exact (P, P) Hessian of the summed log-likelihood
      (autograd; (P,) params only: the small-P route of VAN);
    * ``"gauss_newton_full"``: the full (P, P) Gauss-Newton matrix of the
      negative log-likelihood ((P,) params only).

``predict_outputs(params, X)``
    The outputs f (the likelihood's latent), (B, K) or (S, B, K).
``predictive(params_samples, X)``
    Classification: class probabilities averaged over the samples, (B, K)
    (``[1 - p, p]`` for Bernoulli); regression: ``(mean, var)`` of y, each
    (B,), of the mixture of the samples' Gaussians.
``validate(X, y)``
    Named ``ValueError`` for mismatched shapes, complex or non-finite X,
    labels outside the likelihood's support; returns float64 arrays.

Example
-------
>>> import numpy as np
>>> from efvi.models import likelihoods, nn
>>> net = nn.MLP([3, 16, 1], activation="tanh", likelihood=likelihoods.Bernoulli())
>>> w = net.init_params(0)
>>> X, y = np.ones((5, 3)), np.array([0.0, 1.0, 1.0, 0.0, 1.0])
>>> log_lik, grad, curv = net.log_lik_and_grads(w, X, y, curvature="squared_gradients")
>>> grad.shape == curv.shape == (net.n_params,)
True
"""

from .._lazy import lazy_names
from ._outputs import Softmax
from .mlp import CURVATURES, MLP

__all__ = ["MLP", "Softmax", "CURVATURES", "BayesianMLPClassifier", "BayesianMLPRegressor"]

# the estimators import scikit-learn: on first use only
__getattr__ = lazy_names(__name__, {"BayesianMLPClassifier": "estimator", "BayesianMLPRegressor": "estimator"})
