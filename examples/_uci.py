r"""The UCI regression protocol of the Vadam table (Khan et al., 2018, Table 1), for the example and the benchmark.

One split of one set, for one method: standardise inputs and targets with the
training split's statistics, choose the noise and prior precisions by a grid
search on a validation part of the training split, retrain on the whole
training split with the chosen pair, and score the test split:

.. math::
    \text{RMSE} = \Big(\tfrac{1}{N_*} \textstyle\sum_n (y_n - \bar y_n)^2\Big)^{1/2}, \qquad
    \bar y_n = \mu_y + s_y \tfrac{1}{S} \textstyle\sum_s f_s(x_n),

    \text{log-lik} = \tfrac{1}{N_*} \textstyle\sum_n \log \tfrac{1}{S} \sum_s
        \mathcal{N}\big(y_n;\ \mu_y + s_y f_s(x_n),\ s_y^2 / \tau\big),

with :math:`f_s` the network at :math:`S = 100` posterior weight samples,
:math:`\mu_y, s_y` the training targets' mean and standard deviation and
:math:`\tau` the noise precision of the standardised targets: the test
log-likelihood of the un-standardised target under the Monte Carlo predictive
mixture, as in the authors' code (emtiyaz/vadam, ``uci_code``).

The noise precision is a fixed hyperparameter of the network's Gaussian
likelihood, so a network is built for every candidate.  The authors choose
both precisions per split by Bayesian optimisation (30 evaluations of a
5-fold cross-validated test log-likelihood); here a grid of noise precisions
(:data:`NOISE_PRECISIONS`) at a fixed prior precision is scored on one
validation fifth of the training split.
"""

import time

import numpy as np
from scipy.special import logsumexp

from _datasets import uci_split
from efvi.inference import ngvi
from efvi.models import likelihoods, nn

METHODS = ("BBVI", "Vadam", "IVON", "VOGN")
"""The compared methods; BBVI is Bayes-by-Backprop (Blundell et al., 2015) trained with Adam."""

PUBLISHED = {
    # set: {method: (RMSE, its standard error, test log-lik, its standard error)}, Khan et al. (2018), Table 1
    "bostonHousing": {"BBVI": (3.58, 0.21, -2.73, 0.05), "Vadam": (3.93, 0.26, -2.85, 0.07)},
    "concrete": {"BBVI": (6.14, 0.13, -3.24, 0.02), "Vadam": (6.85, 0.09, -3.39, 0.02)},
    "energy": {"BBVI": (2.79, 0.06, -2.47, 0.02), "Vadam": (1.55, 0.08, -2.15, 0.07)},
    "kin8nm": {"BBVI": (0.09, 0.00, 0.95, 0.01), "Vadam": (0.10, 0.00, 0.76, 0.00)},
    "naval-propulsion-plant": {"BBVI": (0.00, 0.00, 4.46, 0.03), "Vadam": (0.00, 0.00, 4.72, 0.22)},
    "power-plant": {"BBVI": (4.31, 0.03, -2.88, 0.01), "Vadam": (4.28, 0.03, -2.88, 0.01)},
    "wine-quality-red": {"BBVI": (0.65, 0.01, -1.00, 0.01), "Vadam": (0.66, 0.01, -1.01, 0.01)},
    "yacht": {"BBVI": (2.05, 0.06, -2.41, 0.02), "Vadam": (1.32, 0.10, -1.70, 0.03)},
}
"""Khan et al. (2018), Table 1 (BBVI and Vadam columns), as printed; no published IVON or VOGN numbers."""

SHORT_NAMES = {"bostonHousing": "Boston", "concrete": "Concrete", "energy": "Energy", "kin8nm": "Kin8nm",
               "naval-propulsion-plant": "Naval", "power-plant": "Power", "wine-quality-red": "Wine",
               "yacht": "Yacht"}

NOISE_PRECISIONS = (2.0, 5.0, 12.0, 30.0, 80.0)
"""Candidate noise precisions of the standardised targets (the authors search e^0 to e^5)."""

PRIOR_PRECISION = 1.0
"""Prior precision of every weight (the authors search e^-4 to e^4)."""

VALIDATION_FRACTION = 0.2
TEST_SAMPLES = 100


def _mc_samples(method, batch_size):
    """Training Monte Carlo samples, fewer than the authors' for speed (BBVI 20 / 10, Vadam 10 / 5 at minibatch
    32 / 128): BBVI 5 / 3, Vadam 3 / 2; IVON and VOGN one, as in their papers' large-scale runs."""
    if method == "BBVI":
        return 5 if batch_size == 32 else 3
    if method == "Vadam":
        return 3 if batch_size == 32 else 2
    return 1


def make_optimizer(method, net, n_data, noise_precision, batch_size, seed):
    """The optimiser of ``method`` for ``net``, with the settings used throughout.

    BBVI and Vadam take the authors' settings (Adam's ``lr = 0.01``,
    ``betas = (0.9, 0.99)``; BBVI's initial standard deviation ``10**-0.5``,
    Vadam's initial precision that of the prior).  IVON and VOGN take a
    curvature decay of 0.999 (40 epochs are a few thousand steps); IVON's rate
    is scaled by the noise variance, because its first steps are gradient steps
    on a loss whose curvature grows like the noise precision.
    """
    common = dict(prior_precision=PRIOR_PRECISION, mc_samples=_mc_samples(method, batch_size), seed=seed)
    if method == "BBVI":
        return ngvi.BayesByBackprop(net, n_data, lr=0.01, betas=(0.9, 0.99), init_std=10 ** -0.5, **common)
    if method == "Vadam":
        return ngvi.Vadam(net, n_data, lr=0.01, betas=(0.9, 0.99), hess_init=0.0, **common)
    if method == "IVON":
        return ngvi.IVON(net, n_data, lr=0.1 / noise_precision, betas=(0.9, 0.999), hess_init=1.0, **common)
    if method == "VOGN":
        return ngvi.VOGN(net, n_data, lr=0.05, betas=(0.9, 0.999), hess_init=1.0, **common)
    raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")


