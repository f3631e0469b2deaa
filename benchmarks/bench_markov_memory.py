"""Peak memory and time of a Markov GP fit at T = 1e5 ... 1e8 time steps (Matern-3/2, a 2-dimensional state).

Each size runs in a fresh subprocess, which

1. imports efvi and fits a small problem (the kernels compile or load from
   numba's cache), then records its resident memory as the *baseline*;
2. resets the kernel's peak-memory counter (``/proc/self/clear_refs``; where
   that is not allowed a thread samples ``VmRSS`` every 2 ms instead);
3. makes the data chunk by chunk: irregular times with gaps uniform in
   [0.5, 1.5], a smooth latent path (a sum of sinusoids with periods of
   tens to hundreds of time units) and Poisson counts with rate ``exp(f)``,
   or Gaussian values with noise variance 0.25;
4. fits ``Model({"f": lds.MarkovGP(Matern32(50, 1), t)}, [Observe(lik, y)])``
   with the default settings and reads the peak (``VmHWM``).

It reports, per time step, the data (``t`` and ``y``: 16 bytes), the fit's
working memory (peak minus the memory after making the data) and the total
``(peak - baseline) / T``, with the fit's time, iterations and time per
iteration.  T = 1e8 runs only with ``--huge``, and only if ``free`` reports
at least ``--min-free-gb`` GB available.

Run from the repository root: ``python -m benchmarks.bench_markov_memory``
(``--sizes 100000 1000000``; ``--likelihood gaussian``; ``--low-memory on``
or ``off`` to force a mode instead of efvi's default).

``--learn`` makes each fit learn the kernel's hyperparameters (L-BFGS on the
ELBO, at most ``--hyper-max-iter`` iterations, from lengthscale 20 and
variance 0.5) and adds the number of ELBO evaluations to the report;
``--learn --low-memory on`` against ``--learn --low-memory off`` gives the
memory per step of learning in each mode.

``--compare T`` instead times the two modes against each other in one
process: fits of ``--max-iter`` iterations, stored and low-memory in turn,
``--repeats`` times, and prints the median time per iteration of each (the
first iteration of each fit left out) and their ratio.  With ``--learn`` it
times one evaluation of ``log Z`` and its gradient (what an L-BFGS step of
learning adds to re-converging the sites) instead, at the sites of a
converged fit, ``--repeats`` times per mode, alternated.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

CHUNK = 1 << 20
LENGTHSCALE, VARIANCE, NOISE_VARIANCE = 50.0, 1.0, 0.25
LEARN_START = (20.0, 0.5)
"""Lengthscale and variance a learning fit starts from."""
PERIODS = (40.0, 97.0, 230.0, 610.0)


def _status(field):
    """A ``/proc/self/status`` field in bytes (``VmRSS``, ``VmHWM``)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


class PeakMemory:
    """The peak resident memory from now on: the kernel's counter after a reset, else a sampling thread."""

    def __init__(self):
        try:
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")
            self._thread = None
        except OSError:
            self._peak, self._stop = _status("VmRSS"), threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()

    def _sample(self):
        while not self._stop.wait(0.002):
            self._peak = max(self._peak, _status("VmRSS"))

    def peak(self):
        if self._thread is None:
            return _status("VmHWM")
        self._stop.set()
        self._thread.join()
        return max(self._peak, _status("VmRSS"))


def make_data(T, likelihood, seed=0):
    """Times (T,) and observations (T,), made in chunks of ``CHUNK`` steps (no T-sized temporaries)."""
    rng = np.random.default_rng(seed)
    phases = rng.uniform(0.0, 2.0 * np.pi, len(PERIODS))
    t, y = np.empty(T), np.empty(T)
    last = 0.0
    for start in range(0, T, CHUNK):
        stop = min(T, start + CHUNK)
        times = t[start:stop]
        times[:] = rng.uniform(0.5, 1.5, stop - start)
        np.cumsum(times, out=times)
        times += last
        last = times[-1]
        f = sum(np.sin(2.0 * np.pi * times / period + phase) for period, phase in zip(PERIODS, phases)) / 2.0
        if likelihood == "poisson":
            y[start:stop] = rng.poisson(np.exp(f))
        else:
            y[start:stop] = f + np.sqrt(NOISE_VARIANCE) * rng.normal(size=stop - start)
    return t, y


