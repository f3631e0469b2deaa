"""Small models following the ngvi protocol, with gradients and curvatures in closed form.

``LinearRegression`` (known noise variance) and ``LogisticRegression``; both are
vectorised over a leading axis of weight samples like the MLP of efvi.models.nn.
"""

import numpy as np
from scipy.special import expit


def _as_float(X, y):
    return np.asarray(X, dtype=float), np.asarray(y, dtype=float)


class _Linear:
    """Shared plumbing: parameters are the weights of x; ``predict_outputs`` is X w."""

    def __init__(self, n_features):
        self.n_params = n_features

    def init_params(self, rng):
        return np.zeros(self.n_params)

    def validate(self, X, y):
        X, y = _as_float(X, y)
        if X.ndim != 2 or X.shape[1] != self.n_params or y.shape != (X.shape[0],):
            raise ValueError(f"X must be (B, {self.n_params}) and y (B,); got {X.shape} and {y.shape}")
        return X, y

    def predict_outputs(self, params, X):
        return params @ X.T

    def log_lik_and_grads(self, params, X, y, curvature=None):
        params = np.asarray(params, dtype=float)
        f = self.predict_outputs(params, X)
        log_lik, residual, weight = self._pointwise(f, y)
        grad = residual @ X
        if curvature is None:
            curv = None
        elif curvature == "squared_gradients":
            curv = residual ** 2 @ X ** 2
        elif curvature == "gauss_newton":
            curv = weight @ X ** 2
        elif curvature in ("hessian", "gauss_newton_full"):
            if params.ndim != 1:
                raise ValueError(f"{curvature} needs a single parameter vector")
            full = (X * weight[:, None]).T @ X
            curv = -full if curvature == "hessian" else full
        else:
            raise ValueError(f"unknown curvature {curvature!r}")
        return log_lik.sum(axis=-1), grad, curv


class LinearRegression(_Linear):
    """y ~ N(x^T w, noise_var)."""

    task = "regression"

    def __init__(self, n_features, noise_var):
        super().__init__(n_features)
        self.noise_var = noise_var

    def _pointwise(self, f, y):
        residual = (y - f) / self.noise_var
        log_lik = -0.5 * (y - f) ** 2 / self.noise_var - 0.5 * np.log(2 * np.pi * self.noise_var)
        return log_lik, residual, np.full(f.shape, 1.0 / self.noise_var)

    def predictive(self, params_samples, X):
        f = self.predict_outputs(params_samples, X)
        return f.mean(axis=0), f.var(axis=0) + self.noise_var


class LogisticRegression(_Linear):
    """y ~ Bernoulli(sigmoid(x^T w)), y in {0, 1}."""

    task = "classification"

    def _pointwise(self, f, y):
        p = expit(f)
        return y * f - np.logaddexp(0.0, f), y - p, p * (1 - p)

    def predictive(self, params_samples, X):
        p = expit(self.predict_outputs(params_samples, X)).mean(axis=0)
        return np.column_stack([1 - p, p])


def breast_cancer():
    """sklearn's breast-cancer data, standardised, with an intercept column: X (569, 31), y (569,)."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.column_stack([np.ones(len(X)), X]), y.astype(float)


class ExpectedLogistic(LogisticRegression):
    """A test double returning E_q of the gradient and curvature instead of their values at ``params``.

    Set ``q_mean`` (D,) and ``q_cov`` (D, D) before a step; every weight sample then
    sees the exact expectations (by Gauss-Hermite quadrature of the 1-D marginals
    ``a_n = x_n^T w``), so the optimiser's step is the one with exact expectations.
    """

    nodes, weights = np.polynomial.hermite_e.hermegauss(80)

    def _expect(self, fun, X):
        mean = X @ self.q_mean
        std = np.sqrt(np.einsum("nd,de,ne->n", X, self.q_cov, X))
        values = fun(mean[:, None] + std[:, None] * self.nodes)
        return values @ self.weights / np.sqrt(2 * np.pi)

    def log_lik_and_grads(self, params, X, y, curvature=None):
        params = np.asarray(params, dtype=float)
        p = self._expect(expit, X)
        weight = self._expect(lambda a: expit(a) * (1 - expit(a)), X)
        grad = (y - p) @ X
        log_lik = np.sum(self._expect(lambda a: y[:, None] * a - np.logaddexp(0.0, a), X))
        if curvature is None:
            curv = None
        elif curvature == "gauss_newton":
            curv = weight @ X ** 2
        elif curvature in ("hessian", "gauss_newton_full"):
            full = (X * weight[:, None]).T @ X
            curv = -full if curvature == "hessian" else full
        else:
            raise ValueError(f"no exact expectation for {curvature!r}")
        shape = params.shape[:-1]
        if shape:
            grad = np.broadcast_to(grad, shape + grad.shape)
            curv = None if curv is None else np.broadcast_to(curv, shape + curv.shape)
            log_lik = np.full(shape, log_lik)
        return log_lik, grad, curv
