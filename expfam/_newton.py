"""Natural parameters from mean parameters by a safeguarded Newton solve: the derived inverse map.

The natural parameters with mean parameters :math:`\\mu` minimise the convex function

.. math::

    f(\\lambda) = A(\\lambda) - \\langle \\lambda, \\mu \\rangle, \\qquad
    f(\\lambda) - \\min f = KL(q_{\\lambda^*} \\| q_\\lambda) \\ge 0,

whose gradient is :math:`\\nabla A(\\lambda) - \\mu` (the family's ``natural_to_mean``
less the target) and whose Hessian is the Fisher information :math:`F(\\lambda)`
(``fisher``); each may be a closed form or the autograd route.  Newton's method steps

.. math:: \\Delta = F(\\lambda)^{-1} (\\nabla A(\\lambda) - \\mu), \\qquad \\lambda \\leftarrow \\lambda - t \\Delta,

with the first :math:`t \\in \\{1, 1/2, 1/4, \\dots\\}` (at most ``MAX_HALVINGS``
halvings) at which

* :math:`\\lambda - t \\Delta` lies in the natural parameter space
  (``is_valid_natural``) and :math:`f` is finite there, and
* :math:`f` decreases by at least ``ARMIJO`` :math:`t \\langle \\nabla f, \\Delta \\rangle`
  (Armijo's condition), to within the rounding of :math:`f`,
  :math:`8 \\epsilon (|A| + |\\langle \\lambda, \\mu \\rangle|)`, which near the
  solution is larger than the decrease itself.

So every iterate stays inside the natural parameter space and :math:`f` never
increases beyond its rounding: damped Newton, which from any valid start
converges to the minimiser of a strictly convex :math:`f`, quadratically once it
takes full steps.  The start is the family's ``_newton_start(mean)``, by
default :func:`standard_start`.

The linear solve.  :math:`F` is equilibrated, :math:`D^{-1/2} F D^{-1/2}` with
:math:`D` its diagonal, and inverted through its eigendecomposition, dropping
eigenvalues below ``RCOND`` of the largest.  Equilibration removes the scale
differences between parameters (a Gamma of shape 1e6 and rate 1e-3 has a
Fisher information with entries from 1e-6 to 1e12 and condition 1e24, 1e7
equilibrated); the pseudo-inverse handles matrix parts (Gaussian, Wishart),
whose flattened coordinates count each off-diagonal pair twice, so that
:math:`F` is singular in the antisymmetric directions, which the gradient does
not move.

Stopping, per batch element, after a step :math:`s = t\\Delta`: when every
entry has :math:`|s_i| \\le` ``XTOL`` :math:`|\\lambda_i| +` ``NOISE`` :math:`n_i`,
where :math:`n = |F^{-1}|\\, \\epsilon (|\\mu| + |\\nabla A|)` is how far
:math:`\\lambda` moves under the rounding of the gradient (the floor no solve
goes below, which also lets an entry near 0 stop).  After a step of relative
size ``XTOL`` = 1e-12 quadratic convergence leaves an error of order 1e-24.
Where the rounding of :math:`\\nabla A` exceeds that estimate (an autograd
route through a matrix solve), full steps stop shrinking: a full step longer
than half the previous full step within ``STAGNATION`` times the tolerance
stops too.  An element not stopped after ``MAX_ITER`` iterations, or for which
no step is accepted, raises :class:`ConvergenceError`: mean parameters on or
beyond the boundary of the mean parameter space have no natural parameters.
"""

import itertools

import numpy as np

from . import _params
from .checks import _describe, as_float