def make_model(t, y, likelihood, low_memory, learn=False, hyper_max_iter=10):
    from efvi.inference import Model
    from efvi.models import Observe, gp, lds, likelihoods

    lengthscale, variance = LEARN_START if learn else (LENGTHSCALE, VARIANCE)
    kernel = gp.kernels.Matern32(lengthscale=lengthscale, variance=variance)
    options = {} if low_memory == "auto" else {"low_memory": low_memory == "on"}
    if learn:
        options.update(learn_hyperparameters=True, hyper_max_iter=hyper_max_iter)
    lik = likelihoods.Poisson() if likelihood == "poisson" else likelihoods.Gaussian(variance=NOISE_VARIANCE)
    return Model({"f": lds.MarkovGP(kernel, t, **options)}, [Observe(lik, y, on="f")])


def child(T, likelihood, low_memory, learn=False, hyper_max_iter=10):
    """Measure one size in this process; print one JSON line."""
    import gc

    from efvi.models.lds import prior

    # compile or load every kernel the fit may use (both modes: the passes differ)
    modes = ("on", "off") if low_memory == "auto" and hasattr(prior, "LOW_MEMORY_STEPS") else (low_memory,)
    small = make_data(3000, likelihood, seed=1)
    for mode in modes:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                     # a short learning fit may stop unconverged
            make_model(*small, likelihood, mode, learn, 2).fit()
    del small
    gc.collect()
    baseline = _status("VmRSS")
    peak = PeakMemory()
    t, y = make_data(T, likelihood)
    after_data = _status("VmRSS")
    model = make_model(t, y, likelihood, low_memory, learn, hyper_max_iter)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit()
    seconds = time.perf_counter() - start
    top = peak.peak()
    block = model.blocks["f"]
    print(json.dumps({
        "T": T, "likelihood": likelihood, "low_memory": bool(getattr(block, "low_memory", False)),
        "baseline": baseline, "data": after_data - baseline, "peak": top, "seconds": seconds,
        "n_iter": int(fit.n_iter), "converged": bool(fit.converged), "elbo": float(fit.elbo),
        "per_iteration": float(np.median(fit.timings["per_iteration"])),
        "evaluations": len(fit.state.hyper.evaluations) if learn else 0,
        "hyperparameters": {name: round(float(value), 6) for name, value in fit.hyperparameters.get("f", {}).items()},
    }))


def compare(T, likelihood="poisson", repeats=2, max_iter=6):
    """Median seconds per iteration of the stored and the low-memory fits, alternated in this process."""
    make_model(*make_data(3000, likelihood, seed=1), likelihood, "on").fit()        # compile or load the kernels
    make_model(*make_data(3000, likelihood, seed=1), likelihood, "off").fit()
    t, y = make_data(T, likelihood)
    times = {"off": [], "on": []}
    for _ in range(repeats):
        for mode, seconds in times.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")                 # stopping at max_iter is intended
                fit = make_model(t, y, likelihood, mode).fit(max_iter=max_iter)
            seconds.extend(fit.timings["per_iteration"][1:])
    stored, low = (float(np.median(times[mode])) for mode in ("off", "on"))
    print(f"T = {T:,}, {likelihood}: s/iter stored {stored:.3f}, low-memory {low:.3f}, ratio {low / stored:.2f} "
          f"({repeats} fits of {max_iter} iterations each, alternated)")
    return stored, low


def compare_log_normaliser(T, likelihood="poisson", repeats=5):
    """Median seconds of one ``log Z`` and gradient evaluation of a stored and a low-memory block, alternated."""
    from efvi.models import gp, lds

    t, y = make_data(T, likelihood)
    fit = make_model(t, y, likelihood, "off").fit()
    message = (fit.sites[0].natural_mean, fit.sites[0].precision)
    kernel = gp.kernels.Matern32(lengthscale=LENGTHSCALE, variance=VARIANCE)
    blocks = {mode: lds.MarkovGP(kernel, t, low_memory=mode == "on") for mode in ("off", "on")}
    times, results = {"off": [], "on": []}, {}
    for mode, block in blocks.items():
        results[mode] = block.log_normaliser(kernel.log_params, message)       # compile or load the kernels
    for _ in range(repeats):
        for mode, block in blocks.items():
            start = time.perf_counter()
            block.log_normaliser(kernel.log_params, message)
            times[mode].append(time.perf_counter() - start)
    stored, low = (float(np.median(times[mode])) for mode in ("off", "on"))
    (value_off, grad_off), (value_on, grad_on) = results["off"], results["on"]
    difference = max(abs(value_on - value_off) / abs(value_off),
                     float(np.max(np.abs(grad_on - grad_off)) / np.max(np.abs(grad_off))))
    print(f"T = {T:,}, {likelihood} sites: s per log Z + gradient stored {stored:.3f}, low-memory {low:.3f}, "
          f"ratio {low / stored:.2f} (median of {repeats}, alternated; largest relative difference {difference:.1e})")
    return stored, low


