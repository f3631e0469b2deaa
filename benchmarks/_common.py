"""Shared helpers for the hand-run benchmarks: timing and exact ELBOs of any Gaussian."""

import time

import numpy as np


def best_time(fn, repeat=5):
    """Smallest wall-clock time of ``fn()`` over ``repeat`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved_times(functions, rounds=7):
    """Wall-clock times of several functions, run in turn ``rounds`` times.

    On a machine whose speed drifts (shared cores, CPU steal) timing one
    function after another compares different machines; running them in turn
    and taking each round's ratio compares like with like.  Within a round each
    function is called twice and the second call is timed: numpy and scipy
    bundle separate OpenBLAS builds whose idle threads spin for a while after a
    call, so the first call after the other library's runs up to 1.5x slower.

    Parameters
    ----------
    functions : dict of str to callable
    rounds : int

    Returns
    -------
    dict of str to ndarray, shape (rounds,)
        Seconds per call, round by round.
    """
    for fn in functions.values():
        fn()
    times = {name: [] for name in functions}
    for _ in range(rounds):
        for name, fn in functions.items():
            fn()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: np.array(t) for name, t in times.items()}


def ratio_summary(times, numerator, denominator):
    """``"median r (range lo-hi)"`` of the round-by-round ratios of two entries of ``interleaved_times``."""
    ratios = times[numerator] / times[denominator]
    return f"{np.median(ratios):.2f} (rounds {ratios.min():.2f}-{ratios.max():.2f})"


def exact_elbo(model, block, q):
    """The ELBO of posterior ``q`` for a single-block model, evaluated exactly by its factors."""
    expected = sum(f.evaluate({block: q}).expected_log for f in model.factors)
    return expected - float(model.blocks[block].kl(q))


def time_to_reach(times, elbos, target, gap=0.01):
    """First time at which ``elbos`` come within ``gap`` nats of ``target`` (None if never)."""
    hit = np.flatnonzero(np.asarray(elbos) >= target - gap)
    return None if hit.size == 0 else float(np.asarray(times)[hit[0]])