MAX_ITER = 100
"""Newton iterations before a batch element counts as not converged."""
MAX_HALVINGS = 1100
"""Halvings of the step before the line search gives up: enough to bring any finite step below the
rounding of ``lambda`` (a Poisson's first step towards a rate of 1e100 is 1e100 long)."""
MAX_EXPANSIONS = 30
"""Doublings of a full step while ``f`` keeps decreasing (``t`` up to ``2**30``)."""
ARMIJO = 1e-4
"""Fraction of the predicted decrease of ``f`` a step must achieve."""
XTOL = 1e-12
"""Relative size of the last step at which the solve stops."""
NOISE = 8.0
"""Multiple of the rounding floor ``n`` at which an entry counts as converged."""
RCOND = 1e-13
"""Eigenvalues of the equilibrated Fisher information below this fraction of the largest are dropped."""
START_VALUES = (0.0, -1.0, 1.0, -2.0, 2.0)
"""Constants :func:`standard_start` tries for each part, in this order."""

_EPS = np.finfo(float).eps
_STARTS = {}


class ConvergenceError(RuntimeError):
    """A mean-to-natural solve did not converge: the mean parameters are (numerically) outside the mean
    parameter space, or the family's maps are not consistent with its log-partition."""


def _constant(value, event):
    """``value`` times the identity for a square matrix event, else ``value`` in every entry."""
    if len(event) == 2 and event[0] == event[1]:
        return value * np.eye(event[0])
    return np.full(event, value)


def standard_start(family, events):
    """A point inside the natural parameter space of ``family`` with parts of event shapes ``events``.

    The first of the points whose part ``j`` is ``c_j`` in every entry (``c_j I`` for a square
    matrix part), ``c_j`` from :data:`START_VALUES`, that ``family.is_valid_natural`` accepts:
    ``0`` for a Poisson (rate 1), ``-1`` for an Exponential (rate 1), ``(-2, -1)`` for an
    inverse Gamma (shape 1, scale 1).  Found once per family and event shapes.

    Raises
    ------
    NotImplementedError
        If none is valid: the family must then define ``_newton_start(mean)``.
    """
    key = (family, tuple(events))
    if key not in _STARTS:
        for values in itertools.product(START_VALUES, repeat=len(events)):
            candidate = tuple(_constant(value, event) for value, event in zip(values, events))
            with np.errstate(all="ignore"):
                if np.all(family.is_valid_natural(candidate)):
                    _STARTS[key] = candidate
                    break
        else:
            raise NotImplementedError(
                f"no point with constant parts from {START_VALUES} lies in the natural parameter space of "
                f"{family.__name__}; define {family.__name__}._newton_start(mean) to start its mean_to_natural"
            )
    return _STARTS[key]


def check_mean(family, mean):
    """``mean`` as finite float arrays with a common batch shape, inside ``family.is_valid_mean``.

    Raises
    ------
    ValueError
        Naming ``mean[i]`` for a part that is not finite, has too few dimensions
        or a batch shape that does not broadcast, or ``mean`` for a value outside
        the mean parameter space, with the first offending batch index.
    """
    mean = tuple(as_float(p, f"mean[{i}]", ndim_min=k) for i, (p, k) in enumerate(zip(mean, family.event_ndims)))
    batches = [p.shape[:p.ndim - k] for p, k in zip(mean, family.event_ndims)]
    try:
        batch = np.broadcast_shapes(*batches)
    except ValueError:
        raise ValueError(
            f"mean for {family.__name__} must have parts whose batch shapes broadcast; got batch shapes "
            + ", ".join(f"mean[{i}] {b}" for i, b in enumerate(batches))
        ) from None
    mean = tuple(np.broadcast_to(p, batch + p.shape[p.ndim - k:]) for p, k in zip(mean, family.event_ndims))
    valid = np.broadcast_to(family.is_valid_mean(mean), batch)
    if not np.all(valid):
        where = tuple(int(i) for i in np.argwhere(~valid)[0])
        received = ", ".join(f"mean[{i}] = {_describe(p[where])}" for i, p in enumerate(mean))
        raise ValueError(
            f"mean for {family.__name__} is outside the mean parameter space at batch index {where}: "
            f"{family._mean_domain_description()}; got {received}"
        )
    return mean