def available_gb():
    """``MemAvailable`` of ``/proc/meminfo`` in GB."""
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    return float("nan")


def measure(T, likelihood, low_memory, learn=False, hyper_max_iter=10):
    """Run :func:`child` in a fresh interpreter; returns its figures (dict)."""
    command = [sys.executable, "-m", "benchmarks.bench_markov_memory", "--child", str(T),
               "--likelihood", likelihood, "--low-memory", low_memory, "--hyper-max-iter", str(hyper_max_iter)]
    command += ["--learn"] if learn else []
    env = dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the T={T} run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(result):
    T = result["T"]
    fit_bytes = result["peak"] - result["baseline"] - result["data"]
    total = result["peak"] - result["baseline"]
    print(f"{T:>11,} {result['likelihood']:>9} {str(result['low_memory']):>6} {result['data'] / T:>6.0f} "
          f"{fit_bytes / T:>8.0f} {total / T:>7.0f} {total / 1e9:>8.2f} {result['seconds']:>8.1f} "
          f"{result['n_iter']:>5} {result['per_iteration']:>8.3f}"
          + (f"  {result['evaluations']} ELBO evaluations, learned {result['hyperparameters']}"
             if result.get("evaluations") else "")
          + ("" if result["converged"] else "  (NOT converged)"), flush=True)


def main(sizes=(100_000, 1_000_000, 10_000_000), likelihood="poisson", low_memory="auto", huge=False,
         min_free_gb=18.0, learn=False, hyper_max_iter=10):
    sizes = list(sizes) + ([100_000_000] if huge else [])
    what = f"learning fit (at most {hyper_max_iter} L-BFGS iterations)" if learn else "default fit"
    print(f"Markov GP (Matern-3/2, d = 2), {likelihood} observations, {what}; bytes per time step above a "
          f"baseline of imports and compiled kernels")
    print(f"{'T':>11} {'lik':>9} {'lowmem':>6} {'data':>6} {'fit B/T':>8} {'all B/T':>7} {'peak GB':>8} "
          f"{'fit s':>8} {'iters':>5} {'s/iter':>8}")
    results = []
    for T in sizes:
        if T >= 50_000_000 and available_gb() < min_free_gb:
            print(f"{T:>11,}  skipped: {available_gb():.1f} GB available, fewer than --min-free-gb={min_free_gb}")
            continue
        result = measure(T, likelihood, low_memory, learn, hyper_max_iter)
        report(result)
        results.append(result)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--likelihood", choices=["poisson", "gaussian"], default="poisson")
    parser.add_argument("--low-memory", choices=["auto", "on", "off"], default="auto")
    parser.add_argument("--huge", action="store_true", help="also run T = 1e8")
    parser.add_argument("--min-free-gb", type=float, default=18.0)
    parser.add_argument("--learn", action="store_true", help="learn the kernel's hyperparameters")
    parser.add_argument("--hyper-max-iter", type=int, default=10)
    parser.add_argument("--compare", type=int, metavar="T", help="time stored against low-memory fits at T steps")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-iter", type=int, default=6)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.compare is not None and options.learn:
        compare_log_normaliser(options.compare, options.likelihood, options.repeats)
    elif options.compare is not None:
        compare(options.compare, options.likelihood, options.repeats, options.max_iter)
    elif options.child is not None:
        child(options.child, options.likelihood, options.low_memory, options.learn, options.hyper_max_iter)
    else:
        main(options.sizes, options.likelihood, options.low_memory, options.huge, options.min_free_gb, options.learn,
             options.hyper_max_iter)
