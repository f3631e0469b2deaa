"""Bayesian neural-network estimators in the scikit-learn style, trained by natural-gradient VI.

``fit`` builds an :class:`efvi.models.nn.MLP` for the data (a Bernoulli output
for two classes, a softmax for more, a Gaussian for regression), runs
``epochs`` passes of minibatch steps of the chosen optimiser of
:mod:`efvi.inference.ngvi` (IVON by default; Shen et al., 2024) and keeps
the optimiser, whose Gaussian posterior over the weights gives the
predictions their uncertainty: ``predict_proba`` averages the class
probabilities over weight samples, ``predict(X, return_std=True)`` returns
the predictive standard deviation of ``y``.
"""

import numpy as np

from ...expfam.checks import check_integer, check_positive
from ...inference import ngvi

from .. import likelihoods
from .._estimator import (BaseEstimator, ClassifierMixin, RegressorMixin, check_labels, check_fitted,
                          check_X, check_X_y)
from .._estimator_file import expect_array
from ._outputs import Softmax
from .mlp import MLP

OPTIMIZERS = {"ivon": ngvi.IVON, "vogn": ngvi.VOGN, "vadam": ngvi.Vadam, "vprop": ngvi.Vprop, "van": ngvi.VAN,
              "bbb": ngvi.BayesByBackprop, "adam": ngvi.Adam, "rmsprop": ngvi.RMSprop}
"""The ``optimizer=`` names and the classes they select."""

IVON_REGRESSION_LR = 0.03
"""IVON's default learning rate in regression, per unit of noise variance (tested at noise variances 0.01-1)."""


