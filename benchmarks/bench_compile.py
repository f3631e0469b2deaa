"""Compile time of efvi's numba kernels from an empty cache, per first use and per kernel (issue 26 item 1).

Run by hand:  OPENBLAS_NUM_THREADS=1 python benchmarks/bench_compile.py  [--quick]

Each scenario (the quick start's GLM, a dense GP, a Markov GP, a sparse GP, a
Bayesian MLP, the composite seasonal Markov kernel) runs in a fresh
interpreter twice: first with ``NUMBA_CACHE_DIR`` pointing at an empty
folder (every kernel compiles), then again with that folder filled (every
kernel loads).  The script prints each scenario's CPU time cold and warm and
their difference (the compile cost a new user pays), then every kernel that
compiled, largest first, with its compile time as efvi's logger reports it
(``compiled numba kernel ... in ... s``, summed over a kernel's
specialisations, with their number).
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

SCENARIOS = {
    "GLM (quick start)": """
from sklearn.datasets import load_breast_cancer
from efvi.models import glm
X, y = load_breast_cancer(return_X_y=True)
glm.BayesianLogisticRegression().fit((X - X.mean(0)) / X.std(0), y)
""",
    "dense GP": """
import numpy as np
from efvi.models import gp
X = np.linspace(0, 5, 100)[:, None]
gp.GPClassifier().fit(X, (np.sin(2 * X[:, 0]) > 0).astype(int))
""",
    "Markov GP": """
import numpy as np
from efvi.models import lds
t = np.linspace(0, 100, 500)
lds.MarkovGPRegressor().fit(t[:, None], np.sin(t / 5))
""",
    "sparse GP": """
import numpy as np
from efvi.models import gp
X = np.linspace(0, 5, 400)[:, None]
gp.GPRegressor(n_inducing=20).fit(X, np.sin(2 * X[:, 0]))
""",
    "Bayesian MLP": """
from sklearn.datasets import load_digits
from efvi.models import nn
X, y = load_digits(return_X_y=True)
nn.BayesianMLPClassifier(epochs=2).fit(X[:300], y[:300])
""",
    "seasonal Markov kernel": """
import numpy as np
from efvi.models import lds
from efvi.models.gp.kernels import Matern32, Matern52, Periodic
t = np.linspace(0, 100, 500)
kernel = Matern52() + Periodic(period=10.0) * Matern32()
lds.MarkovGPRegressor(kernel=kernel, max_iter=20).fit(t[:, None], np.sin(t / 5) + np.sin(t))
""",
}
_PREAMBLE = """
import logging, resource, sys, warnings
warnings.simplefilter("ignore")
logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
logging.getLogger("efvi").setLevel(logging.INFO)
"""
_TAIL = """
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime)
"""
_COMPILED = re.compile(r"compiled numba kernel (\S+) in ([0-9.]+) s")


def run(code, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    done = subprocess.run([sys.executable, "-c", _PREAMBLE + code + _TAIL], capture_output=True, text=True,
                          env=env, check=True)
    kernels = [(name, float(seconds)) for name, seconds in _COMPILED.findall(done.stderr)]
    return float(done.stdout.split()[-1]), kernels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the GLM and the Markov GP only")
    args = parser.parse_args()
    names = ["GLM (quick start)", "Markov GP"] if args.quick else list(SCENARIOS)
    totals = collections.defaultdict(lambda: [0.0, 0])
    print(f"{'scenario':26s} {'cold CPU s':>10s} {'warm CPU s':>10s} {'compile s':>10s}  kernels compiled")
    for name in names:
        with tempfile.TemporaryDirectory() as cache_dir:
            cold, kernels = run(SCENARIOS[name], cache_dir)
            warm, again = run(SCENARIOS[name], cache_dir)
        print(f"{name:26s} {cold:10.2f} {warm:10.2f} {cold - warm:10.2f}  {len(kernels)} (warm: {len(again)})")
        for kernel, seconds in kernels:
            totals[kernel][0] += seconds
            totals[kernel][1] += 1
    print("\nkernels by compile time (summed over the scenarios' cold runs; each from an empty cache):")
    for kernel, (seconds, count) in sorted(totals.items(), key=lambda item: -item[1][0])[:40]:
        print(f"  {seconds:7.2f} s  x{count:<3d} {kernel}")


if __name__ == "__main__":
    main()