def antisymmetric_directions(events):
    """Unit vectors ``(e_ik - e_ki) / sqrt(2)``, ``i < k``, of every square matrix part, in flattened
    coordinates: shape ``(P, m)``."""
    sizes = [int(np.prod(event)) for event in events]
    columns = []
    for start, event in zip(np.cumsum([0] + sizes[:-1]), events):
        if len(event) == 2 and event[0] == event[1]:
            for i, k in zip(*np.triu_indices(event[0], 1)):
                column = np.zeros(sum(sizes))
                column[start + i * event[0] + k], column[start + k * event[0] + i] = 2 ** -0.5, -(2 ** -0.5)
                columns.append(column)
    return np.array(columns).reshape(-1, sum(sizes)).T


def newton_steps(fisher, gradient, rounding, antisymmetric):
    """Newton steps ``F^-1 g`` and rounding floors ``|F^-1| r`` for rows ``(n, P, P)``, ``(n, P)``, ``(n, P)``.

    ``F`` is equilibrated (module docstring).  Where it does not change along the
    ``antisymmetric`` directions ``(P, m)`` (to 1e-8 of its unit diagonal: the
    family's ``A`` depends on its square matrix parts through their symmetric
    parts), they are given unit curvature, which leaves the step along them at
    the (zero) gradient along them.  Eigenvalues below ``RCOND`` of the largest
    are raised to it.

    Returns
    -------
    step, floor : arrays ``(n, P)``
    raised : bool array ``(n,)``, where an eigenvalue was raised (the step is then not Newton's)
    scale : array ``(n, P)``, the square roots of the diagonal of ``F`` (1 where it is not positive)
    """
    fisher = 0.5 * (fisher + np.swapaxes(fisher, -1, -2))
    diagonal = np.diagonal(fisher, axis1=-2, axis2=-1)
    scale = np.where(diagonal > 0.0, np.sqrt(np.abs(diagonal)), 1.0)
    outer = scale[:, :, None] * scale[:, None, :]
    equilibrated = fisher / outer
    if antisymmetric.size:
        flat = np.max(np.abs(equilibrated @ antisymmetric), axis=(-2, -1)) <= 1e-8
        equilibrated = equilibrated + np.where(flat[:, None, None], antisymmetric @ antisymmetric.T, 0.0)
    values, vectors = np.linalg.eigh(equilibrated)
    lowest = RCOND * values[:, -1:]
    raised = np.any(values < lowest, axis=-1)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):    # a zero or overflowing F: the line
        inverse = np.einsum("nik,nk,njk->nij", vectors, 1.0 / np.maximum(values, lowest), vectors) / outer
        step = np.einsum("nij,nj->ni", inverse, gradient)                  # search rejects a non-finite step
        return step, np.einsum("nij,nj->ni", np.abs(inverse), rounding), raised, scale