class _BayesianMLP(BaseEstimator):
    """Shared parameters, validation and training loop."""

    def __init__(self, hidden_layer_sizes=(64,), activation="relu", optimizer="ivon", lr=None, epochs=100,
                 batch_size=128, prior_precision=1.0, mc_samples=1, n_samples=100, seed=0, progress=False,
                 optimizer_options=None):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.optimizer = optimizer
        self.lr = lr
        self.epochs = epochs
        self.batch_size = batch_size
        self.prior_precision = prior_precision
        self.mc_samples = mc_samples
        self.n_samples = n_samples
        self.seed = seed
        self.progress = progress
        self.optimizer_options = optimizer_options

    def _forget_fit(self):
        """Drop what a previous fit learned (a refit may change the number of features)."""
        for name in [name for name in vars(self) if name.endswith("_") and not name.startswith("_")]:
            delattr(self, name)

    # ------------------------------------------------------------------ fitting
    def _layer_sizes(self, n_features, n_outputs):
        hidden = self.hidden_layer_sizes
        hidden = (hidden,) if isinstance(hidden, (int, np.integer)) else tuple(hidden)
        return [n_features, *hidden, n_outputs]

    def _build(self, n_features, n_data):
        """A new network for ``n_features`` inputs (``network_``) and its optimiser (``optimizer_``) for ``n_data`` points."""
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(map(repr, OPTIMIZERS))}; got {self.optimizer!r}")
        likelihood, n_outputs = self._output()
        self.network_ = MLP(self._layer_sizes(n_features, n_outputs), self.activation, likelihood=likelihood)
        options = dict(self.optimizer_options or {})
        options.setdefault("prior_precision", float(check_positive(self.prior_precision, "prior_precision")))
        if self.lr is not None:
            options.setdefault("lr", self.lr)
        options.update({k: v for k, v in self._default_options().items() if k not in options})
        if self.optimizer not in ("adam", "rmsprop"):
            options.setdefault("mc_samples", self.mc_samples)
        self.optimizer_ = OPTIMIZERS[self.optimizer](self.network_, n_data, seed=self.seed, **options)

    def _train(self, X, y):
        epochs = check_integer(self.epochs, "epochs", minimum=1)
        batch_size = min(check_integer(self.batch_size, "batch_size", minimum=1), X.shape[0])
        self._build(X.shape[1], X.shape[0])
        rng = np.random.default_rng(self.seed)
        losses = []
        epochs_iter = range(epochs)
        if self.progress:
            from tqdm.auto import tqdm
            epochs_iter = tqdm(epochs_iter, total=epochs, desc=f"{type(self).__name__} ({self.optimizer})",
                               unit="epoch")
        for _ in epochs_iter:
            order = rng.permutation(X.shape[0])
            total = 0.0
            for start in range(0, X.shape[0], batch_size):
                batch = order[start:start + batch_size]
                total += self.optimizer_.step(X[batch], y[batch]) * batch.shape[0]
            losses.append(total / X.shape[0])
            if self.progress:
                epochs_iter.set_postfix(loss=f"{losses[-1]:.4f}")
        self.loss_curve_ = np.array(losses)
        self.n_iter_ = epochs
        return self

    def _default_options(self):
        """Optimiser arguments the estimator sets unless given (none by default)."""
        return {}

    def _output(self):
        """The network's output likelihood and number of outputs (after ``fit`` has seen the targets)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ saving
    def _fitted_state(self):
        """The fitted attributes, with the optimiser's state (every attribute but its network) for the
        network and the optimiser, which :meth:`_restore_fitted` builds again."""
        state = super()._fitted_state()
        if "optimizer_" in state:
            del state["network_"]
            state["optimizer_"] = {name: value for name, value in vars(state["optimizer_"]).items() if name != "model"}
        return state

    def _restore_fitted(self, state):
        saved = state.pop("optimizer_")
        super()._restore_fitted(state)
        if not isinstance(saved, dict) or not isinstance(saved.get("n_data"), int):
            raise ValueError("optimizer_ must be the optimiser's attributes, n_data among them")
        self._build(self.n_features_in_, saved["n_data"])
        fresh = vars(self.optimizer_)
        for name, value in saved.items():
            if name not in fresh or not _same_kind(fresh[name], value):
                expected = "no such attribute" if name not in fresh else f"like {_describe(fresh[name])}"
                raise ValueError(f"optimizer_.{name} does not suit a {type(self.optimizer_).__name__} of this "
                                 f"network ({expected}); got {_describe(value)}")
            setattr(self.optimizer_, name, value)
        missing = sorted(set(fresh) - set(saved) - {"model"})
        if missing:
            raise ValueError(f"optimizer_ lacks the attributes {missing}")

    def _check_fitted_state(self):
        super()._check_fitted_state()
        expect_array(self, "loss_curve_", (None,))

    def _predictive(self, X):
        check_fitted(self, "optimizer_")
        X = check_X(self, X)
        n_samples = check_integer(self.n_samples, "n_samples", minimum=1)
        return self.optimizer_.predict(X, n_samples=n_samples, seed=self.seed)


class BayesianMLPClassifier(ClassifierMixin, _BayesianMLP):
    """A Bayesian multilayer-perceptron classifier trained by natural-gradient VI.

    Parameters
    ----------
    hidden_layer_sizes : int or tuple of int
        Units of each hidden layer (default one layer of 64).
    activation : {"relu", "tanh"}
    optimizer : {"ivon", "vogn", "vadam", "vprop", "van", "bbb", "adam", "rmsprop"}
        The optimiser of :mod:`efvi.inference.ngvi` (``"adam"`` and
        ``"rmsprop"`` give point estimates, without uncertainty).
    lr : float, optional
        Learning rate (default: the optimiser's own).
    epochs : int
        Passes over the data.
    batch_size : int
        Minibatch size (at most the number of samples).
    prior_precision : float
        Precision of the N(0, 1 / prior_precision) prior on every weight.
    mc_samples : int
        Weight samples per step (variational optimisers).
    n_samples : int
        Weight samples averaged by the predictions.
    seed : int
        Seeds the optimiser, the minibatch order and the predictions.
    progress : bool
        Show a progress bar over the epochs (tqdm).
    optimizer_options : dict, optional
        Further keyword arguments of the optimiser (e.g. ``{"betas": (0.9, 0.999)}``).

    Attributes
    ----------
    classes_ : ndarray, shape (n_classes,)
    n_features_in_ : int
    network_ : efvi.models.nn.MLP
    optimizer_ : the trained optimiser (its ``posterior`` is the weights' Gaussian)
    loss_curve_ : ndarray, shape (epochs,)
        Average negative log-likelihood estimate of each epoch's minibatches.
    """

    def fit(self, X, y):
        """Train on ``X`` (n, d) and labels ``y`` (n,) of any sortable type (two or more classes)."""
        self._forget_fit()
        X, y = check_X_y(self, X, y, y_numeric=False)
        check_labels(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        if self.classes_.shape[0] < 2:
            raise ValueError(f"y must contain at least two classes; got only 1 class: {self.classes_.tolist()}")
        return self._train(X, codes.astype(float))

    def _output(self):
        n_classes = self.classes_.shape[0]
        return (likelihoods.Bernoulli(), 1) if n_classes == 2 else (Softmax(), n_classes)

    def predict_proba(self, X):
        """Class probabilities averaged over ``n_samples`` posterior weight samples, shape (n, n_classes)."""
        return self._predictive(X)

    def predict(self, X):
        """The most probable class of each row, shape (n,)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


class BayesianMLPRegressor(RegressorMixin, _BayesianMLP):
    """A Bayesian multilayer-perceptron regressor trained by natural-gradient VI.

    Targets are standardised with the training mean and standard deviation;
    the Gaussian noise has variance ``noise_variance`` in those units.

    Parameters
    ----------
    noise_variance : float
        Observation noise variance of the standardised targets (default 0.1).
    lr : float, optional
        Learning rate (default: the optimiser's own, except IVON's, which is
        ``IVON_REGRESSION_LR * noise_variance``: the curvature of a Gaussian
        likelihood grows like the noise precision).
    hidden_layer_sizes, activation, optimizer, lr, epochs, batch_size, prior_precision, mc_samples,
    n_samples, seed, progress, optimizer_options :
        As :class:`BayesianMLPClassifier`.

    Attributes
    ----------
    n_features_in_, network_, optimizer_, loss_curve_ :
        As :class:`BayesianMLPClassifier`.
    y_mean_, y_scale_ : float
        The training targets' mean and standard deviation.
    """

    def __init__(self, hidden_layer_sizes=(64,), activation="relu", optimizer="ivon", lr=None, epochs=100,
                 batch_size=128, prior_precision=1.0, mc_samples=1, n_samples=100, seed=0, progress=False,
                 optimizer_options=None, noise_variance=0.1):
        super().__init__(hidden_layer_sizes, activation, optimizer, lr, epochs, batch_size, prior_precision,
                         mc_samples, n_samples, seed, progress, optimizer_options)
        self.noise_variance = noise_variance

    def fit(self, X, y):
        """Train on ``X`` (n, d) and real targets ``y`` (n,)."""
        self._forget_fit()
        X, y = check_X_y(self, X, y)
        self.y_mean_ = float(np.mean(y))
        self.y_scale_ = float(np.std(y)) if np.std(y) > 0 else 1.0
        return self._train(X, (y - self.y_mean_) / self.y_scale_)

    def _output(self):
        return likelihoods.Gaussian(variance=float(check_positive(self.noise_variance, "noise_variance"))), 1

    def _default_options(self):
        # IVON's first steps are gradient steps of size lr * (hess_init + delta) (its curvature adapts over
        # ~1 / (1 - beta2) steps) on a loss whose curvature grows like 1 / noise_variance: scale its rate
        if self.optimizer == "ivon":
            return {"lr": IVON_REGRESSION_LR * float(self.noise_variance)}
        return {}

    def predict(self, X, return_std=False):
        """Predictive mean of ``y`` (n,), and with ``return_std`` its standard deviation (n,) (noise included)."""
        mean, var = self._predictive(X)
        mean = mean * self.y_scale_ + self.y_mean_
        if return_std:
            return mean, np.sqrt(var) * self.y_scale_
        return mean


def _same_kind(fresh, saved):
    """Whether a saved optimiser attribute can replace a fresh one: arrays of one shape, or values of one type."""
    if isinstance(fresh, np.ndarray):
        return isinstance(saved, np.ndarray) and saved.shape == fresh.shape and saved.dtype.kind == fresh.dtype.kind
    if isinstance(fresh, float):
        return isinstance(saved, (int, float)) and not isinstance(saved, bool)
    return type(saved) is type(fresh) and (not isinstance(fresh, tuple) or len(saved) == len(fresh))


def _describe(value):
    return f"an array of shape {value.shape}" if isinstance(value, np.ndarray) else f"a {type(value).__name__}"


__all__ = ["BayesianMLPClassifier", "BayesianMLPRegressor", "OPTIMIZERS"]
