r"""Gauss-Hermite rules for expectations under a Gaussian.

For :math:`a \sim \mathcal N(m, v)`,

.. math::

    \mathbb E[g(a)] \approx \sum_{k=1}^{n} w_k \, g(m + \sqrt v \, z_k),

with :math:`z_k` the roots of the probabilists' Hermite polynomial
:math:`He_n` and weights normalised so that :math:`\sum_k w_k = 1`.  The rule
is exact when :math:`g` is a polynomial of degree at most :math:`2n - 1`.

**The adaptive ladder (the default).**  For :math:`g` analytic in a strip
:math:`|\mathrm{Im}\, a| < d` (``d = pi`` for the logistic, where
:math:`\log(1 + e^a)` has poles at :math:`\pm i\pi`), the error of the
:math:`n`-point rule behaves like :math:`\exp(-c \sqrt{n}\, d / \sqrt v)`;
measured for the logistic, :math:`c \approx 1.5`.  A fixed 20-point rule is
therefore accurate to 1e-10 only while :math:`\sqrt v \lesssim 0.3 d`, and
off by 1e-4 nats per point at :math:`\sqrt v = d`, as happens early in a fit
or for poorly determined points at the optimum (breast-cancer logistic
regression: 5e-4 nats in total with 20 points).  So each data point gets the
smallest rule of the ladder ``LADDER_POINTS`` whose error bound at its own
:math:`\sqrt{v_i} / d` is below about 1e-11 (``LADDER_EDGES``); the largest
rule (160 points) is used beyond the last edge: its error bound there is about
1e-7 per point at :math:`\sqrt v = 2d`, and a point whose variance stays that
large at the optimum is one whose likelihood term barely matters (breast
cancer: 5e-10 nats in total at the optimum).  ``BernoulliLogit`` uses an exact
rule of 4 to 48 nodes instead of the 80- and 160-point rules (:mod:`._logistic`,
built by ``weighted_gauss_rules``).  Points with small
posterior variance -- nearly all of them in a large data set -- get a 3-, 4- or
6-point rule.
"""

import functools
import operator

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from numpy.polynomial.legendre import leggauss
from scipy.linalg import eigh_tridiagonal
from scipy.special import roots_hermitenorm

DEFAULT_N_POINTS = None
"""``None``: expectations use the adaptive ladder; an int fixes one rule for every point."""

PREDICT_N_POINTS = 64
"""Gauss-Hermite points of the predictive routes when neither the call nor the likelihood fixes one."""

MAX_N_POINTS = 320
"""Largest rule offered."""

LADDER_POINTS = (3, 4, 6, 10, 14, 20, 24, 28, 32, 40, 80, 160)
"""Rules of the adaptive ladder."""

LADDER_EDGES = (0.008, 0.024, 0.06, 0.14, 0.19, 0.27, 0.29, 0.32, 0.35, 0.38, 0.54)
"""Largest ``sqrt(v) / d`` at which each rule but the last is used (logistic error below 1e-11;
measured maxima over m in [-6, 6]: 3 points 9e-13 at 0.0088, 4 points 9e-13 at 0.025,
6 points 5e-13 at 0.064, 10 points 8e-13 at 0.14, 14 points 3e-13 at 0.19, 20 points 9e-13
at 0.27).  The 24-, 28- and 32-point rules keep the error of ``E``, ``dE/dm`` and ``dE/dv``
below 1e-11 for m in [-30, 30] up to 0.295, 0.3275 and 0.3575 (measured against the 120-point
rule); without them every point from 0.27 to 0.38 took 40 points.  Large data sets put most
points on the 3- and 4-point rules."""

PRICE_BELOW = 0.05
"""Below ``sqrt(v) / d`` = 0.05 every rule is exact to rounding, so ``dE/dv`` may use Price's form."""


def check_n_points(n_points, name="n_points"):
    """Return ``n_points`` (None: adaptive) after checking 1 <= n_points <= MAX_N_POINTS.

    Raises
    ------
    ValueError
        Naming ``name`` if ``n_points`` is not an integer in that range.
    """
    if n_points is None:
        return None
    try:
        value = operator.index(n_points)
    except TypeError:
        raise ValueError(f"{name} must be an integer; got {n_points!r}") from None
    if not 1 <= value <= MAX_N_POINTS:
        raise ValueError(f"{name} must lie in [1, {MAX_N_POINTS}]; got {value}")
    return value