def mean_to_natural(family, mean, natural_to_mean=None, fisher=None):
    """Natural parameters of ``family`` with mean parameters ``mean``, by the Newton solve of the module docstring.

    Parameters
    ----------
    family : subclass of :class:`efvi.expfam.ExponentialFamily`
    mean : tuple of array_like
        Part ``j`` has shape ``batch_j + event_j``; the batch shapes broadcast.
    natural_to_mean, fisher : callable, optional
        The gradient and Hessian of ``family.log_partition`` to use (default: the
        family's own, closed forms where it has them); the tests pass the autograd
        routes to get a solve that depends on the log-partition alone.

    Returns
    -------
    tuple of float arrays shaped like ``mean`` (batch shapes broadcast)

    Raises
    ------
    ValueError
        If ``mean`` is malformed or outside ``family.is_valid_mean`` (:func:`check_mean`).
    ConvergenceError
        If some batch element does not converge (module docstring).
    """
    natural_to_mean = natural_to_mean or family.natural_to_mean
    fisher = fisher or family.fisher
    mean = check_mean(family, mean)
    ndims = family.event_ndims
    events = tuple(p.shape[p.ndim - k:] for p, k in zip(mean, ndims))
    batch = mean[0].shape[:mean[0].ndim - ndims[0]]
    target = _params.flatten(mean, ndims).reshape(-1, sum(int(np.prod(e)) for e in events))
    start = family._newton_start(mean)
    start = tuple(np.broadcast_to(p, batch + event) for p, event in zip(start, events))
    natural = np.array(_params.flatten(start, ndims).reshape(target.shape))
    antisymmetric = antisymmetric_directions(events)

    def parts(rows):
        return _params.unflatten(rows, mean, ndims)

    def objective(rows, mu):
        """``f`` and its rounding allowance at ``rows`` (``inf`` where ``f`` is not finite)."""
        with np.errstate(all="ignore"):
            log_partition = log_partition_rows(family, parts, rows)
            inner = np.sum(rows * mu, axis=-1)
            value = log_partition - inner
            allowance = 8.0 * _EPS * (np.abs(log_partition) + np.abs(inner))
        return np.where(np.isfinite(value), value, np.inf), allowance

    active = np.arange(target.shape[0])
    stuck = {}
    for _ in range(MAX_ITER):
        if not active.size:
            break
        rows, mu = natural[active], target[active]
        gradient_a = _params.flatten(natural_to_mean(parts(rows)), ndims).reshape(rows.shape)
        hessian = np.asarray(fisher(parts(rows)), dtype=float).reshape(rows.shape + rows.shape[-1:])
        usable = np.all(np.isfinite(gradient_a), axis=-1) & np.all(np.isfinite(hessian), axis=(-2, -1))
        if not np.all(usable):
            stuck.update(dict.fromkeys(active[~usable].tolist(), "its gradient or Fisher information is not finite"))
            active, rows, mu = active[usable], rows[usable], mu[usable]
            gradient_a, hessian = gradient_a[usable], hessian[usable]
        gradient = gradient_a - mu
        rounding = _EPS * (np.abs(mu) + np.abs(gradient_a))
        step, floor, raised, scale = newton_steps(hessian, gradient, rounding, antisymmetric)
        updated, accepted = _line_search(family, parts, objective, natural_to_mean, ndims, rows, mu, gradient, step,
                                         scale)
        stuck.update(dict.fromkeys(active[~accepted].tolist(), "no step kept the natural parameters valid while "
                                                               "decreasing A(lambda) - <lambda, mu>"))
        natural[active] = updated
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.max(np.where(step == 0.0, 0.0, np.abs(step) / (XTOL * np.abs(updated) + NOISE * floor)), axis=-1)
        matched = np.all(np.abs(gradient) <= NOISE * rounding, axis=-1)
        done = matched | ((ratio <= 1.0) & ~raised)
        active = active[accepted & ~done]
    stuck.update(dict.fromkeys(active.tolist(), f"not converged within {MAX_ITER} iterations"))
    if stuck:
        _raise_not_converged(family, mean, batch, stuck, target.shape[0])
    return tuple(np.array(p) for p in _params.unflatten(natural.reshape(batch + natural.shape[-1:]), mean, ndims))


