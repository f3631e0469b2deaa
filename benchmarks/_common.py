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


def exact_elbo(model, block, q):
    """The ELBO of posterior ``q`` for a single-block model, evaluated exactly by its factors."""
    expected = sum(f.evaluate({block: q}).expected_log for f in model.factors)
    return expected - float(model.blocks[block].kl(q))


def time_to_reach(times, elbos, target, gap=0.01):
    """First time at which ``elbos`` come within ``gap`` nats of ``target`` (None if never)."""
    hit = np.flatnonzero(np.asarray(elbos) >= target - gap)
    return None if hit.size == 0 else float(np.asarray(times)[hit[0]])
