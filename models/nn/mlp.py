r"""A dense multilayer perceptron with hand-written gradients and curvature, for natural-gradient VI.

The network maps inputs :math:`x_n` to outputs :math:`f_n = f(x_n; w)` (the
likelihood's latent) through dense layers
:math:`h_l = \sigma(h_{l-1} W_l + b_l)`, the last one linear.  All weights
and biases form one flat float64 vector :math:`w` of length ``n_params``,
layer by layer: :math:`W_l` (``d_in x d_out``, row-major), then :math:`b_l`.

Every method takes ``params`` of shape ``(P,)`` or ``(S, P)`` (``S`` Monte
Carlo weight samples); the sample axis is batched through every matmul.  The
curvature ``"gauss_newton"`` is the diagonal of

.. math::

    G = \sum_n J_n^\top \Lambda_n J_n, \qquad J_n = \partial f_n / \partial w, \quad
    \Lambda_n = -\partial^2 \log p(y_n \mid f_n) / \partial f_n^2 = L_n L_n^\top,

computed as :math:`\operatorname{diag} G = \sum_n \sum_m (J_n^\top L_{n,:m})^{\circ 2}`:
one backward pass per column of :math:`L_n` (one for Gaussian and Bernoulli
outputs, K for a softmax: the passes through the hidden layers above the
first cost K times the gradient's; the weight sums, including the first
layer's, are one matmul each), then the squared-gradient identity of
:mod:`._dense`.
"""

import numpy as np

from ...expfam.checks import as_float

from . import _dense
from ._autodiff import log_lik_hessian
from ._outputs import output_for

CURVATURES = (None, "squared_gradients", "gauss_newton", "hessian", "gauss_newton_full")