def _line_search(family, parts, objective, natural_to_mean, ndims, rows, mu, gradient, step, scale):
    """Damped (or expanded) Newton steps ``rows - t step`` for rows ``(n, P)`` (module docstring).

    ``t`` is the first of ``1, 1/2, 1/4, ...`` at which the trial lies inside the
    natural parameter space and ``f`` decreases enough, or for ``t = 1`` the
    scaled residual ``|g / d|`` at least halves (``gradient`` is ``g``, ``scale``
    is ``d``); from a full step that decreased ``f`` by more than its rounding,
    ``t`` doubles while ``f`` keeps decreasing by more than its rounding.

    Returns
    -------
    updated : array ``(n, P)``, the rows after their step (unchanged where none was accepted)
    accepted : bool array ``(n,)``
    """
    current, allowance = objective(rows, mu)
    slope = np.sum(gradient * step, axis=-1)

    def trial(index, t):
        """The rows ``index`` moved by ``t`` steps, and ``f`` there (``inf`` outside the parameter space)."""
        with np.errstate(all="ignore"):
            moved = rows[index] - t[:, None] * step[index]
            inside = np.asarray(np.broadcast_to(family.is_valid_natural(parts(moved)), index.shape))
            inside = inside & np.all(np.isfinite(moved), axis=-1)
        value = np.full(index.shape, np.inf)
        if np.any(inside):
            value[inside] = objective(moved[inside], mu[index[inside]])[0]
        return moved, value

    t = np.ones(rows.shape[0])
    accepted = np.zeros(rows.shape[0], dtype=bool)
    updated, value = rows.copy(), current.copy()
    for halving in range(MAX_HALVINGS + 1):
        todo = np.flatnonzero(~accepted)
        moved, moved_value = trial(todo, t[todo])
        with np.errstate(invalid="ignore"):                     # a non-finite step: never good
            good = moved_value <= current[todo] - ARMIJO * t[todo] * slope[todo] + allowance[todo]
        retry = np.flatnonzero(np.isfinite(moved_value) & ~good) if halving == 0 else []
        if len(retry):
            with np.errstate(all="ignore"):
                residual = _params.flatten(natural_to_mean(parts(moved[retry])), ndims).reshape(moved[retry].shape)
                scaled = np.linalg.norm((residual - mu[todo[retry]]) / scale[todo[retry]], axis=-1)
                good[retry] = scaled <= 0.5 * np.linalg.norm(gradient[todo[retry]] / scale[todo[retry]], axis=-1)
        accepted[todo[good]] = True
        updated[todo[good]], value[todo[good]] = moved[good], moved_value[good]
        t[todo[~good]] *= 0.5
        if np.all(accepted):
            break
    # only steps that decreased f beyond its rounding grow: near the solution f is rounding noise, and a
    # doubled Newton step there lands on the mirror point (an oscillation that never stops)
    growing = np.flatnonzero(accepted & (t == 1.0) & (value < current - allowance))
    for _ in range(MAX_EXPANSIONS):
        if not growing.size:
            break
        t[growing] *= 2.0
        moved, moved_value = trial(growing, t[growing])
        better = moved_value < value[growing] - allowance[growing]
        updated[growing[better]], value[growing[better]] = moved[better], moved_value[better]
        growing = growing[better]
    return updated, accepted


def log_partition_rows(family, parts, rows):
    """``A`` at each of ``rows`` ``(n, P)`` (flattened natural parameters), shape ``(n,)``.

    numpy's linear algebra raises for a whole batch when one matrix is singular
    (a trial step of the line search can land on one that the validity test
    let through); then the rows are evaluated one by one and a failing row's
    ``A`` is ``nan``, which the line search treats as outside the space.  The
    one-by-one pass runs only after such a failure.
    """
    try:
        return np.asarray(family.log_partition(parts(rows)), dtype=float).reshape(-1)
    except np.linalg.LinAlgError:
        if rows.shape[0] == 1:
            return np.full(1, np.nan)
        return np.concatenate([log_partition_rows(family, parts, rows[i:i + 1]) for i in range(rows.shape[0])])


def _raise_not_converged(family, mean, batch, failed, total):
    """Raise :class:`ConvergenceError` naming the first failed batch element (``failed``: index -> reason)."""
    first = min(failed)
    where = tuple(int(i) for i in np.unravel_index(first, batch)) if batch else ()
    received = ", ".join(f"mean[{i}] = {_describe(p[where])}" for i, p in enumerate(mean))
    raise ConvergenceError(
        f"{family.__name__}.mean_to_natural: Newton's method failed for {len(failed)} of {total} batch "
        f"element(s); the first, at batch index {where} ({failed[first]}), has {received}. Mean parameters on or "
        "beyond the boundary of the mean parameter space have no natural parameters"
    )
