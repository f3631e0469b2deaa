r"""A likelihood from any elementwise log density written in autograd.numpy.

``Custom(log_prob, support="positive")`` takes ``log_prob(y, f)``, the log
density of observations ``y`` given latent values ``f`` (elementwise, with numpy
broadcasting: at quadrature nodes ``f`` is (n, K) and ``y`` an (n, 1) column, so
that terms in ``y`` alone cost once per point), and gives it everything a compiled likelihood has, so that it
works wherever one does (GLM, GP, Markov GP, minibatches, hyperparameter
learning):

* the derivatives :math:`\ell'`, :math:`\ell''` in :math:`f` by autograd,
  elementwise and vectorised (:mod:`._autodiff`);
* the variational expectations by the same Gauss-Hermite rules as the compiled
  kernels (:mod:`._kernels`): each point takes the smallest rule of the
  adaptive ladder whose error bound at its variance is about 1e-11
  (:func:`._quadrature.ladder`, sized by ``strip_half_width``), or one fixed
  rule, and

  .. math::

      E_i = \sum_k w_k \ell(a_{ik}), \quad
      \frac{\partial E_i}{\partial m_i} = \sum_k w_k \ell'(a_{ik}), \quad
      \frac{\partial E_i}{\partial v_i} = \sum_k w_k \ell'(a_{ik}) \frac{z_k}{2 \sqrt{v_i}}

  (Price's :math:`\tfrac12 \sum_k w_k \ell''` below ``PRICE_BELOW``), with
  :math:`a_{ik} = m_i + \sqrt{v_i} z_k`: numpy on all points of a rule at once,
  no Python loop over points;
* predictive log densities by the same adaptive Gauss-Hermite rule centred at
  the mode of :math:`p(y \mid a) \mathcal N(a; m, v)` (vectorised Newton steps),
  and predictive moments from ``mean_var`` if given.

A per-point parameter (an exposure, a number of trials) is optional: given
``per_point``, ``log_prob`` is called as ``log_prob(y, f, c)`` with ``c`` shaped
like ``y``, and ``per_point_name`` names it for ``subset``,
``with_per_point`` and a GLM's ``predict``.
"""

import copy

import numpy as np

from ...expfam.checks import as_float

from ._autodiff import check_log_prob_shape, elementwise_derivatives
from ._base import Likelihood
from ._checks import is_integer
from ._quadrature import DEFAULT_N_POINTS, PREDICT_N_POINTS, PRICE_BELOW, gauss_hermite, ladder

SUPPORTS = {
    "real": ("real numbers", lambda y, c: np.ones(np.shape(y), dtype=bool)),
    "positive": ("positive real numbers", lambda y, c: y > 0),
    "non-negative": ("non-negative real numbers", lambda y, c: y >= 0),
    "unit interval": ("real numbers in (0, 1)", lambda y, c: (y > 0) & (y < 1)),
    "counts": ("non-negative integer counts", lambda y, c: (y >= 0) & is_integer(y)),
    "labels": ("labels 0 or 1", lambda y, c: (y == 0) | (y == 1)),
    "bounded counts": ("integer counts between 0 and the per-point parameter",
                       lambda y, c: (y >= 0) & (y <= c) & is_integer(y)),
}
"""Named supports: name -> (description for error messages, ``in_support(y, c)`` mask)."""

CHUNK = 1 << 16
"""About the most evaluations of ``log_prob`` per call (bounds the memory autograd holds)."""

_ELEMENTWISE_POINTS = 4
"""Points at which ``log_prob`` is evaluated together and one at a time, to check that it is elementwise."""

_NEWTON_STEPS = 50
_HALVINGS = 60


def _check_callable(function, name, optional=True):
    if (function is None and optional) or callable(function):
        return function
    raise ValueError(f"{name} must be callable{' or None' if optional else ''}; got {function!r}")


