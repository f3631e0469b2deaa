"""The sparse-GP classification problem shared by efvi's, GPflow's and BayesNewton's SVGP benchmarks.

numpy only, so that the efvi venv and the separate GPflow and BayesNewton venvs
build bit-identical data, inducing points and kernel settings
(``bench_sparse_gp.py`` runs the three; ``svgp_gpflow_peer.py`` and
``svgp_bayesnewton_peer.py`` are the peers' sides).

Protocol.  Kernel hyperparameters (``KERNEL``, a squared exponential with one
shared lengthscale) and the inducing inputs (``inducing_points``) are fixed, and
``JITTER`` is added to the diagonal of the M x M inducing-point kernel matrix
(GPflow's default jitter).  What is left to fit is the Gaussian q(u) over the
inducing outputs, whose SVGP bound (Hensman, Matthews and Ghahramani, 2015) is
concave in q(u)'s natural parameters for log-concave likelihoods such as the
Bernoulli logit and probit; both libraries therefore climb to the same optimum,
and their converged ELBOs can be compared number for number.

Data.  Inputs are uniform on the box [-3, 3]^2 and labels are drawn as

.. math::

    f(x) = 2 \\sin(1.5 x_1) \\cos(x_2) + 0.5 x_1, \\qquad
    y \\sim \\mathrm{Bernoulli}(\\sigma(f(x))),

with :math:`\\sigma` the logistic sigmoid, whatever link the model then uses.
Points are drawn in fixed chunks of ``CHUNK`` rows, chunk ``c`` from its own
generator seeded by ``(seed, c)``, so N = 1e6 takes a fraction of a second and
the first n points of a larger set are the set of size n.
"""

import numpy as np

KERNEL = dict(variance=1.0, lengthscale=1.0)
"""Squared exponential k(x, x') = variance exp(-|x - x'|^2 / (2 lengthscale^2)), fixed."""

JITTER = 1e-6
"""Added to the diagonal of K(Z, Z) (GPflow's ``default_jitter``); the ELBO depends on it."""

BOX = 3.0
"""Inputs and inducing points lie in [-BOX, BOX]^2."""

CHUNK = 65536
"""Rows per generator chunk (part of the data's definition: changing it changes the data)."""


def latent(X):
    """The true latent function at inputs ``X`` of shape (n, 2); returns shape (n,)."""
    X = np.asarray(X, dtype=np.float64)
    return 2.0 * np.sin(1.5 * X[:, 0]) * np.cos(X[:, 1]) + 0.5 * X[:, 0]


def make_classification(n, seed=0):
    """Binary classification data drawn from a fixed smooth latent function.

    Parameters
    ----------
    n : int
        Number of points, at least 1.
    seed : int
        Non-negative seed; chunk ``c`` of ``CHUNK`` rows uses the generator
        seeded by ``(seed, c)``.

    Returns
    -------
    X : ndarray, shape (n, 2), float64
        Inputs, uniform on [-3, 3]^2.
    y : ndarray, shape (n,), float64
        Labels in {0, 1}, Bernoulli with probability sigmoid(latent(X)).
    """
    n, seed = _count("n", n, 1), _count("seed", seed, 0)
    X = np.empty((n, 2))
    y = np.empty(n)
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        rng = np.random.default_rng([seed, start // CHUNK])
        chunk_X = rng.uniform(-BOX, BOX, size=(CHUNK, 2))
        chunk_u = rng.uniform(size=CHUNK)          # drawn in full so a chunk never depends on n
        X[start:stop] = chunk_X[:stop - start]
        y[start:stop] = chunk_u[:stop - start] < 1.0 / (1.0 + np.exp(-latent(X[start:stop])))
    return X, y


def inducing_points(m, seed=0):
    """A fixed set of ``m`` inducing inputs spread evenly over the box.

    A stratified draw: the box is cut into a k x k grid with k = ceil(sqrt(m)),
    ``m`` of its cells are chosen at random without replacement, and one point is
    placed uniformly inside each chosen cell.  Points are therefore never closer
    than chance allows within a cell, which keeps K(Z, Z) better conditioned than
    a plain uniform draw.

    Parameters
    ----------
    m : int
        Number of inducing points, at least 1.
    seed : int
        Non-negative seed of the draw.

    Returns
    -------
    ndarray, shape (m, 2), float64
        Inducing inputs in [-3, 3]^2, in cell order (row-major over the grid).
    """
    m, seed = _count("m", m, 1), _count("seed", seed, 0)
    rng = np.random.default_rng([seed, 2**31 - 1])   # a stream the data chunks never use
    k = int(np.ceil(np.sqrt(m)))
    cells = np.sort(rng.choice(k * k, size=m, replace=False))
    corner = np.stack([cells // k, cells % k], axis=1).astype(np.float64)
    width = 2.0 * BOX / k
    return -BOX + width * (corner + rng.uniform(size=(m, 2)))


def _count(name, value, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)
