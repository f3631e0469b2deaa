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
5-fold cross-validated test log-likelihood, noise precision in
:math:`[e^0, e^5]`, prior precision in :math:`[e^{-4}, e^4]`).  Here a
coordinate search scores candidates by the validation log-likelihood
(standardised units) of a network trained on the other four fifths of one
random split of the training data (:func:`choose_precisions`):

1. noise precision: at prior precision 1, the grid 2, 5, 12, 30, 80, extended
   to 200 and then 500 only while the largest candidate scored is the best;
2. prior precision: at that noise precision, 0.1 and 10 beside 1, extended to
   0.01 or 100 only when 0.1 or 10 is the best.

That is 7 to 10 trainings per split and method (for the authors, 150; with
``folds=5`` each candidate is scored by 5-fold cross-validation as theirs are,
35 to 50 trainings; ``search="grid"`` scores 30 pairs spread over the authors'
box instead, a joint search as their Bayesian optimisation is), then
one on the whole training split with the chosen pair.  Every network starts
as the authors' do, from PyTorch's default initialisation (:data:`INIT`).  That final training
uses the authors' Monte Carlo samples per step, the search's trainings about
a third of them, for time (:data:`MC_SAMPLES`).
"""

import functools
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

NOISE_PRECISIONS = (2.0, 5.0, 12.0, 30.0, 80.0, 200.0, 500.0)
"""Candidate noise precisions of the standardised targets, a ladder of about e^1 per rung."""

NOISE_START = slice(0, 5)
"""The noise precisions always scored (2 to 80); 200 and 500 only as an upward extension."""

PRIOR_PRECISIONS = (0.01, 0.1, 1.0, 10.0, 100.0)
"""Candidate prior precisions of every weight, a ladder of factors of 10."""

PRIOR_START = slice(1, 4)
"""The prior precisions always scored (0.1, 1, 10); 0.01 and 100 only as extensions."""

PRIOR_PRECISION = 1.0
"""The prior precision at which the noise precision is chosen (the first coordinate of the search)."""

VALIDATION_FRACTION = 0.2
TEST_SAMPLES = 100

MC_SAMPLES = {"BBVI": {32: (5, 20), 128: (3, 10)}, "Vadam": {32: (3, 10), 128: (2, 5)}}
"""Training Monte Carlo samples per step, ``{method: {minibatch size: (search, final)}}``: the final training
takes the authors' (BBVI 20 / 10, Vadam 10 / 5), the search's trainings fewer; IVON and VOGN take one
throughout, as in their papers' large-scale runs."""


def make_optimizer(method, net, n_data, noise_precision, prior_precision, batch_size, seed, final=True):
    """The optimiser of ``method`` for ``net``, with the settings used throughout.

    BBVI and Vadam take the authors' settings (Adam's ``lr = 0.01``,
    ``betas = (0.9, 0.99)``; BBVI's initial standard deviation ``10**-0.5``,
    Vadam's initial precision that of the prior).  IVON and VOGN take a
    curvature decay of 0.999 (40 epochs are a few thousand steps); IVON's rate
    is scaled by the noise variance, because its first steps are gradient steps
    on a loss whose curvature grows like the noise precision.  ``final``
    selects the Monte Carlo samples of :data:`MC_SAMPLES` (final training or search).
    """
    mc_samples = MC_SAMPLES[method][batch_size][int(final)] if method in MC_SAMPLES else 1
    common = dict(prior_precision=prior_precision, mc_samples=mc_samples, seed=seed)
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


def pytorch_linear_init(net, rng):
    """PyTorch's default initialisation of ``nn.Linear``, the authors' network's start: every weight and
    bias uniform in ``+-1/sqrt(fan_in)``.  (efvi's MLP starts from He-normal weights and zero biases, whose
    ReLU kinks all pass through the origin: on Yacht it trains more slowly in the protocol's 40 epochs.)

    Parameters
    ----------
    net : efvi.models.nn.MLP
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (P,)
    """
    layers = []
    for n_in, n_out in net.shapes:
        bound = 1.0 / np.sqrt(n_in)
        layers.append((rng.uniform(-bound, bound, (n_in, n_out)), rng.uniform(-bound, bound, n_out)))
    return net.flatten(layers)


INIT = "pytorch"
"""The networks' initial mean: ``"pytorch"`` (:func:`pytorch_linear_init`, as the authors') or ``"efvi"``
(the MLP's own)."""


def train(method, X, y, noise_precision, prior_precision, epochs, batch_size, seed, final=True, init=INIT):
    """``(net, optimizer)`` after ``epochs`` passes of shuffled minibatches over standardised ``(X, y)``
    (``final``: see :func:`make_optimizer`; ``init``, the start: :data:`INIT`)."""
    if init not in ("pytorch", "efvi"):
        raise ValueError(f'init must be "pytorch" or "efvi"; got {init!r}')
    net = nn.MLP([X.shape[1], 50, 1], "relu", likelihood=likelihoods.Gaussian(variance=1.0 / noise_precision))
    opt = make_optimizer(method, net, len(y), noise_precision, prior_precision, batch_size, seed, final)
    if init == "pytorch":
        opt.mean[...] = pytorch_linear_init(net, np.random.default_rng([seed, 1]))
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