class Custom(Likelihood):
    """A likelihood from an elementwise autograd.numpy log density ``log_prob(y, f)``.

    Parameters
    ----------
    log_prob : callable
        ``log_prob(y, f)`` (or ``log_prob(y, f, c)`` with a per-point
        parameter): ``log p(y | f)`` elementwise, for arrays that broadcast
        to the shape of ``f`` (``y`` and ``c`` may be columns), written with ``autograd.numpy`` (and ``autograd.scipy``) so that it
        differentiates twice in ``f``.
    support : str or (str, callable)
        A name in ``SUPPORTS`` ("real", "positive", "non-negative",
        "unit interval", "counts", "labels", "bounded counts"), or a pair
        ``(description, in_support)`` with ``in_support(y, c)`` a boolean mask
        (``c`` the per-point parameter, or None).
    mean_var : callable, optional
        ``mean_var(f)`` (or ``mean_var(f, c)``) returning ``(E[y | f], Var[y | f])``
        elementwise, numpy; needed by ``predict_mean_var``.
    initial_latent : callable, optional
        ``initial_latent(y)`` (or ``(y, c)``) returning a guess of each latent
        (e.g. the link function of a smoothed mean): the fit's first sites; see
        :meth:`Likelihood.initial_latent`.  Default: start from the prior.
    per_point : float or array_like, shape (N,), optional
        A parameter passed to ``log_prob`` as ``c``, shared or per data point.
    per_point_name : str
        Its name (an attribute of this likelihood and the keyword of a GLM's
        ``predict``); default ``"per_point"``.
    log_concave : bool
        Whether ``log_prob`` is concave in ``f`` for every ``y`` (default False:
        the engine then keeps the posterior valid under negative site precisions).
    exponential_link : bool
        Whether ``log_prob`` grows like ``exp(f)`` (a log link): a fit from the
        prior then aims its first step at the sites of ``initial_latent``.
    strip_half_width : float
        ``d`` such that ``log_prob`` is analytic in ``f`` for ``|Im f| < d``:
        sizes the quadrature ladder (default 1: the rules of a function with
        singularities at distance 1; larger values use fewer nodes).
    n_points : int, optional
        A fixed Gauss-Hermite rule instead of the adaptive ladder.
    """

    conjugate = False

    def __init__(self, log_prob, support="real", *, mean_var=None, initial_latent=None, per_point=None,
                 per_point_name="per_point", log_concave=False, exponential_link=False, strip_half_width=1.0,
                 n_points=DEFAULT_N_POINTS):
        super().__init__(n_points)
        self.log_prob = _check_callable(log_prob, "log_prob", optional=False)
        self.mean_var = _check_callable(mean_var, "mean_var")
        self._initial_latent = _check_callable(initial_latent, "initial_latent")
        if isinstance(support, str) and support in SUPPORTS:
            self._support_name = support
            self.support, self._in_support = SUPPORTS[support]
        elif (isinstance(support, tuple) and len(support) == 2 and isinstance(support[0], str)
              and callable(support[1])):
            self._support_name = support[0]
            self.support, self._in_support = support
        else:
            raise ValueError(f"support must be one of {', '.join(map(repr, SUPPORTS))} or a pair "
                             f"(description, in_support); got {support!r}")
        self.log_concave = bool(log_concave)
        self.exponential_link = bool(exponential_link)
        self.strip_half_width = float(as_float(strip_half_width, "strip_half_width", finite=False))
        if not self.strip_half_width > 0:
            raise ValueError(f"strip_half_width must be > 0; got {strip_half_width!r}")
        self.per_point_name = None
        self._per_point_values = None
        self._elementwise = False
        if per_point is not None:
            if not (isinstance(per_point_name, str) and per_point_name.isidentifier()
                    and not hasattr(self, per_point_name)):
                raise ValueError(f"per_point_name must be a new attribute name; got {per_point_name!r}")
            self.per_point_name = per_point_name
            self._set_per_point(per_point)

    def _set_per_point(self, value):
        values = np.atleast_1d(as_float(value, self.per_point_name)).astype(np.float64)
        if values.ndim != 1:
            raise ValueError(f"{self.per_point_name} must be a scalar or a 1-D array; got shape {values.shape}")
        self._per_point_values = np.ascontiguousarray(values)
        setattr(self, self.per_point_name, values if values.shape[0] > 1 else float(values[0]))

    def with_per_point(self, value):
        """This likelihood with its per-point parameter set to ``value`` (see :meth:`Likelihood.with_per_point`)."""
        if self.per_point_name is None:
            raise ValueError("this Custom likelihood has no per-point parameter")
        other = copy.copy(self)
        other._set_per_point(value)
        return other

    def _per_point(self):
        return np.zeros(1) if self._per_point_values is None else self._per_point_values

    def _per_point_like(self, shape):
        """The per-point parameter broadcast to ``shape`` (points along the first axis), or None."""
        if self._per_point_values is None:
            return None
        values = self._per_point_values
        return np.broadcast_to(values.reshape(values.shape + (1,) * (len(shape) - 1)), shape)

    @staticmethod
    def _call(function, *arguments, per_point=None):
        """``function(*arguments)``, with the per-point parameter as a last argument if there is one."""
        return function(*arguments) if per_point is None else function(*arguments, per_point)

    def _outside_support(self, y, per_point):
        c = None if self._per_point_values is None else per_point
        with np.errstate(invalid="ignore"):
            return ~np.asarray(self._in_support(y, c), dtype=bool)

    def initial_latent(self, y):
        """``initial_latent(y)`` as given to the constructor, or None."""
        if self._initial_latent is None:
            return None
        guess = self._call(self._initial_latent, y, per_point=self._per_point_like(y.shape))
        return np.asarray(guess, dtype=np.float64).reshape(y.shape)

    # --- log_prob and its derivatives at arrays of points ---------------------

    def _log_prob(self, y, latent, per_point):
        """``log_prob`` at arrays of points (``y`` and ``per_point`` broadcasting against ``latent``), checked."""
        self._check_elementwise(y, latent, per_point)
        value = self._call(self.log_prob, y, latent, per_point=per_point)
        check_log_prob_shape(value, latent.shape)
        value = np.asarray(value, dtype=np.float64)
        self._check_no_nan(value, y, latent)
        return value

    def _derivatives(self, y, latent, per_point, second=True):
        """``log_prob`` and its first two derivatives in the latent at arrays of points.

        Parameters
        ----------
        y : ndarray, shape (n,) or (n, 1)
            Observations; a column broadcasts against ``latent`` (the terms of
            ``log_prob`` in ``y`` alone are then computed once per point, not once per node).
        latent : ndarray, shape (n,) or (n, K)
            Latent values (K quadrature nodes per point).
        per_point : ndarray, the shape of ``y``, or None
        second : bool
            Whether to compute the second derivative.

        Returns
        -------
        value, d1, d2 : ndarray, the shape of ``latent`` (``d2`` None unless ``second``)
            Computed in chunks of about ``CHUNK`` evaluations (whole rows).
        """
        self._check_elementwise(y, latent, per_point)
        rows = max(1, CHUNK // max(1, latent[:1].size))
        outputs = None
        for start in range(0, latent.shape[0], rows):
            chunk = slice(start, start + rows)
            y_chunk, c = y[chunk], None if per_point is None else per_point[chunk]
            values = elementwise_derivatives(lambda f: self._call(self.log_prob, y_chunk, f, per_point=c),
                                             latent[chunk], second)
            self._check_no_nan(values[0], y_chunk, latent[chunk])
            if start == 0 and rows >= latent.shape[0]:
                return values
            if outputs is None:
                outputs = tuple(None if v is None else np.empty(latent.shape) for v in values)
            for output, v in zip(outputs, values):
                if output is not None:
                    output[chunk] = v
        return outputs

    def _check_elementwise(self, y, latent, per_point):
        """Raise unless ``log_prob`` is elementwise: a few points together and one at a time agree (once per instance)."""
        if self._elementwise or latent.size < 2:
            return
        y, f, c = (None if a is None else np.broadcast_to(a, latent.shape).ravel()[:_ELEMENTWISE_POINTS]
                   for a in (y, latent, per_point))
        together = np.asarray(self._call(self.log_prob, y, f, per_point=c), dtype=np.float64)
        check_log_prob_shape(together, f.shape)
        alone = np.empty(f.size)
        for i in range(f.size):
            one = slice(i, i + 1)
            value = np.asarray(self._call(self.log_prob, y[one], f[one], per_point=None if c is None else c[one]),
                               dtype=np.float64)
            check_log_prob_shape(value, (1,))
            alone[i] = value[0]
        if not np.allclose(together, alone, rtol=1e-10, atol=0.0, equal_nan=True):
            raise ValueError(
                f"log_prob must be elementwise (log_prob(y, f)[i] may depend only on y[i] and f[i]); at "
                f"y={y}, f={f} it gave {together} evaluated together and {alone} one point at a time"
            )
        self._elementwise = True

    @staticmethod
    def _check_no_nan(value, y, latent):
        nan = np.isnan(value) & ~np.isnan(latent)     # (a NaN latent is a rejected Newton trial's)
        if nan.any():
            i = np.flatnonzero(nan.ravel())[0]
            raise ValueError(
                f"log_prob must return log densities (finite or -inf) for y in the support; got NaN at "
                f"y={float(np.broadcast_to(y, latent.shape).ravel()[i])!r}, f={float(latent.ravel()[i])!r} "
                f"({nan.sum()} of {nan.size} values NaN)"
            )

    def _pointwise(self, f, y, derivatives=True):
        f, y, per_point, shape = self._broadcast_pointwise(f, y)
        flat_y, flat_f = y.ravel(), np.broadcast_to(f, shape).ravel()
        observed = ~np.isnan(flat_y)
        c = None if self._per_point_values is None else np.broadcast_to(per_point, shape).ravel()[observed]
        outputs = [np.full(flat_y.shape, np.nan) for _ in range(3 if derivatives else 1)]
        if derivatives:
            values = self._derivatives(flat_y[observed], flat_f[observed], c)
        else:
            values = (self._log_prob(flat_y[observed], flat_f[observed], c),)
        for output, value in zip(outputs, values):
            output[observed] = value
        return tuple(output.reshape(shape)[()] for output in outputs)

    def log_density(self, f, y):
        """log p(y | f), elementwise with numpy broadcasting (see :meth:`Likelihood.log_density`)."""
        return self._pointwise(f, y, derivatives=False)[0]

    # --- variational expectations ----------------------------------------------

    def _quadrature_expectations(self, mean, var, y, n_points=None):
        """E[log p], dE/dm, dE/dv by the Gauss-Hermite ladder, one numpy evaluation per rule (see the module docstring)."""
        nodes, weights, counts, edges = ladder(self.strip_half_width, n_points or self.n_points)
        price_below = PRICE_BELOW * self.strip_half_width
        value, d_mean, d_var = np.zeros(mean.shape[0]), np.zeros(mean.shape[0]), np.zeros(mean.shape[0])
        observed = np.flatnonzero(~np.isnan(y))
        scale = np.sqrt(var[observed])
        rung = np.where(scale == 0.0, -1, np.searchsorted(edges, scale, side="left"))
        per_point = self._per_point_like(mean.shape)
        for r in np.unique(rung):
            points = observed[rung == r]
            s = scale[rung == r]
            c = None if per_point is None else per_point[points]
            if r < 0:                                    # v = 0: the pointwise values, and ell'' / 2
                value[points], d_mean[points], second = self._derivatives(y[points], mean[points], c)
                d_var[points] = 0.5 * second
                continue
            size = counts[r]
            z, w = nodes[r, :size], weights[r, :size]
            latent = mean[points, None] + s[:, None] * z
            price = s < price_below
            # y and c as columns: log_prob's terms in y alone are computed once per point, not per node
            y_column, c_column = y[points, None], None if c is None else c[:, None]
            ell, d1, d2 = self._derivatives(y_column, latent, c_column, second=bool(price.any()))
            # row sums by einsum (not matrix products, whose rounding depends on the number of rows):
            # each point's result is independent of the others, as for the compiled kernels
            value[points] = np.einsum("ij,j->i", ell, w)
            d_mean[points] = np.einsum("ij,j->i", d1, w)
            half = size // 2                             # symmetric nodes: z_k = -z_{size-1-k}
            pairs = d1[:, :half] - d1[:, :size - half - 1:-1]
            spread = np.einsum("ij,j->i", pairs, w[:half] * z[:half]) / (2.0 * s)
            price |= np.isnan(spread)                    # ell' infinite at both nodes of a pair, as in _kernels
            if price.any():
                if d2 is None:
                    d2 = self._derivatives(y_column, latent, c_column)[2]
                spread = np.where(price, 0.5 * np.einsum("ij,j->i", d2, w), spread)
            d_var[points] = spread
        return value, d_mean, d_var

    # --- predictions -------------------------------------------------------------

    def _quadrature_predict_mean_var(self, mean, var, n_points=None):
        if self.mean_var is None:
            raise NotImplementedError("predict_mean_var needs the conditional moments: give Custom(mean_var=...)")
        nodes, weights = gauss_hermite(n_points or self.n_points or PREDICT_N_POINTS)
        latent = mean[:, None] + np.sqrt(var)[:, None] * nodes
        moments = self._call(self.mean_var, latent, per_point=self._per_point_like(latent.shape))
        mu, spread = (np.broadcast_to(np.asarray(x, dtype=np.float64), latent.shape) for x in moments)
        y_mean = (mu * weights).sum(axis=1)
        with np.errstate(invalid="ignore"):
            y_var = ((spread + (mu - y_mean[:, None]) ** 2) * weights).sum(axis=1)
        return y_mean, np.where(np.isinf(y_mean), np.inf, y_var)

    def _laplace_proposal(self, mean, var, y, per_point):
        """Mode and curvature variance of ``ell(a) - (a - m)^2 / (2 v)`` for every point (``v > 0``).

        The vectorised form of ``_kernels._laplace_proposal``: safeguarded Newton steps, each with
        step halving until the objective does not decrease.
        """
        centre = mean.copy()
        value, d1, d2 = self._derivatives(y, centre, per_point)
        active = np.arange(mean.shape[0])
        for _ in range(_NEWTON_STEPS):
            if active.size == 0:
                break
            m, v = mean[active], var[active]
            curvature = d2[active] - 1.0 / v
            curvature = np.where(curvature >= 0.0, -1.0 / v, curvature)
            step = -(d1[active] - (centre[active] - m) / v) / curvature
            t = np.ones(active.size)
            pending = np.arange(active.size)
            for halving in range(_HALVINGS):
                points = active[pending]
                trial = centre[points] + t[pending] * step[pending]
                c = None if per_point is None else per_point[points]
                ell, g1, g2 = self._derivatives(y[points], trial, c)
                trial_value = ell - 0.5 * (trial - mean[points]) ** 2 / var[points]
                with np.errstate(invalid="ignore"):
                    accept = (trial_value >= value[points]) | ~np.isfinite(value[points])
                if halving == _HALVINGS - 1:
                    t[pending[~accept]] *= 0.5
                    accept[:] = True
                centre[points[accept]], value[points[accept]] = trial[accept], trial_value[accept]
                d1[points[accept]], d2[points[accept]] = g1[accept], g2[accept]
                pending = pending[~accept]
                if pending.size == 0:
                    break
                t[pending] *= 0.5
            done = np.abs(t * step) <= 1e-12 * (1.0 + np.abs(centre[active]))
            active = active[~done]
        curvature = d2 - 1.0 / var
        with np.errstate(divide="ignore"):
            return centre, np.where(curvature < 0.0, -1.0 / curvature, var)

    def _quadrature_predict_log_density(self, mean, var, y, n_points=None):
        """log of integral p(y_i | a) N(a; m_i, v_i) da by Gauss-Hermite centred at the mode (as ``_kernels``)."""
        nodes, weights = gauss_hermite(n_points or self.n_points or PREDICT_N_POINTS)
        out = np.full(mean.shape[0], np.nan)
        observed = ~np.isnan(y)
        per_point = self._per_point_like(mean.shape)
        centre, spread = mean.copy(), np.zeros(mean.shape[0])
        wide = np.flatnonzero(observed & (var > 0.0))
        if wide.size:
            centre[wide], spread[wide] = self._laplace_proposal(
                mean[wide], var[wide], y[wide], None if per_point is None else per_point[wide])
        points = np.flatnonzero(observed)
        m, v, s2 = mean[points], var[points], spread[points]
        latent = centre[points, None] + np.sqrt(s2)[:, None] * nodes
        ell = self._log_prob(y[points, None], latent, None if per_point is None else per_point[points, None])
        terms = np.log(weights) + ell
        positive = v > 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            shift = np.where(positive, 0.5 * np.log(s2 / v), 0.0)
            gaussian = shift[:, None] + 0.5 * nodes ** 2 - 0.5 * (latent - m[:, None]) ** 2 / v[:, None]
        terms = np.where(positive[:, None], terms + gaussian, terms)
        top = terms.max(axis=1)
        with np.errstate(invalid="ignore", over="ignore"):
            total = np.exp(terms - top[:, None]).sum(axis=1)
        out[points] = np.where(top == -np.inf, -np.inf, top + np.log(total))
        return out

    def __repr__(self):
        fields = [f"log_prob={getattr(self.log_prob, '__name__', repr(self.log_prob))}",
                  f"support={self._support_name!r}"]
        if self.per_point_name is not None:
            fields.append(f"{self.per_point_name}={getattr(self, self.per_point_name)!r}")
        if self.n_points != DEFAULT_N_POINTS:
            fields.append(f"n_points={self.n_points}")
        return f"Custom({', '.join(fields)})"
