"""Cost of one black-box VI iteration: reparameterisation against score function (issue 25, item 2).

Run by hand:  OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_bbvi  [--quick] [--before REV]

Target: an iteration of ``estimator="reparam"`` <= 1.5x one of
``estimator="score"`` (leave-one-out baseline) at the same number of samples.
Model: eight schools (Rubin, 1981) in its non-centred form, ``z = (mu, log
tau, eta_1..8)`` with a DiagonalGaussian ``q``, 10 samples, natural steps of
0.05, the stopping rule off (``window=ITERATIONS``: it first compares two
windows after ``2 window`` iterations) so that every fit takes its
iterations.  The log joint is written both ways ``bbvi.fit`` takes it: for
one draw at a time (``vectorized=False``, ``S`` calls per iteration, and for
``"reparam"`` ``S`` autograd traces) and for all draws at once
(``vectorized=True``, one call, one trace).

Each fit of ``ITERATIONS`` iterations is timed in turn with the others, round
after round (``_common.interleaved_times``), and the ratio is the median of
the round-by-round ratios.  ``--before REV`` also times the package as it was
at git revision ``REV`` (exported to a temporary folder, run in a subprocess
in the same rounds' fashion) so that before and after come from one run.

Measured on 2 cores shared with other engineers' jobs, one run, 15 rounds,
``--before 07b182b`` (the commit before this benchmark: reparameterisation
evaluated the log joint, then traced it again for the gradient), ms per
iteration:

=================  ============  ==============  ============  ===========  =============  ===========
log joint          before score  before reparam  before ratio  after score  after reparam  after ratio
=================  ============  ==============  ============  ===========  =============  ===========
per draw           1.03          13.57           12.98         1.08         10.89          13.26
all draws at once  0.82          1.82            2.35          0.71         1.75           2.28
=================  ============  ==============  ============  ===========  =============  ===========

(ratios: medians of the round-by-round ratios; ranges 6.2-24.6, 1.5-2.6,
7.5-21.4, 1.5-4.0.)  The 1.5x target is not met.  One autograd pass over all
draws now gives the values and the gradients (the separate evaluation is
gone), and a fit computes only the gradient its step follows, but neither
moves the ratio: the cost is autograd's own, about 17 microseconds per traced
operation here against about 1.5 for the plain numpy call, and the eight
schools log joint is 25 small operations.  Traced once over all draws it costs
about 0.7 ms, the whole score-function iteration about as much; traced once
per draw, ten times that.  Write the log joint for all draws at once with
``estimator="reparam"``; reaching 1.5x on a model this small needs a
cheaper derivative than autograd's tracing (a batching tracer or a compiled
backend), not a change in the estimator.
"""

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile

import autograd.numpy as anp
import numpy as np

from ._common import interleaved_times, ratio_summary

ITERATIONS = 100
N_SAMPLES = 10
Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def log_joint_per_draw(z):
    """Eight schools, non-centred: mu ~ N(0, 5^2), log tau ~ N(0, 5^2), eta_j ~ N(0, 1), y_j ~ N(mu + tau eta_j, sigma_j^2)."""
    mu, log_tau, eta = z[0], z[1], z[2:]
    theta = mu + anp.exp(log_tau) * eta
    return (-0.5 * mu ** 2 / 25.0 - 0.5 * log_tau ** 2 / 25.0 - 0.5 * anp.sum(eta ** 2)
            - 0.5 * anp.sum(((Y - theta) / SIGMA) ** 2))


def log_joint_vectorized(z):
    """The same for all draws at once, ``z`` of shape (S, 10)."""
    mu, log_tau, eta = z[:, 0], z[:, 1], z[:, 2:]
    theta = mu[:, None] + anp.exp(log_tau)[:, None] * eta
    return (-0.5 * mu ** 2 / 25.0 - 0.5 * log_tau ** 2 / 25.0 - 0.5 * anp.sum(eta ** 2, axis=1)
            - 0.5 * anp.sum(((Y - theta) / SIGMA) ** 2, axis=1))


def fits():
    """The four fits, by name, as callables of the efvi importable here (before or after)."""
    from efvi.expfam import DiagonalGaussian
    from efvi.inference import bbvi

    init = DiagonalGaussian.from_mean_var(np.zeros(10), np.ones(10))
    extra = {"window": ITERATIONS, "warn": False} if "window" in inspect.signature(bbvi.fit).parameters else {}
    out = {}
    for form, log_joint, vectorized in (("per draw", log_joint_per_draw, False),
                                        ("all draws at once", log_joint_vectorized, True)):
        for estimator in ("score", "reparam"):
            def run(log_joint=log_joint, vectorized=vectorized, estimator=estimator):
                bbvi.fit(log_joint, init, estimator=estimator, n_iter=ITERATIONS, n_samples=N_SAMPLES, seed=0,
                         learning_rate=0.05, vectorized=vectorized, **extra)
            out[(form, estimator)] = run
    return out


def times(rounds):
    """Seconds per iteration of each fit, round by round: {(form, estimator): list}."""
    measured = interleaved_times(fits(), rounds)
    return {key: (t / ITERATIONS).tolist() for key, t in measured.items()}


def _times_at(revision, rounds):
    """:func:`times` of the package at git ``revision``, in a subprocess."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, "efvi")
        os.makedirs(target)
        archive = subprocess.run(["git", "-C", root, "archive", revision], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
        code = ("import json, sys; from benchmarks.bench_bbvi import times; "
                f"print(json.dumps([[list(k), v] for k, v in times({rounds}).items()]))")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([folder, root]))
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env,
                             cwd=folder)
    return {tuple(k): v for k, v in json.loads(out.stdout.strip().splitlines()[-1])}


def rows(measured, label):
    table = []
    for form in ("per draw", "all draws at once"):
        t = {name: np.array(measured[(form, name)]) for name in ("score", "reparam")}
        ratio = ratio_summary(t, "reparam", "score")
        verdict = "yes" if np.median(t["reparam"] / t["score"]) <= 1.5 else "no"
        table.append((label, form, f"{np.median(t['score']) * 1e3:.2f}", f"{np.median(t['reparam']) * 1e3:.2f}",
                      ratio, verdict))
    return table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--before", metavar="REV", help="also time the package at git revision REV")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 15
    table = rows(times(rounds), "after")
    if args.before:
        table = rows(_times_at(args.before, rounds), f"before ({args.before})") + table
    header = ("code", "log joint", "ms score", "ms reparam", "reparam / score", "<= 1.5?")
    widths = [max(len(str(r[i])) for r in table + [header]) + 2 for i in range(len(header))]
    for r in [header] + table:
        print("".join(str(cell).ljust(w) for cell, w in zip(r, widths)).rstrip())
    print(f"(eight schools, {N_SAMPLES} samples, {ITERATIONS} iterations per fit; medians over {rounds} rounds, "
          f"ratios the median of the round-by-round ratios, range in brackets)")
    return table


if __name__ == "__main__":
    main()