def standardise(X_train, y_train, X_test):
    """Inputs and targets standardised with the training split's statistics; returns the target's mean and sd."""
    x_mean, x_std = X_train.mean(axis=0), X_train.std(axis=0)
    x_std[x_std == 0] = 1.0
    y_mean, y_std = y_train.mean(), y_train.std()
    return (X_train - x_mean) / x_std, (y_train - y_mean) / y_std, (X_test - x_mean) / x_std, y_mean, y_std


def train(method, X, y, noise_precision, epochs, batch_size, seed):
    """``(net, optimizer)`` after ``epochs`` passes of shuffled minibatches over standardised ``(X, y)``."""
    net = nn.MLP([X.shape[1], 50, 1], "relu", likelihood=likelihoods.Gaussian(variance=1.0 / noise_precision))
    opt = make_optimizer(method, net, len(y), noise_precision, batch_size, seed)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(len(y))
        for start in range(0, len(y), batch_size):
            batch = order[start:start + batch_size]
            opt.step(X[batch], y[batch])
    return net, opt


def predictive_scores(net, opt, X, y, noise_precision, y_mean=0.0, y_std=1.0, n_samples=TEST_SAMPLES, seed=0):
    """RMSE of the predictive mean and mean log predictive density of ``y`` (in its original units).

    ``X`` is standardised; ``y`` is in the units ``y_mean + y_std * (network output)``.
    """
    outputs = y_mean + y_std * net.predict_outputs(opt.sample(n_samples, seed=seed), X)[..., 0]   # (S, B)
    rmse = np.sqrt(np.mean((y - outputs.mean(axis=0)) ** 2))
    variance = y_std ** 2 / noise_precision
    log_density = -0.5 * (np.log(2 * np.pi * variance) + (y - outputs) ** 2 / variance)
    return rmse, np.mean(logsumexp(log_density, axis=0) - np.log(n_samples))


def choose_noise_precision(method, X, y, epochs, batch_size, seed):
    """The candidate of :data:`NOISE_PRECISIONS` with the best validation log-likelihood (standardised units)."""
    order = np.random.default_rng(seed).permutation(len(y))
    n_valid = int(round(VALIDATION_FRACTION * len(y)))
    valid, fit = order[:n_valid], order[n_valid:]
    scores = []
    for noise_precision in NOISE_PRECISIONS:
        net, opt = train(method, X[fit], y[fit], noise_precision, epochs, batch_size, seed)
        scores.append(predictive_scores(net, opt, X[valid], y[valid], noise_precision, seed=seed)[1])
    return NOISE_PRECISIONS[int(np.argmax(scores))]


def run_split(data, k, method, epochs=None, seed=0):
    """Train and score ``method`` on split ``k`` of a :func:`load_uci` set.

    Returns
    -------
    dict
        ``rmse``, ``log_lik`` (test, original units), ``noise_precision`` (chosen, of the
        standardised targets) and ``seconds`` (wall clock, search included).
    """
    start = time.perf_counter()
    epochs = data["n_epochs"] if epochs is None else epochs
    X_train, y_train, X_test, y_test = uci_split(data, k)
    X_train, y_train, X_test, y_mean, y_std = standardise(X_train, y_train, X_test)
    seed = seed + 1000 * k
    noise_precision = choose_noise_precision(method, X_train, y_train, epochs, data["batch_size"], seed)
    net, opt = train(method, X_train, y_train, noise_precision, epochs, data["batch_size"], seed)
    rmse, log_lik = predictive_scores(net, opt, X_test, y_test, noise_precision, y_mean, y_std, seed=seed)
    return {"rmse": rmse, "log_lik": log_lik, "noise_precision": noise_precision,
            "seconds": time.perf_counter() - start}


def summarise(runs):
    """``{metric: (mean, standard error)}`` over the splits' results of :func:`run_split`."""
    summary = {}
    for metric in ("rmse", "log_lik"):
        values = np.array([run[metric] for run in runs])
        error = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else np.nan
        summary[metric] = (values.mean(), error)
    return summary


def _cell(mean, error, digits):
    return f"{mean:.{digits}f} ± {error:.{digits}f}"


def markdown_table(summaries, n_splits):
    """Our RMSE and log-likelihood (mean ± standard error) beside the published ones, as a markdown table.

    Parameters
    ----------
    summaries : dict
        ``{set name: {method: summarise(...)}}``.
    n_splits : int
        Splits per set behind our numbers (stated in the header).
    """
    lines = [f"| data set | method | RMSE, ours ({n_splits} splits) | RMSE, published | "
             "test log-lik, ours | test log-lik, published |",
             "|---|---|---|---|---|---|"]
    for name, by_method in summaries.items():
        digits = 4 if name == "naval-propulsion-plant" else 2
        for method, summary in by_method.items():
            published = PUBLISHED[name].get(method)
            rmse_pub = _cell(published[0], published[1], 2) if published else "–"
            ll_pub = _cell(published[2], published[3], 2) if published else "–"
            lines.append(f"| {SHORT_NAMES[name]} | {method} | {_cell(*summary['rmse'], digits)} | {rmse_pub} | "
                         f"{_cell(*summary['log_lik'], 2)} | {ll_pub} |")
    return "\n".join(lines)