def _best_on_ladder(ladder, start, score):
    """The rung of ``ladder`` with the highest ``score``: the rungs in ``start`` (a slice), then the next rung
    outward, one at a time, while the best rung scored is the last one scored on its side."""
    lo, hi = start.start, start.stop - 1
    scores = {i: score(ladder[i]) for i in range(lo, hi + 1)}
    while True:
        best = max(scores, key=scores.get)
        if best == hi and hi + 1 < len(ladder):
            hi += 1
            scores[hi] = score(ladder[hi])
        elif best == lo and lo > 0:
            lo -= 1
            scores[lo] = score(ladder[lo])
        else:
            return ladder[best]


AUTHORS_BOX = {"default": ((0.0, 5.0), (-4.0, 4.0)),
               "naval-propulsion-plant": ((1.0, 5.0), (-3.0, 4.0)), "power-plant": ((1.0, 5.0), (-3.0, 4.0))}
"""The authors' search box ``((log noise precision bounds), (log prior precision bounds))`` per set
(emtiyaz/vadam, ``uci_code/run_experiments.py``)."""


def authors_grid(box):
    """The 30 pairs ``(noise precision, prior precision)`` of a 6 x 5 grid, even in the logs, spanning ``box``."""
    (tau_lo, tau_hi), (alpha_lo, alpha_hi) = box
    return [(float(np.exp(a)), float(np.exp(b))) for a in np.linspace(tau_lo, tau_hi, 6)
            for b in np.linspace(alpha_lo, alpha_hi, 5)]


def choose_precisions(method, X, y, epochs, batch_size, seed, folds=1, search="coordinate", box=None, init=INIT):
    """``(noise precision, prior precision)`` by the coordinate search of the module docstring.

    Each candidate pair is scored by the log-likelihood (standardised units) of a validation fifth of
    ``(X, y)`` under a network trained on the rest; with ``folds=5``, by the mean over the five fifths
    of a 5-fold cross-validation (the authors' score, five times the trainings).  ``search="grid"``
    scores the 30 pairs of :func:`authors_grid` in the authors' box of log precisions (``box``, see
    :data:`AUTHORS_BOX`), a joint search with as many evaluations as their Bayesian optimisation,
    instead of one coordinate after the other on the ladders.
    """
    if search not in ("coordinate", "grid"):
        raise ValueError(f'search must be "coordinate" or "grid"; got {search!r}')
    if folds not in (1, 5):
        raise ValueError(f"folds must be 1 (one validation fifth) or 5 (5-fold cross-validation); got {folds!r}")
    order = np.random.default_rng(seed).permutation(len(y))
    n_valid = int(round(VALIDATION_FRACTION * len(y)))
    bounds = np.linspace(0, len(y), 6).round().astype(int) if folds == 5 else np.array([0, n_valid])
    splits = [(order[lo:hi], np.concatenate([order[:lo], order[hi:]])) for lo, hi in zip(bounds[:-1], bounds[1:])]

    @functools.cache
    def score(noise_precision, prior_precision):
        total = 0.0
        for valid, fit in splits:
            net, opt = train(method, X[fit], y[fit], noise_precision, prior_precision, epochs, batch_size, seed,
                             final=False, init=init)
            total += predictive_scores(net, opt, X[valid], y[valid], noise_precision, seed=seed)[1]
        return total / len(splits)

    if search == "grid":
        return max(authors_grid(AUTHORS_BOX["default"] if box is None else box), key=lambda pair: score(*pair))
    noise_precision = _best_on_ladder(NOISE_PRECISIONS, NOISE_START, lambda tau: score(tau, PRIOR_PRECISION))
    prior_precision = _best_on_ladder(PRIOR_PRECISIONS, PRIOR_START, lambda alpha: score(noise_precision, alpha))
    return noise_precision, prior_precision


def run_split(data, k, method, epochs=None, seed=0, folds=1, search="coordinate", name=None, init=INIT):
    """Train and score ``method`` on split ``k`` of a :func:`load_uci` set (``folds``, ``search``:
    :func:`choose_precisions`; ``name``, the set's, selects its :data:`AUTHORS_BOX` for the grid).

    Returns
    -------
    dict
        ``rmse``, ``log_lik`` (test, original units), ``noise_precision`` (chosen, of the
        standardised targets), ``prior_precision`` (chosen) and ``seconds`` (wall clock, search included).
    """
    start = time.perf_counter()
    epochs = data["n_epochs"] if epochs is None else epochs
    X_train, y_train, X_test, y_test = uci_split(data, k)
    X_train, y_train, X_test, y_mean, y_std = standardise(X_train, y_train, X_test)
    seed = seed + 1000 * k
    noise_precision, prior_precision = choose_precisions(method, X_train, y_train, epochs, data["batch_size"], seed,
                                                         folds, search, AUTHORS_BOX.get(name), init)
    net, opt = train(method, X_train, y_train, noise_precision, prior_precision, epochs, data["batch_size"], seed,
                     init=init)
    rmse, log_lik = predictive_scores(net, opt, X_test, y_test, noise_precision, y_mean, y_std, seed=seed)
    return {"rmse": rmse, "log_lik": log_lik, "noise_precision": noise_precision,
            "prior_precision": prior_precision, "seconds": time.perf_counter() - start}


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
