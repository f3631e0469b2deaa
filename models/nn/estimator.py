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
from .._estimator_file import expect_array, expect_number
from ._noise import NOISE_PRIOR, mean_squared_residual, noise_posterior, rescale_likelihood_state
from ._outputs import Softmax
from .mlp import MLP

OPTIMIZERS = {"ivon": ngvi.IVON, "vogn": ngvi.VOGN, "vadam": ngvi.Vadam, "vprop": ngvi.Vprop, "van": ngvi.VAN,
              "bbb": ngvi.BayesByBackprop, "adam": ngvi.Adam, "rmsprop": ngvi.RMSprop}
"""The ``optimizer=`` names and the classes they select."""

CLASSIFIER_LR = {"ivon": 0.1, "vogn": 0.1, "vadam": 0.03, "vprop": 1e-3, "van": 1e-2, "bbb": 1e-3, "adam": 3e-3,
                 "rmsprop": 1e-3}
"""The classifier's default learning rate of each optimiser (``lr=None``).

Chosen by measurement (``benchmarks/bench_nn_defaults.py``: everything else at
the defaults, one hidden layer of 64 units, 100 epochs, a fixed 70/30 split):
on breast cancer and digits, the rate of {1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3}
whose test accuracy is within 1 point, and log-loss within 5%, of the best of
{1e-3, 1e-2, 0.1} on both data sets.  Every optimiser has one but Adam, the
point-estimate baseline: no rate is within 5% of the best log-loss on both
(3e-3: 6% above it on breast cancer, within on digits).  VAN was measured on
breast cancer only, with 8 hidden units (0.1 diverges there).
"""

REGRESSOR_LR = {"ivon": 0.3, "vogn": 0.1, "vadam": 0.03, "vprop": 1e-3, "van": 1e-2, "bbb": 1e-2, "adam": 1e-2,
                "rmsprop": 1e-3}
"""The regressor's default learning rate of each optimiser (``lr=None``); with a fixed noise IVON's is
per unit of the standardised noise variance.

Chosen as :data:`CLASSIFIER_LR` was, on a 1-D regression (1000 points,
``y = sin(x) + N(0, 0.3^2)``, the noise learned): test RMSE within 5% of the
best of {1e-3, 1e-2, 0.1}.  IVON's 0.3 is also the rate at which the learned
noise variance comes within 20% of the truth in 100 epochs (1.01x at 0.3,
1.32x at 0.1, where the network still underfits); VAN's 0.1 diverges.
"""


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
        options.setdefault("lr", self._default_lr() if self.lr is None else self.lr)
        options.update({k: v for k, v in self._default_options().items() if k not in options})
        if self.optimizer not in ("adam", "rmsprop"):
            options.setdefault("mc_samples", self.mc_samples)
        self.optimizer_ = OPTIMIZERS[self.optimizer](self.network_, n_data, seed=self.seed, **options)

    def _train(self, X, y):
        epochs = check_integer(self.epochs, "epochs", minimum=1)
        batch_size = min(check_integer(self.batch_size, "batch_size", minimum=1), X.shape[0])
        # the network sees standardised inputs: its N(0, 1 / prior_precision) prior and the optimisers'
        # default steps then suit features of any scale (constant features keep scale 1)
        self.x_mean_ = X.mean(axis=0)
        scale = X.std(axis=0)
        self.x_scale_ = np.where(scale > 0, scale, 1.0)
        X = (X - self.x_mean_) / self.x_scale_
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
            self._end_epoch(losses[-1])
            if self.progress:
                epochs_iter.set_postfix(loss=f"{losses[-1]:.4f}")
        self.loss_curve_ = np.array(losses)
        self.n_iter_ = epochs
        return self

    def _default_options(self):
        """Optimiser arguments the estimator sets unless given (none by default)."""
        return {}

    def _default_lr(self):
        """The learning rate of ``lr=None``."""
        raise NotImplementedError

    def _end_epoch(self, loss):
        """What the estimator learns between epochs from the epoch's average loss (nothing by default)."""

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
            saved = {name: value for name, value in vars(state["optimizer_"]).items() if name != "model"}
            saved["divergence"] = saved["divergence"].state_dict()
            state["optimizer_"] = saved
        return state

    def _restore_fitted(self, state):
        saved = state.pop("optimizer_")
        super()._restore_fitted(state)
        if not isinstance(saved, dict) or not isinstance(saved.get("n_data"), int):
            raise ValueError("optimizer_ must be the optimiser's attributes, n_data among them")
        self._build(self.n_features_in_, saved["n_data"])
        fresh = vars(self.optimizer_)
        for name, value in saved.items():
            if name == "divergence":
                # the divergence rule's history, validated by the rule itself
                try:
                    fresh[name].load_state_dict(value)
                except ValueError as err:
                    raise ValueError(f"optimizer_.divergence: {err}") from None
                continue
            if name not in fresh or not _same_kind(fresh[name], value):
                expected = "no such attribute" if name not in fresh else f"like {_describe(fresh[name])}"
                raise ValueError(f"optimizer_.{name} does not suit a {type(self.optimizer_).__name__} of this "
                                 f"network ({expected}); got {_describe(value)}")
            setattr(self.optimizer_, name, value)
        missing = sorted(set(fresh) - set(saved) - {"model"})
        if missing:
            raise ValueError(f"optimizer_ lacks the attributes {missing}")
        try:
            self.optimizer_.check_state()
        except ValueError as err:
            raise ValueError(f"optimizer_.{err}") from None

    def _check_fitted_state(self):
        super()._check_fitted_state()
        losses = expect_array(self, "loss_curve_", (None,))
        if isinstance(self.n_iter_, bool) or self.n_iter_ != losses.shape[0] or not np.all(np.isfinite(losses)):
            raise ValueError(f"n_iter_ must be the number of epochs in loss_curve_ ({losses.shape[0]}) and the "
                             f"losses finite; got n_iter_ = {self.n_iter_!r}")
        expect_array(self, "x_mean_", (self.n_features_in_,))
        scale = expect_array(self, "x_scale_", (self.n_features_in_,))
        if not (np.all(np.isfinite(self.x_mean_)) and np.all(np.isfinite(scale)) and np.all(scale > 0)):
            raise ValueError("x_mean_ must be finite and x_scale_ finite and positive (the training inputs' "
                             "means and standard deviations)")

    def _predictive(self, X):
        check_fitted(self, "optimizer_")
        X = (check_X(self, X) - self.x_mean_) / self.x_scale_
        n_samples = check_integer(self.n_samples, "n_samples", minimum=1)
        return self.optimizer_.predict(X, n_samples=n_samples, seed=self.seed)


