"""Shared test helpers: a central-difference Jacobian and slow reference kernels."""

import math

import numpy as np

from efvi.models.gp import kernels


def central_jacobian(f, x, h=1e-4):
    """Jacobian of ``f: R^n -> R^m`` (output flattened) by Richardson-extrapolated central differences.

    ``(4 D(h/2) - D(h)) / 3`` with ``D`` the central difference cancels the
    ``h^2`` term: the truncation error is ``O(h^4 |f^(5)|)`` and the rounding
    error ``O(eps |f| / h)``.  With ``h = 1e-4`` on log-scale parameters both
    stay below ~1e-11 times the scale of ``f`` even for the fast resonators of
    a periodic state space (frequencies up to ~50 per unit log-period).
    """
    x = np.asarray(x, dtype=float)

    def central(i, step):
        e = np.zeros_like(x)
        e[i] = step
        return (np.ravel(f(x + e)) - np.ravel(f(x - e))) / (2.0 * step)

    return np.stack([(4.0 * central(i, h / 2) - central(i, h)) / 3.0 for i in range(x.size)], axis=-1)


FD_RTOL = 1e-8
"""Finite-difference agreement, relative to the largest Jacobian entry (see central_jacobian)."""


def _scaled_distance(x, y, lengthscale):
    return math.sqrt(sum(((a - b) / s) ** 2 for a, b, s in zip(x, y, np.broadcast_to(lengthscale, len(x)))))


def reference_entry(kernel, x, y, same):
    """``k(x, y)`` for one pair of points, written directly from each kernel's formula."""
    if isinstance(kernel, kernels.Sum):
        return sum(reference_entry(part, x, y, same) for part in kernel.parts)
    if isinstance(kernel, kernels.Product):
        return math.prod(reference_entry(part, x, y, same) for part in kernel.parts)
    if isinstance(kernel, kernels.RBF):
        return kernel.variance * math.exp(-0.5 * _scaled_distance(x, y, kernel.lengthscale) ** 2)
    if isinstance(kernel, kernels.Matern12):
        return kernel.variance * math.exp(-_scaled_distance(x, y, kernel.lengthscale))
    if isinstance(kernel, kernels.Matern32):
        r = math.sqrt(3.0) * _scaled_distance(x, y, kernel.lengthscale)
        return kernel.variance * (1.0 + r) * math.exp(-r)
    if isinstance(kernel, kernels.Matern52):
        d = _scaled_distance(x, y, kernel.lengthscale)
        return kernel.variance * (1.0 + math.sqrt(5.0) * d + 5.0 * d * d / 3.0) * math.exp(-math.sqrt(5.0) * d)
    if isinstance(kernel, kernels.Periodic):
        s2 = sum(math.sin(math.pi * (a - b) / kernel.period) ** 2 for a, b in zip(x, y))
        return kernel.variance * math.exp(-2.0 * s2 / kernel.lengthscale**2)
    if isinstance(kernel, kernels.Linear):
        offset = kernel.offset if "offset" in kernel.param_names else 0.0
        return kernel.variance * sum(a * b for a, b in zip(x, y)) + offset
    if isinstance(kernel, kernels.Constant):
        return kernel.variance
    if isinstance(kernel, kernels.White):
        return kernel.variance if same else 0.0
    raise AssertionError(f"no reference for {kernel!r}")


def reference_matrix(kernel, X, X2=None):
    """Kernel matrix by a double loop over points."""
    X = np.asarray(X, dtype=float).reshape(len(X), -1)
    pairs = X if X2 is None else np.asarray(X2, dtype=float).reshape(len(X2), -1)
    return np.array(
        [[reference_entry(kernel, x, y, X2 is None and i == j) for j, y in enumerate(pairs)] for i, x in enumerate(X)]
    )


def all_kernels(dim):
    """One instance of every kernel type (ARD where supported) and some combinations, for ``dim`` inputs."""
    rng = np.random.default_rng(dim)
    ard = rng.uniform(0.5, 2.0, size=dim)
    return {
        "RBF": kernels.RBF(lengthscale=0.9, variance=1.7),
        "RBF-ARD": kernels.RBF(lengthscale=ard, variance=0.6),
        "Matern12": kernels.Matern12(lengthscale=1.3, variance=0.8),
        "Matern32-ARD": kernels.Matern32(lengthscale=ard, variance=2.1),
        "Matern52": kernels.Matern52(lengthscale=0.7, variance=1.4),
        "Periodic": kernels.Periodic(period=1.9, lengthscale=0.8, variance=1.2),
        "Linear": kernels.Linear(variance=0.5),
        "Linear-offset": kernels.Linear(variance=0.5, offset=0.3),
        "Constant": kernels.Constant(variance=0.4),
        "White": kernels.White(variance=0.25),
        "Sum": kernels.Matern32(lengthscale=0.6) + kernels.Linear(variance=0.2) + kernels.White(variance=0.1),
        "Product": kernels.RBF(lengthscale=ard, variance=1.1) * kernels.Periodic(period=2.5, lengthscale=1.5),
        "Nested": 0.7 * (kernels.Matern52(lengthscale=1.2) + kernels.Matern12(lengthscale=0.4, variance=0.3)),
    }
