"""The BLAS thread guard under load: default BLAS threads against ``OPENBLAS_NUM_THREADS=1`` (issue 26 item 2).

Run by hand:  python benchmarks/bench_threads.py  [--quick]

Each case runs in a fresh interpreter, once to compile (numba's cache) and
then timed: the breast-cancer logistic regression of the quick start, a
``GPClassifier()`` on 300 points and a ``MarkovGPRegressor`` on T points.
Every case runs twice per round, with BLAS's default threads and with
``OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1``, in turn; the
loaded rounds run beside ``--load`` busy processes that this script starts and
stops (a load of 4 on two cores by default).  The target: with the default
threads at most 1.3x the one-thread time under load.  On a quiet machine the
large problems (a GLM with N = 1e6, D = 200; a dense GP regression on 4000
points; ``--large``) should still gain from two threads.
"""

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

CASES = {
    "quick start GLM (569 x 31)": """
from sklearn.datasets import load_breast_cancer
from efvi.models import glm
X, y = load_breast_cancer(return_X_y=True)
X = (X - X.mean(0)) / X.std(0)
def work():
    glm.BayesianLogisticRegression().fit(X, y)
""",
    "GPClassifier() on 300 points": """
import numpy as np
from efvi.models import gp
rng = np.random.default_rng(0)
X = rng.uniform(-3, 3, (300, 2)); y = (np.sin(X[:, 0]) + X[:, 1] > 0).astype(int)
def work():
    gp.GPClassifier().fit(X, y)
""",
    "MarkovGPRegressor, T = {T}": """
import numpy as np
from efvi.models import lds
rng = np.random.default_rng(0)
t = np.sort(rng.uniform(0, 1000, {T})); y = np.sin(t / 20) + 0.3 * rng.normal(size={T})
def work():
    lds.MarkovGPRegressor(max_iter=5).fit(t[:, None], y)
""",
}
LARGE = {
    "GLM N = 1e6, D = 200": """
import numpy as np
from efvi.models import glm
rng = np.random.default_rng(0)
X = rng.normal(size=(1_000_000, 200)); y = (X[:, 0] + rng.normal(size=1_000_000) > 0).astype(int)
def work():
    glm.BayesianLogisticRegression(max_iter=5).fit(X, y)
""",
    "GPRegressor, N = 4000": """
import numpy as np
from efvi.models import gp
rng = np.random.default_rng(0)
X = rng.uniform(-3, 3, (4000, 1)); y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=4000)
def work():
    gp.GPRegressor(learn_hyperparameters=False, learn_noise=False).fit(X, y)
""",
}
_TIMER = """
import time, warnings
warnings.simplefilter("ignore")
work()
start = time.perf_counter(); work(); print(time.perf_counter() - start)
"""
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def _spin():
    while True:
        pass


def seconds(code, one_thread):
    env = {k: v for k, v in os.environ.items() if k not in ONE_THREAD}
    if one_thread:
        env.update(ONE_THREAD)
    done = subprocess.run([sys.executable, "-c", code + _TIMER], capture_output=True, text=True, env=env,
                          check=True)
    return float(done.stdout.split()[-1])


def measure(cases, rounds, load):
    busy = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(load)]
    for process in busy:
        process.start()
    try:
        time.sleep(0.5 if load else 0.0)
        out = {}
        for name, code in cases.items():
            pairs = [(seconds(code, False), seconds(code, True)) for _ in range(rounds)]
            out[name] = pairs
        return out
    finally:
        for process in busy:
            process.terminate()


def report(title, results):
    print(title)
    for name, pairs in results.items():
        default = statistics.median(p[0] for p in pairs)
        one = statistics.median(p[1] for p in pairs)
        ratio = statistics.median(p[0] / p[1] for p in pairs)
        print(f"  {name:32s} default {default:8.3f} s   one thread {one:8.3f} s   ratio {ratio:5.2f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, T = 1e4")
    parser.add_argument("--load", type=int, default=4, help="busy processes beside the loaded rounds")
    parser.add_argument("--large", action="store_true", help="also the large problems, on a quiet machine")
    args = parser.parse_args()
    rounds, T = (1, 10_000) if args.quick else (3, 100_000)
    cases = {name.format(T=T): code.replace("{T}", str(T)) for name, code in CASES.items()}
    report(f"loaded ({args.load} busy processes on {os.cpu_count()} cores)", measure(cases, rounds, args.load))
    report("quiet", measure(cases, rounds, 0))
    if args.large:
        report("quiet, large problems", measure(LARGE, rounds, 0))


if __name__ == "__main__":
    main()