class BayesianMLPClassifier(ClassifierMixin, _BayesianMLP):
    """A Bayesian multilayer-perceptron classifier trained by natural-gradient VI.

    Inputs are standardised with the training means and standard deviations.

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
        The network, on standardised inputs ``(X - x_mean_) / x_scale_``.
    optimizer_ : the trained optimiser (its ``posterior`` is the weights' Gaussian)
    x_mean_, x_scale_ : ndarray, shape (n_features,)
        The training inputs' means and standard deviations (1 for a constant feature).
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

    def _default_lr(self):
        return CLASSIFIER_LR[self.optimizer]

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

    Inputs and targets are standardised with the training means and standard
    deviations.  The Gaussian noise is learned by default: its precision has a
    Gamma posterior, updated after every epoch from the epoch's Monte Carlo
    expected squared residuals by the conjugate variational-Bayes step (the
    mean field ``q(w) q(tau)``, :mod:`efvi.models.nn._noise`), and the weights
    see the noise variance ``1 / E[tau]``.  The optimiser's running curvature
    and gradient averages are rescaled with each change of the noise, so the
    weights' posterior precision follows it at once.

    Parameters
    ----------
    noise_variance : "learn" or float
        ``"learn"`` (default) learns the noise, starting at the variance of the
        standardised targets (1); a positive number fixes the noise variance of
        the standardised targets.
    lr : float, optional
        Learning rate (default: the optimiser's estimator default,
        :data:`REGRESSOR_LR`; with a fixed noise IVON's is scaled by
        ``noise_variance``, as the curvature of a Gaussian likelihood grows like
        the noise precision).
    hidden_layer_sizes, activation, optimizer, epochs, batch_size, prior_precision, mc_samples,
    n_samples, seed, progress, optimizer_options :
        As :class:`BayesianMLPClassifier`.

    Attributes
    ----------
    n_features_in_, network_, optimizer_, loss_curve_, x_mean_, x_scale_ :
        As :class:`BayesianMLPClassifier`.
    y_mean_, y_scale_ : float
        The training targets' mean and standard deviation.
    noise_variance_ : float
        The noise variance in the units of ``y`` (learned, or the fixed one times ``y_scale_ ** 2``).
    noise_shape_, noise_rate_ : float
        With a learned noise: the Gamma posterior of the standardised targets' noise
        precision, ``shape = a0 + n / 2`` for the prior ``NOISE_PRIOR = (a0, b0)``;
        ``noise_variance_ = noise_rate_ / noise_shape_ * y_scale_ ** 2``.

    Notes
    -----
    A mean-field Gaussian posterior over the weights (every optimiser but VAN)
    is known to give too little uncertainty *between* clusters of inputs: on a
    1-D gap between two clusters the band of a single-hidden-layer network with
    a factorised posterior cannot be much wider than at the data (Foong et al.,
    2019, "In-between uncertainty in Bayesian neural networks").  The band does
    widen outside the data, and the learned noise makes its width at the data
    the noise's, but do not read the width inside a gap as calibrated.
    """

    def __init__(self, hidden_layer_sizes=(64,), activation="relu", optimizer="ivon", lr=None, epochs=100,
                 batch_size=128, prior_precision=1.0, mc_samples=1, n_samples=100, seed=0, progress=False,
                 optimizer_options=None, noise_variance="learn"):
        super().__init__(hidden_layer_sizes, activation, optimizer, lr, epochs, batch_size, prior_precision,
                         mc_samples, n_samples, seed, progress, optimizer_options)
        self.noise_variance = noise_variance

    def _learns_noise(self):
        """Whether the noise is learned (``"learn"``); else the fixed variance is checked."""
        if isinstance(self.noise_variance, str) and self.noise_variance == "learn":
            return True
        if isinstance(self.noise_variance, str):
            raise ValueError(f'noise_variance must be "learn" or a positive number; got {self.noise_variance!r}')
        check_positive(self.noise_variance, "noise_variance")
        return False

    def fit(self, X, y):
        """Train on ``X`` (n, d) and real targets ``y`` (n,)."""
        self._forget_fit()
        X, y = check_X_y(self, X, y)
        learn = self._learns_noise()
        self.y_mean_ = float(np.mean(y))
        self.y_scale_ = float(np.std(y)) if np.std(y) > 0 else 1.0
        self.noise_variance_ = (1.0 if learn else float(self.noise_variance)) * self.y_scale_ ** 2
        return self._train(X, (y - self.y_mean_) / self.y_scale_)

    def _end_epoch(self, loss):
        if not self._learns_noise():
            return
        old = self.network_.likelihood.variance
        self.noise_shape_, self.noise_rate_ = noise_posterior(self.optimizer_.n_data,
                                                              mean_squared_residual(loss, old))
        self.noise_variance_ = self.noise_rate_ / self.noise_shape_ * self.y_scale_ ** 2
        likelihood, _ = self._output()
        self.network_ = MLP(self.network_.layer_sizes, self.activation, likelihood=likelihood)
        self.optimizer_.model = self.network_
        rescale_likelihood_state(self.optimizer_, old / likelihood.variance)

    def _check_fitted_state(self):
        super()._check_fitted_state()
        expect_number(self, "y_mean_")
        expect_number(self, "y_scale_", positive=True)
        expect_number(self, "noise_variance_", positive=True)
        if not self._learns_noise():
            expected = float(self.noise_variance) * self.y_scale_ ** 2
            if not np.isclose(self.noise_variance_, expected, rtol=1e-12, atol=0.0):
                raise ValueError(f"noise_variance_ must be the fixed noise_variance times y_scale_ ** 2 "
                                 f"({expected!r}); got {self.noise_variance_!r}")
            return
        shape = NOISE_PRIOR[0] + 0.5 * self.optimizer_.n_data
        if not (expect_number(self, "noise_shape_", positive=True) == shape):
            raise ValueError(f"noise_shape_ must be the prior shape plus n_data / 2 ({shape!r}); "
                             f"got {self.noise_shape_!r}")
        expected = expect_number(self, "noise_rate_", positive=True) / shape * self.y_scale_ ** 2
        if not np.isclose(self.noise_variance_, expected, rtol=1e-12, atol=0.0):
            raise ValueError(f"noise_variance_ must be noise_rate_ / noise_shape_ * y_scale_ ** 2 ({expected!r}); "
                             f"got {self.noise_variance_!r}")

    def _output(self):
        variance = self.noise_variance_ / self.y_scale_ ** 2
        if not (np.isfinite(variance) and variance > 0):
            raise ValueError(f"noise_variance_ / y_scale_ ** 2 must be a positive finite variance; got {variance!r}")
        return likelihoods.Gaussian(variance=float(variance)), 1

    def _default_lr(self):
        # IVON's first steps are gradient steps of size lr * (hess_init + delta) (its curvature adapts over
        # ~1 / (1 - beta2) steps) on a loss whose curvature grows like 1 / noise_variance: under a fixed noise,
        # scale its rate (a learned noise rescales the curvature instead, _noise.rescale_likelihood_state)
        if self.optimizer == "ivon" and not self._learns_noise():
            return REGRESSOR_LR["ivon"] * float(self.noise_variance)
        return REGRESSOR_LR[self.optimizer]

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


__all__ = ["BayesianMLPClassifier", "BayesianMLPRegressor", "OPTIMIZERS", "CLASSIFIER_LR", "REGRESSOR_LR"]
