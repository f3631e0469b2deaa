"""Bayesian neural-network regression on the eight UCI sets: the Vadam table (Khan et al., 2018, Table 1) with efvi.

Run by hand:  OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_uci  [--quick] [--sets NAME ...]
                                                                      [--splits N] [--jobs J] [--output FILE]

BBVI (Bayes-by-Backprop with Adam) against Vadam, plus IVON and VOGN, on the
20 standard splits of each set: one hidden layer of 50 ReLU units, inputs
and targets standardised with the training split's statistics, 40 epochs,
minibatch 32 (128 for kin8nm, naval, power, wine), test RMSE and test
log-likelihood of the un-standardised target from 100 Monte Carlo samples,
mean and standard error over the splits.  The per-split protocol (noise and
prior precisions chosen by a coordinate search on a validation fifth of the
training split, the optimiser settings, the scores) lives in
``examples/_uci.py``, which the example ``examples/nn_uci_regression.py``
shares.

Full mode: every set, 20 splits, 4 methods, run as (set, split) tasks on
``--jobs`` processes (default 2).  ``--quick``: 2 splits of every set and 10
epochs.  ``--folds 5`` scores the inner search's candidates by 5-fold
cross-validation, as the authors do (five times the trainings); ``--methods``
runs a subset.  The markdown table, ours beside the published numbers, is
printed and, with ``--output``, written to that file.

Measured (this machine, 2 processes, 3044 s): ``--methods Vadam BBVI --search grid``,
every set, 20 splits, 40 epochs, the candidates scored on one validation fifth,
PyTorch's initialisation.  "within 2 SE": ``|ours - published| <= 2 sqrt(SE_ours^2
+ SE_published^2)`` ("better": outside that, on the better side)::

    | data set | method | splits | RMSE, ours | RMSE, published | within 2 SE | log-lik, ours | log-lik, published | within 2 SE |
    |---|---|---|---|---|---|---|---|---|
    | Boston | BBVI | 20 | 3.60 ± 0.24 | 3.58 ± 0.21 | yes | -2.98 ± 0.24 | -2.73 ± 0.05 | yes |
    | Boston | Vadam | 20 | 3.72 ± 0.24 | 3.93 ± 0.26 | yes | -2.84 ± 0.09 | -2.85 ± 0.07 | yes |
    | Concrete | BBVI | 20 | 6.21 ± 0.12 | 6.14 ± 0.13 | yes | -3.24 ± 0.02 | -3.24 ± 0.02 | yes |
    | Concrete | Vadam | 20 | 6.72 ± 0.13 | 6.85 ± 0.09 | yes | -3.35 ± 0.02 | -3.39 ± 0.02 | yes |
    | Energy | BBVI | 20 | 2.70 ± 0.06 | 2.79 ± 0.06 | yes | -2.47 ± 0.03 | -2.47 ± 0.02 | yes |
    | Energy | Vadam | 20 | 1.78 ± 0.11 | 1.55 ± 0.08 | yes | -2.17 ± 0.06 | -2.15 ± 0.07 | yes |
    | Kin8nm | BBVI | 20 | 0.10 ± 0.00 | 0.09 ± 0.00 | no | 0.93 ± 0.01 | 0.95 ± 0.01 | yes |
    | Kin8nm | Vadam | 20 | 0.10 ± 0.00 | 0.10 ± 0.00 | yes | 0.81 ± 0.02 | 0.76 ± 0.00 | better |
    | Naval | BBVI | 20 | 0.0043 ± 0.0001 | 0.00 ± 0.00 | no | 3.77 ± 0.03 | 4.46 ± 0.03 | no |
    | Naval | Vadam | 20 | 0.0016 ± 0.0001 | 0.00 ± 0.00 | no | 4.93 ± 0.10 | 4.72 ± 0.22 | yes |
    | Power | BBVI | 20 | 4.28 ± 0.03 | 4.31 ± 0.03 | yes | -2.88 ± 0.01 | -2.88 ± 0.01 | yes |
    | Power | Vadam | 20 | 4.29 ± 0.03 | 4.28 ± 0.03 | yes | -2.91 ± 0.01 | -2.88 ± 0.01 | yes |
    | Wine | BBVI | 20 | 0.65 ± 0.01 | 0.65 ± 0.01 | yes | -1.01 ± 0.02 | -1.00 ± 0.01 | yes |
    | Wine | Vadam | 20 | 0.65 ± 0.01 | 0.66 ± 0.01 | yes | -0.99 ± 0.01 | -1.01 ± 0.01 | yes |
    | Yacht | BBVI | 20 | 2.21 ± 0.11 | 2.05 ± 0.06 | yes | -2.23 ± 0.02 | -2.41 ± 0.02 | better |
    | Yacht | Vadam | 20 | 1.36 ± 0.09 | 1.32 ± 0.10 | yes | -1.69 ± 0.03 | -1.70 ± 0.03 | yes |

The published RMSEs of Naval (0.00 +- 0.00) and Kin8nm (0.09 and 0.10 +- 0.00)
are printed to two decimals: ours round to the same but BBVI's Kin8nm (0.0953,
0.0003 above 0.095).  The one miss is BBVI's Naval log-likelihood (3.77 against
4.46): on every split its search picks the two smallest noise precisions of the
box (e^1, e^1.8) with the largest prior precision (e^4).  The search's 3 Monte
Carlo samples per step (the authors' search trains with 10) are part of it: with
10, splits 0-3 take e^2.6 on three of them and score 4.15, 3.91, 4.35, 4.31
(mean 4.18) instead of 3.98, 3.91, 3.66, 3.68 (3.81); the rest of the gap may be
the grid's coarseness against a continuous search.  Before the joint search and
PyTorch's start (the coordinate search of ``_uci.py``, efvi's MLP start),
Vadam's Energy RMSE was 2.56 and Yacht's 3.50.
"""

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