@functools.lru_cache(maxsize=None)
def _rule(n_points):
    # numpy's Golub-Welsch rule is the more accurate one up to 150 points; beyond, its weights
    # overflow and scipy's asymptotic rule takes over (both are exactly symmetric)
    nodes, weights = hermegauss(n_points) if n_points <= 150 else roots_hermitenorm(n_points)
    weights = weights / weights.sum()
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def gauss_hermite(n_points):
    """Nodes and weights of the ``n_points`` Gauss-Hermite rule for a standard normal.

    Parameters
    ----------
    n_points : int
        Number of nodes, 1 <= n_points <= ``MAX_N_POINTS``.

    Returns
    -------
    nodes : ndarray, shape (n_points,)
        Points z_k; the expectation under N(m, v) evaluates at m + sqrt(v) z_k.
    weights : ndarray, shape (n_points,)
        Positive weights summing to 1.

    Both arrays are fresh, writeable, C-contiguous float64 copies (the compiled
    kernels take writeable arrays).
    """
    nodes, weights = _rule(check_n_points(n_points))
    return nodes.copy(), weights.copy()


@functools.lru_cache(maxsize=None)
def ladder(strip_half_width, n_points=None):
    """The quadrature ladder of a likelihood, as arrays for the compiled kernels.

    Parameters
    ----------
    strip_half_width : float
        ``d``: ``log p(y | a)`` is analytic for ``|Im a| < d``.
    n_points : int, optional
        A fixed rule instead of the ladder.

    Returns
    -------
    nodes, weights : ndarray, shape (R, n_max)
        Rule ``r`` in row ``r``, zero-padded.
    counts : ndarray of int64, shape (R,)
        Points of each rule.
    sd_edges : ndarray, shape (R - 1,)
        Data point ``i`` uses the first rule ``r`` with ``sqrt(v_i) <= sd_edges[r]``, else the last.
    """
    sizes = LADDER_POINTS if n_points is None else (check_n_points(n_points),)
    edges = np.asarray(LADDER_EDGES if n_points is None else (), dtype=float) * strip_half_width
    nodes = np.zeros((len(sizes), max(sizes)))
    weights = np.zeros((len(sizes), max(sizes)))
    for r, size in enumerate(sizes):
        nodes[r, :size], weights[r, :size] = _rule(size)
    return nodes, weights, np.asarray(sizes, dtype=np.int64), edges


_PANEL_POINTS = 64
"""Gauss-Legendre points per unit interval in the discretisation of a weight (``weighted_gauss_rules``)."""


def weighted_gauss_rules(weight, upper, sizes):
    """Gauss rules for ``integral_0^upper weight(t) f(t) dt``, one for each size.

    The measure ``weight(t) dt`` is discretised by a 64-point Gauss-Legendre rule on each unit
    interval (exact to rounding for polynomials of degree < 128 times an analytic weight), and the
    recurrence of its orthogonal polynomials comes from Lanczos' method on that discrete measure,
    reorthogonalised at every step; the rules are the eigenvalues of the leading Jacobi matrices
    and the squared first components of their eigenvectors (Golub and Welsch, 1969).

    Parameters
    ----------
    weight : callable
        A positive weight on [0, upper], analytic in a neighbourhood of it, vectorised over arrays.
    upper : int
        End of the interval.
    sizes : tuple of int
        Points of each rule, at most 64.

    Returns
    -------
    nodes, weights : ndarray, shape (len(sizes), max(sizes))
        Rule ``r`` in row ``r``, zero-padded; exact for ``f`` a polynomial of degree
        < ``2 sizes[r]`` (to rounding).
    """
    largest = max(sizes)
    if largest > _PANEL_POINTS:
        raise ValueError(f"sizes must be at most {_PANEL_POINTS}; got {largest}")
    base, base_weights = leggauss(_PANEL_POINTS)
    starts = np.arange(0.0, upper, 1.0)
    points = (starts[:, None] + 0.5 * (base + 1.0)).ravel()
    masses = np.tile(0.5 * base_weights, starts.size) * weight(points)
    basis = np.zeros((largest, points.size))
    diagonal, off_diagonal = np.zeros(largest), np.zeros(largest - 1)
    basis[0] = np.sqrt(masses / masses.sum())
    for k in range(largest):
        residual = points * basis[k]
        diagonal[k] = basis[k] @ residual
        for _ in range(2):
            residual -= basis[: k + 1].T @ (basis[: k + 1] @ residual)
        if k + 1 < largest:
            off_diagonal[k] = np.linalg.norm(residual)
            basis[k + 1] = residual / off_diagonal[k]
    nodes, weights = np.zeros((len(sizes), largest)), np.zeros((len(sizes), largest))
    for r, size in enumerate(sizes):
        rule_nodes, vectors = eigh_tridiagonal(diagonal[:size], off_diagonal[: size - 1])
        nodes[r, :size], weights[r, :size] = rule_nodes, masses.sum() * vectors[0] ** 2
    return nodes, weights
