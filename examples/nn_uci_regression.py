"""Bayesian neural-network regression on UCI data: Bayes-by-Backprop, Vadam, IVON and VOGN (Khan et al., 2018, Table 1).

The protocol of the Vadam paper's UCI table: one hidden layer of 50 ReLU
units, inputs and targets standardised with the training split's statistics,
40 epochs of minibatches of 32, test RMSE and test log-likelihood of the
original target under the Monte Carlo predictive mixture of 100 weight
samples, mean and standard error over the standard splits.  The noise
precision of the Gaussian likelihood and the prior precision are chosen per
split by a coordinate search on a validation part of the training data, and
every network starts from PyTorch's default initialisation, as the authors'
(``_uci.py`` has the details, shared with ``benchmarks/bench_uci.py``, which
runs all eight sets and 20 splits, and with ``--search grid`` the authors'
joint search of 30 evaluations).

BBVI (Bayes-by-Backprop, plain reparameterisation gradients with Adam) and
Vadam (Adam on weights perturbed by the posterior) are the table's two
columns; IVON and VOGN are the natural-gradient methods beside them.  The plot
shows our mean ± standard error per method, the published numbers as black
markers.  Quick mode: Yacht only, 2 splits, 20 epochs.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from _common import parse_args, save_figure
from _datasets import load_uci
from _uci import METHODS, PUBLISHED, SHORT_NAMES, run_split, summarise

SMALL_SETS = ("bostonHousing", "concrete", "energy", "yacht")


def run(sets, n_splits, epochs):
    """``{set: {method: summarise(...)}}`` over the first ``n_splits`` splits."""
    summaries = {}
    for name in sets:
        data = load_uci(name)
        summaries[name] = {method: summarise([run_split(data, k, method, epochs) for k in range(n_splits)])
                           for method in METHODS}
    return summaries


def plot(summaries):
    fig, axes = plt.subplots(2, len(summaries), figsize=(3.2 * len(summaries), 5.5), squeeze=False)
    positions = np.arange(len(METHODS))
    for column, (name, by_method) in enumerate(summaries.items()):
        for row, (metric, label, index) in enumerate((("rmse", "test RMSE", 0), ("log_lik", "test log-lik", 2))):
            ax = axes[row, column]
            means, errors = zip(*(by_method[method][metric] for method in METHODS))
            ax.errorbar(positions, means, yerr=np.nan_to_num(errors), fmt="o", capsize=4, label="efvi")
            published = [(i, PUBLISHED[name][m][index], PUBLISHED[name][m][index + 1])
                         for i, m in enumerate(METHODS) if m in PUBLISHED[name]]
            if published:
                i, value, error = zip(*published)
                ax.errorbar(np.array(i) + 0.2, value, yerr=error, fmt="kx", capsize=4, label="published")
            ax.set_xticks(positions, METHODS)
            ax.set(xlim=(-0.5, len(METHODS) - 0.3), ylabel=label)
            if row == 0:
                ax.set_title(SHORT_NAMES[name])
    axes[0, 0].legend()
    fig.tight_layout()
    return fig


def main(argv=None):
    args = parse_args(__doc__, argv)
    sets, n_splits, epochs = (("yacht",), 2, 20) if args.quick else (SMALL_SETS, 3, None)
    summaries = run(sets, n_splits, epochs)
    print(f"{n_splits} splits, {epochs or 40} epochs; ours (mean ± s.e.) beside Khan et al. (2018), Table 1")
    for name, by_method in summaries.items():
        for method, summary in by_method.items():
            line = (f"  {SHORT_NAMES[name]:8s} {method:6s} RMSE {summary['rmse'][0]:.2f} ± {summary['rmse'][1]:.2f}"
                    f"   log-lik {summary['log_lik'][0]:.2f} ± {summary['log_lik'][1]:.2f}")
            if method in PUBLISHED[name]:
                rmse, rmse_error, log_lik, log_lik_error = PUBLISHED[name][method]
                line += (f"   published RMSE {rmse:.2f} ± {rmse_error:.2f}"
                         f"   log-lik {log_lik:.2f} ± {log_lik_error:.2f}")
            print(line)
    save_figure(plot(summaries), args.output, "nn_uci_regression.png")
    return summaries


if __name__ == "__main__":
    main()