from _datasets import UCI_SETS, load_uci  # noqa: E402
from _uci import METHODS, markdown_table, run_split, summarise  # noqa: E402


def _task(name, k, epochs, methods=METHODS, folds=1, init="pytorch", search="coordinate"):
    """The methods on split ``k`` of set ``name`` (one process-pool task)."""
    data = load_uci(name)
    return name, k, {method: run_split(data, k, method, epochs, folds=folds, search=search, name=name, init=init)
                     for method in methods}


def run(sets, n_splits, epochs, jobs, methods=METHODS, folds=1, init="pytorch", search="coordinate"):
    """``{set: {method: [run_split results]}}`` over the first ``n_splits`` splits of each set."""
    results = {name: {method: [] for method in methods} for name in sets}
    tasks = [(name, k) for k in range(n_splits) for name in sets]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_task, name, k, epochs, methods, folds, init, search) for name, k in tasks]
        for future in futures:
            name, k, by_method = future.result()
            for method, result in by_method.items():
                results[name][method].append(result)
            print(f"  {name} split {k}: " + ", ".join(
                f"{m} {r['rmse']:.3g}/{r['log_lik']:.2f} (tau {r['noise_precision']:g}, "
                f"prior {r['prior_precision']:g}, {r['seconds']:.0f}s)"
                for m, r in by_method.items()), flush=True)
    return results


def _write_atomically(path, text):
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.chmod(temporary, 0o644)
    with os.fdopen(handle, "w") as file:
        file.write(text)
    os.replace(temporary, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 splits per set, 10 epochs")
    parser.add_argument("--sets", nargs="+", choices=UCI_SETS, default=list(UCI_SETS), metavar="NAME",
                        help=f"data sets (default: all of {', '.join(UCI_SETS)})")
    parser.add_argument("--splits", type=int, default=None, help="splits per set (default 20; 2 with --quick)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--output", default=None, help="also write the markdown table to this file")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS), help="methods (default: all)")
    parser.add_argument("--search", choices=("coordinate", "grid"), default="coordinate",
                        help="the inner search: one precision after the other on ladders (default) or a joint 6 x 5 "
                             "grid in the authors' box (as many evaluations as their Bayesian optimisation)")
    parser.add_argument("--init", choices=("pytorch", "efvi"), default="pytorch",
                        help="the networks' start: PyTorch's nn.Linear default as the authors' (default) or efvi's MLP's")
    parser.add_argument("--folds", type=int, choices=(1, 5), default=1,
                        help="the inner search's score: one validation fifth (1, default) or 5-fold "
                             "cross-validation as the authors (5)")
    args = parser.parse_args(argv)
    n_splits = args.splits if args.splits is not None else (2 if args.quick else 20)
    if not 1 <= n_splits <= 20:
        parser.error(f"--splits must be in 1..20; got {n_splits}")
    epochs = 10 if args.quick else None
    start = time.perf_counter()
    results = run(args.sets, n_splits, epochs, args.jobs, args.methods, args.folds, args.init, args.search)
    seconds = time.perf_counter() - start
    summaries = {name: {method: summarise(runs) for method, runs in by_method.items()}
                 for name, by_method in results.items()}
    table = markdown_table(summaries, n_splits)
    note = (f"\n\n{len(args.sets)} sets x {n_splits} splits x {len(args.methods)} methods, "
            f"{'10' if args.quick else '40'} epochs, inner search on "
            f"{'5-fold cross-validation' if args.folds == 5 else 'one validation fifth'}, {args.search} search, {args.init} start, "
            f"{args.jobs} processes: {seconds:.0f} s wall clock.\n")
    print("\n" + table + note)
    if args.output:
        _write_atomically(args.output, table + note)
        print(f"wrote {args.output}")
    return summaries


if __name__ == "__main__":
    main()