class MLP:
    """A dense multilayer perceptron with a likelihood on its outputs.

    Parameters
    ----------
    layer_sizes : sequence of int
        ``[d_in, hidden..., n_outputs]``, at least two entries, each >= 1.
    activation : {"relu", "tanh"}
        The hidden layers' activation; the output layer is linear.
    likelihood : likelihood object
        ``likelihoods.Gaussian(variance=...)`` (regression, 1 output),
        ``likelihoods.Bernoulli()`` (logit link, 1 output) or
        :class:`efvi.models.nn.Softmax` (``K >= 2`` outputs).

    Attributes
    ----------
    n_params : int
        Length P of the flat parameter vector.
    n_outputs : int
        K, the number of output units.
    n_classes : int or None
        Number of classes (2 for Bernoulli, K for softmax); None for regression.
    task : {"regression", "classification"}
    shapes : tuple of (int, int)
        ``(d_in, d_out)`` of each layer.
    """

    def __init__(self, layer_sizes, activation="relu", *, likelihood):
        sizes = tuple(layer_sizes) if np.ndim(layer_sizes) == 1 else None
        if (sizes is None or len(sizes) < 2
                or not all(isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size >= 1
                           for size in sizes)):
            raise ValueError(f"layer_sizes must be a sequence of at least two integers >= 1 "
                             f"([d_in, hidden..., n_outputs]); got {layer_sizes!r}")
        if activation not in _dense.ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_dense.ACTIVATIONS)}; got {activation!r}")
        self._output = output_for(likelihood)
        if not self._output.n_outputs_ok(sizes[-1]):
            raise ValueError(f"layer_sizes must end in {self._output.outputs_wanted} for likelihood "
                             f"{likelihood!r}; got {sizes[-1]}")
        self.layer_sizes = tuple(int(size) for size in sizes)
        self.activation = activation
        self.likelihood = likelihood
        self.shapes = tuple(zip(self.layer_sizes[:-1], self.layer_sizes[1:]))
        self.n_params = sum(n_in * n_out + n_out for n_in, n_out in self.shapes)
        self.n_outputs = self.layer_sizes[-1]
        self.n_classes = self._output.n_classes(self.n_outputs)
        self.task = self._output.task

    def __repr__(self):
        return f"MLP({list(self.layer_sizes)}, activation={self.activation!r}, likelihood={self.likelihood!r})"

    # -- parameters -------------------------------------------------------------------------------

    def unflatten(self, params):
        """Views ``[(W_1, b_1), ...]`` of a flat vector: W shape (..., d_in, d_out), b shape (..., d_out).

        Parameters
        ----------
        params : ndarray, shape (..., P)
        """
        params = np.asarray(params)
        lead, layers, offset = params.shape[:-1], [], 0
        for n_in, n_out in self.shapes:
            weights = params[..., offset:offset + n_in * n_out].reshape(lead + (n_in, n_out))
            offset += n_in * n_out
            layers.append((weights, params[..., offset:offset + n_out]))
            offset += n_out
        return layers

    def flatten(self, layers):
        """The flat vector, shape (..., P), of ``[(W_1, b_1), ...]`` (the inverse of :meth:`unflatten`)."""
        parts = []
        for (weights, bias), (n_in, n_out) in zip(layers, self.shapes):
            weights, bias = np.asarray(weights, dtype=np.float64), np.asarray(bias, dtype=np.float64)
            parts += [weights.reshape(weights.shape[:-2] + (n_in * n_out,)), bias]
        return np.concatenate(parts, axis=-1)

    def init_params(self, rng):
        """An initial mean: He-normal weights before ReLU, Glorot-normal before tanh, LeCun for the output layer.

        Parameters
        ----------
        rng : numpy.random.Generator or int
            A generator, or a seed for one.

        Returns
        -------
        ndarray, shape (P,)
            Weights drawn with standard deviations ``sqrt(2 / d_in)`` (ReLU),
            ``sqrt(2 / (d_in + d_out))`` (tanh), ``sqrt(1 / d_in)`` (output layer); biases 0.
        """
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        layers = []
        for index, (n_in, n_out) in enumerate(self.shapes):
            if index == len(self.shapes) - 1:
                scale = np.sqrt(1.0 / n_in)
            elif self.activation == "relu":
                scale = np.sqrt(2.0 / n_in)
            else:
                scale = np.sqrt(2.0 / (n_in + n_out))
            layers.append((scale * rng.standard_normal((n_in, n_out)), np.zeros(n_out)))
        return self.flatten(layers)

    # -- validation -------------------------------------------------------------------------------

    def validate(self, X, y=None):
        """Check a batch and return it as float64 arrays.

        Parameters
        ----------
        X : array_like, shape (B, d_in)
            Finite, real inputs.
        y : array_like, shape (B,), optional
            Targets in the likelihood's support (finite reals; 0 or 1; integers 0..K-1).

        Returns
        -------
        X : ndarray, shape (B, d_in)
        y : ndarray, shape (B,)
            Only when ``y`` is given.

        Raises
        ------
        ValueError
            Naming ``X`` or ``y``: wrong shape, complex or non-finite values,
            labels outside the support.
        """
        X = as_float(X, "X")
        if X.ndim != 2 or X.shape[1] != self.layer_sizes[0]:
            raise ValueError(f"X must have shape (B, {self.layer_sizes[0]}) for layer_sizes "
                             f"{list(self.layer_sizes)}; got shape {X.shape}")
        if y is None:
            return X
        y = as_float(y, "y")
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},) to match X of shape {X.shape}; got shape {y.shape}")
        bad = self._output.outside_support(y, self.n_outputs)
        if np.any(bad):
            index = int(np.argmax(bad))
            raise ValueError(f"y must contain {self._output.support} (K = {self.n_outputs}); got "
                             f"{y[index].item()!r} at index {index} ({int(bad.sum())} invalid)")
        return X, y

    def _as_samples(self, params, name="params"):
        """``params`` as a C-contiguous (S, P) float64 array, and whether it was a single (P,) vector."""
        params = as_float(params, name)
        if params.ndim not in (1, 2) or params.shape[-1] != self.n_params:
            raise ValueError(f"{name} must have shape ({self.n_params},) or (S, {self.n_params}); "
                             f"got shape {params.shape}")
        return np.ascontiguousarray(params.reshape(-1, self.n_params)), params.ndim == 1

    # -- the protocol -----------------------------------------------------------------------------

    def predict_outputs(self, params, X):
        """Network outputs (the likelihood's latent f).

        Parameters
        ----------
        params : ndarray, shape (P,) or (S, P)
        X : array_like, shape (B, d_in)

        Returns
        -------
        ndarray, shape (B, K) or (S, B, K)
        """
        samples, single = self._as_samples(params)
        outputs, _ = _dense.forward(self.unflatten(samples), self.validate(X), self.activation)
        return outputs[0] if single else outputs

    def predictive(self, params_samples, X):
        """The predictive distribution averaged over weight samples.

        Parameters
        ----------
        params_samples : ndarray, shape (S, P) or (P,)
        X : array_like, shape (B, d_in)

        Returns
        -------
        ndarray, shape (B, n_classes)
            Classification: averaged class probabilities (``[1 - p, p]`` for Bernoulli).
        (mean, var) : ndarrays, shape (B,)
            Regression: moments of y under the equal mixture of the samples'
            Gaussians, ``var = variance + mean_s f_s^2 - (mean_s f_s)^2``.
        """
        samples, _ = self._as_samples(params_samples, "params_samples")
        outputs, _ = _dense.forward(self.unflatten(samples), self.validate(X), self.activation)
        return self._output.predictive(outputs)

    def log_lik_and_grads(self, params, X, y, curvature=None):
        """The summed log-likelihood of a batch, its gradient and optionally a curvature.

        Parameters
        ----------
        params : ndarray, shape (P,) or (S, P)
        X : array_like, shape (B, d_in)
        y : array_like, shape (B,)
        curvature : {None, "squared_gradients", "gauss_newton", "hessian", "gauss_newton_full"}
            * ``"squared_gradients"``: ``sum_n g_n**2`` of the per-example gradients
              ``g_n`` of ``log p(y_n | x_n, w)``, shape (P,) or (S, P);
            * ``"gauss_newton"``: the diagonal of ``sum_n J_n^T Lambda_n J_n``, the
              generalised Gauss-Newton matrix of the *negative* log-likelihood, (P,) or (S, P);
            * ``"hessian"``: the exact (P, P) Hessian of the summed log-likelihood
              (by autograd; one (P,) params only);
            * ``"gauss_newton_full"``: the full (P, P) Gauss-Newton matrix of the
              negative log-likelihood (one (P,) params only).

        Returns
        -------
        log_lik : float ndarray, shape () or (S,)
            ``sum_n log p(y_n | x_n, w)``.
        grad : ndarray, shape (P,) or (S, P)
        curv : ndarray or None
        """
        if curvature not in CURVATURES:
            raise ValueError(f"curvature must be one of {list(CURVATURES)}; got {curvature!r}")
        samples, single = self._as_samples(params)
        if curvature in ("hessian", "gauss_newton_full") and not single:
            raise ValueError(f"curvature={curvature!r} takes params of shape ({self.n_params},); "
                             f"got shape {np.shape(params)}")
        X, y = self.validate(X, y)
        layers = self.unflatten(samples)
        outputs, cache = _dense.forward(layers, X, self.activation)
        log_lik = self._output.log_lik(outputs, y).sum(axis=-1)
        errors = _dense.backward(layers, cache, self.activation, self._output.residual(outputs, y)[:, None])
        grad = np.empty_like(samples)
        _dense.gradient_sums(cache, errors, self.unflatten(grad))
        if curvature == "squared_gradients":
            curv = np.empty_like(samples)
            _dense.squared_sums(cache, errors, self.unflatten(curv))
        elif curvature == "gauss_newton":
            factor_errors = _dense.backward(layers, cache, self.activation, self._output.precision_factor(outputs))
            curv = np.empty_like(samples)
            _dense.squared_sums(cache, factor_errors, self.unflatten(curv))
        elif curvature == "gauss_newton_full":
            factor_errors = _dense.backward(layers, cache, self.activation, self._output.precision_factor(outputs))
            per_example = self.flatten(_dense.per_example_gradients(cache, factor_errors))   # (M, B, P)
            per_example = per_example.reshape(-1, self.n_params)
            curv = per_example.T @ per_example
        elif curvature == "hessian":
            curv = log_lik_hessian(samples[0], self.shapes, X, y, self.activation, self._output)
        else:
            curv = None
        if single:
            log_lik, grad = log_lik[0], grad[0]
            if curv is not None and curv.ndim == 2 and curvature in ("squared_gradients", "gauss_newton"):
                curv = curv[0]
        return log_lik, grad, curv
