r"""The likelihood contract shared by GLMs, Gaussian processes and state-space models.

Data point :math:`i` sees the latent Gaussian only through a scalar
:math:`a_i \sim \mathcal N(m_i, v_i)`.  A likelihood supplies

.. math::

    E_i = \mathbb E[\log p(y_i \mid a_i)], \qquad
    \frac{\partial E_i}{\partial m_i}, \qquad \frac{\partial E_i}{\partial v_i},

from which the engine forms the 1-D Gaussian site
:math:`\pi_i = -2\,\partial E_i/\partial v_i`,
:math:`\gamma_i = \partial E_i/\partial m_i + \pi_i m_i`.

A compiled likelihood declares its maths as three compiled scalar functions
(see :mod:`efvi.models.likelihoods._kernels`): ``_log_lik`` (the
:math:`a`-dependent part of :math:`\log p` and two derivatives), ``_log_base``
(the rest) and ``_moments`` (:math:`\mathbb E[y \mid a]`,
:math:`\operatorname{Var}[y \mid a]`), plus its global parameters
(``_params``), its per-point parameter (``_per_point``), and its support
(``support``, ``_outside_support``).  This class then provides validation,
Gauss-Hermite expectations, predictions and pointwise log densities
generically.  A likelihood whose expectations have no closed form also
declares its own compiled expectations kernel (``_expectations_kernel``, a
few lines, see :mod:`._kernels`): the shared one costs about 60 us more per
call, and more per node.  A distribution with a link gets all of these from
the pair (:mod:`._linked`, :mod:`._pairs`).  A closed form overrides a
private method (``_variational_expectations``, ``_predict_mean_var``,
``_predict_log_density``); the ``_quadrature_*`` routes stay available so that
every closed form can be tested against them.  :class:`.custom.Custom`
implements the same private methods in numpy for a Python log density.
"""

import functools

import numpy as np

from ...expfam.checks import as_float

from .._parallel import map_points
from . import _kernels
from ._checks import as_vector, check_gaussian_marginals, check_same_length, raise_outside_support
from ._saved import spec_of
from ._quadrature import DEFAULT_N_POINTS, PREDICT_N_POINTS, PRICE_BELOW, check_n_points, gauss_hermite, ladder

_NO_PARAMS = np.zeros(1)
_NO_PER_POINT = np.zeros(1)


def zero_missing(y, *arrays):
    """Return ``arrays`` with the entries where ``y`` is NaN set to exactly 0 (missing data).

    The arrays are returned unchanged (not copied) when nothing is missing.
    """
    missing = np.isnan(y)
    if not missing.any():
        return arrays
    return tuple(np.where(missing, 0.0, a) for a in arrays)


def _flat_copy(x, shape):
    """A writeable C-contiguous float64 copy of ``x`` broadcast to ``shape``, flattened."""
    return np.array(np.broadcast_to(x, shape), dtype=np.float64, order="C").ravel()


class Likelihood:
    """Base class: a likelihood p(y | a) of one observation given a scalar latent a.

    Parameters
    ----------
    n_points : int, optional
        Gauss-Hermite points for expectations that have no closed form.
        Default None: the adaptive ladder of :mod:`efvi.models.likelihoods._quadrature`
        (3 points where ``v_i`` is small, up to 160 where it is large);
        every method also takes ``n_points`` per call.

    Attributes
    ----------
    support : str
        The values y may take, as used in error messages.
    log_concave : bool
        Whether log p(y | a) is concave in a for every y (then every site
        precision is >= 0).
    conjugate : bool
        Whether the likelihood is Gaussian in a (sites do not depend on q).
    exponential_link : bool
        Whether ``E[log p(y | a)]`` grows like ``exp(m + v/2)`` (a log link):
        under a diffuse prior its CVI targets overflow, so a fit from the prior
        takes its first step towards the data-informed sites instead.
    per_point_name : str or None
        Name of the parameter that may vary per data point, if any.
    strip_half_width : float
        ``d`` such that ``log p(y | a)`` is analytic for ``|Im a| < d``; sets
        where the adaptive quadrature ladder switches to larger rules.
    latent_parameters : dict
        Role -> ``(block name, family)`` for each parameter of the likelihood
        held as a latent block (the Gamma noise precision of
        ``Gaussian(precision="tau")``); empty by default.  A site factor
        touches these blocks too and gives them the targets of
        :meth:`site_expectations`.
    """

    support = "real numbers"
    log_concave = True
    conjugate = False
    exponential_link = False
    per_point_name = None
    strip_half_width = 1.0
    _repr_fields = ()
    _log_lik = None
    _log_base = None
    _moments = None
    _expectations_kernel = None
    latent_parameters = {}

    def __init__(self, n_points=DEFAULT_N_POINTS):
        self.n_points = check_n_points(n_points)

    # --- parameters, declared by subclasses -------------------------------

    def _params(self):
        """Global parameters as a C-contiguous float64 vector for the kernels."""
        return _NO_PARAMS

    def _per_point(self):
        """Per-point parameter c_i, shape (1,) or (N,), for the kernels."""
        return _NO_PER_POINT

    def _outside_support(self, y, per_point):
        """Boolean mask of entries of ``y`` outside the support (NaN entries are ignored)."""
        return np.zeros(np.shape(y), dtype=bool)

    def subset(self, index):
        """The likelihood of the data points ``index`` (slices per-point parameters).

        Parameters
        ----------
        index : int array, boolean mask or slice
            Selects data points, as for indexing a 1-D array of length N.

        Returns
        -------
        Likelihood
            ``self`` when the likelihood has no per-point parameter, or a shared one.
        """
        value = None if self.per_point_name is None else getattr(self, self.per_point_name)
        if value is None or np.ndim(value) == 0:
            return self
        return self.with_per_point(np.asarray(value)[index])

    def with_per_point(self, value):
        """The same likelihood with its per-point parameter (``per_point_name``) set to ``value``.

        Parameters
        ----------
        value : float or array_like, shape (M,)
            E.g. the exposures or trial counts of M new points; validated by the constructor.

        Returns
        -------
        Likelihood

        Raises
        ------
        ValueError
            If the likelihood has no per-point parameter.
        """
        if self.per_point_name is None:
            raise ValueError(f"{type(self).__name__} has no per-point parameter")
        # by convention the constructor's keywords are the per-point parameter, the other
        # ``_repr_fields`` (e.g. the link) and n_points
        arguments = {name: getattr(self, name) for name in self._repr_fields}
        arguments[self.per_point_name] = value
        return type(self)(**arguments, n_points=self.n_points)

    def initial_latent(self, y):
        """A data-based guess of each ``a_i`` for the first sites, or None to start from empty sites.

        Likelihoods with a GLM link give the guess that IRLS starts from,
        e.g. ``log(y + 1/2)`` for counts or ``+-log 3`` for logit labels; the
        engine's first sites are then the CVI targets at ``a_i`` with zero
        variance (Khan and Nielsen, 2018, eqs. 15-17), which avoids the overshooting first
        step from the prior.  The default is None.

        Parameters
        ----------
        y : ndarray, shape (N,)
            Validated observations (NaN: missing).

        Returns
        -------
        ndarray, shape (N,), or None
        """
        return None

    # --- validation ----------------------------------------------------------

    def _per_point_for(self, n, name):
        per_point = self._per_point()
        if per_point.shape[0] not in (1, n):
            raise ValueError(
                f"{self.per_point_name} has {per_point.shape[0]} entries but {name} has {n} data points"
            )
        return per_point

    def _check_support(self, y, per_point, name):
        if np.any(np.isinf(y)):
            raise_outside_support(y, np.isinf(y), name, f"finite {self.support}")
        bad = self._outside_support(y, per_point) & ~np.isnan(y)
        if np.any(bad):
            raise_outside_support(y, bad, name, self.support)

    def validate_y(self, y, name="y"):
        """Check observations against the support and return them as a clean vector.

        Parameters
        ----------
        y : array_like, shape (N,)
            Observations; NaN marks a missing value.
        name : str
            Name of the argument in error messages.

        Returns
        -------
        ndarray, shape (N,)
            A C-contiguous float64 copy.

        Raises
        ------
        ValueError
            Naming ``name``, the support and the offending value if an entry
            is inf or outside the support, or if ``y`` is not 1-D.
        """
        y = as_vector(y, name)
        self._check_support(y, self._per_point_for(y.shape[0], name), name)
        return y

    # --- pointwise log density -------------------------------------------

    def log_density(self, f, y):
        """log p(y | f), elementwise with numpy broadcasting.

        Parameters
        ----------
        f : array_like
            Latent values a (finite).
        y : array_like
            Observations, broadcastable with ``f`` (and with a per-point
            parameter of shape (N,) along the last axis); NaN gives NaN.

        Returns
        -------
        ndarray or float
            log p(y | f) with the broadcast shape.
        """
        return self._pointwise(f, y)[0]

    def _pointwise(self, f, y):
        """``log_density`` together with its first and second derivatives in f."""
        f, y, per_point, shape = self._broadcast_pointwise(f, y)
        values = _kernels._pointwise(
            self._log_lik, self._log_base, _flat_copy(f, shape), _flat_copy(y, shape),
            _flat_copy(per_point, shape) if per_point.shape == shape else per_point, self._params(),
        )
        return tuple(v.reshape(shape)[()] for v in values)

    def _broadcast_pointwise(self, f, y):
        """The arguments of ``_pointwise`` broadcast together and checked against the support.

        Returns
        -------
        f : ndarray
            The latent values as given (float64).
        y : ndarray, shape ``shape``
            Observations (a read-only broadcast view).
        per_point : ndarray
            The per-point parameter broadcast to ``shape`` when it has one entry per data point
            (along the last axis), else its shared vector of shape (1,).
        shape : tuple
            The broadcast shape of ``f``, ``y`` and the per-point parameter.
        """
        f = as_float(f, "f")
        y = as_float(y, "y", finite=False)
        per_point = self._per_point()
        per_shape = per_point.shape if per_point.shape[0] > 1 else ()
        try:
            shape = np.broadcast_shapes(f.shape, y.shape, per_shape)
        except ValueError:
            raise ValueError(
                f"f {f.shape}, y {y.shape} and {self.per_point_name} {per_shape} do not broadcast"
            ) from None
        y = np.broadcast_to(y, shape)
        per_point = np.broadcast_to(per_point, shape) if per_shape else per_point
        self._check_support(y, per_point, "y")
        return f, y, per_point, shape

    # --- variational expectations ----------------------------------------

    def variational_expectations(self, mean, var, y, n_points=None):
        """E[log p(y_i | a_i)] under a_i ~ N(mean_i, var_i) and its derivatives.

        Parameters
        ----------
        mean, var : array_like, shape (N,)
            Marginal means (finite) and variances (>= 0) of the latent.
        y : array_like, shape (N,)
            Observations in the support; NaN marks a missing value.
        n_points : int, optional
            Gauss-Hermite points (default: the likelihood's ``n_points``);
            ignored by closed forms.

        Returns
        -------
        value, d_mean, d_var : ndarray, shape (N,)
            E[log p], dE/dmean and dE/dvar; exactly 0 where y is NaN.
        """
        mean, var = check_gaussian_marginals(mean, var)
        y = self.validate_y(y)
        check_same_length(y, mean)
        n_points = self.n_points if n_points is None else check_n_points(n_points)
        return self._variational_expectations(mean, var, y, n_points)

    def site_expectations(self, q, mean, var, y, n_points=None):
        """The expectations and the targets of the latent parameter blocks at the posterior ``q`` (hot path).

        Parameters
        ----------
        q : dict
            Block name -> posterior, including the blocks of :attr:`latent_parameters`.
        mean, var, y : ndarray, shape (N,)
            C-contiguous float64 marginals of the latent and observations (unvalidated).
        n_points : int, optional

        Returns
        -------
        expected, d_mean, d_var : ndarray, shape (N,)
            As :meth:`variational_expectations`, at the parameter blocks' moments.
        parameter_targets : dict
            Block name -> per-point conjugate sites of each latent parameter block
            (empty: a likelihood without latent parameters).
        """
        return (*self._variational_expectations(mean, var, y, n_points), {})

    def _variational_expectations(self, mean, var, y, n_points=None):
        """Unvalidated ``variational_expectations`` on C-contiguous float64 (N,) arrays (hot path)."""
        return self._quadrature_expectations(mean, var, y, n_points)

    def _quadrature_expectations(self, mean, var, y, n_points=None):
        """The quadrature route of ``_variational_expectations`` (every likelihood has one)."""
        rule = self._quadrature_rule(n_points or self.n_points)
        per_point, params = self._per_point(), self._params()
        if self._expectations_kernel is None:  # the shared kernel: the Gauss-Hermite part of the rule
            expectations = functools.partial(_kernels._gh_expectations, self._log_lik, self._log_base)
            rule_arguments = rule[:5]
        else:
            expectations, rule_arguments = self._expectations_kernel, (rule,)

        def kernel(rows):
            return expectations(
                mean[rows], var[rows], y[rows], per_point if per_point.shape[0] == 1 else per_point[rows], params,
                *rule_arguments,
            )

        return map_points(kernel, mean.shape[0])     # blocks of points on all cores

    def _quadrature_rule(self, n_points):
        """The ``rule`` argument of the expectations kernel (``_kernels.expectations``).

        The Gauss-Hermite ladder, or a fixed rule, and no rule for wide Gaussians.
        """
        gauss_hermite = ladder(self.strip_half_width, n_points)
        return (*gauss_hermite, PRICE_BELOW * self.strip_half_width, *_kernels.NO_WIDE_RULE)

    def _base_terms_of(self, y, per_point):
        """``log p(y | a)`` minus its ``a``-dependent part, for every point; cached per ``y`` array.

        The engine passes the same ``y`` array at every iteration of a full-batch
        fit, so the closed forms pay for ``lgamma`` (counts) once, not per iteration.
        """
        cached = getattr(self, "_base_cache", None)
        if cached is not None and cached[0] is y and cached[1] is per_point:
            return cached[2]
        values = _kernels._base_terms(self._log_base, y, per_point, self._params())
        self._base_cache = (y, per_point, values)
        return values

    def __getstate__(self):
        # the cache above belongs to one array of this process: a pickled likelihood (sent to a Dask
        # worker or another process) does not carry it, N values long
        state = dict(self.__dict__)
        state.pop("_base_cache", None)
        return state

    # --- predictions -----------------------------------------------------------

    def predict_mean_var(self, mean, var, n_points=None):
        """Mean and variance of y under p(y) = integral of p(y | a) N(a; mean, var) da.

        Parameters
        ----------
        mean, var : array_like, shape (N,)
            Marginals of the latent at the prediction points.
        n_points : int, optional
            Gauss-Hermite points where there is no closed form.

        Returns
        -------
        y_mean, y_var : ndarray, shape (N,)
            Predictive mean (for labels: P(y = 1)) and variance.
        """
        mean, var = check_gaussian_marginals(mean, var)
        self._per_point_for(mean.shape[0], "mean")
        n_points = self.n_points if n_points is None else check_n_points(n_points)
        return self._predict_mean_var(mean, var, n_points)

    def _predict_mean_var(self, mean, var, n_points=None):
        return self._quadrature_predict_mean_var(mean, var, n_points)

    def _quadrature_predict_mean_var(self, mean, var, n_points=None):
        nodes, weights = gauss_hermite(n_points or self.n_points or PREDICT_N_POINTS)
        return _kernels._gh_predictive_moments(
            self._moments, mean, var, self._per_point(), self._params(), nodes, weights
        )

    def predict_log_density(self, mean, var, y, n_points=None):
        """log of integral p(y_i | a) N(a; mean_i, var_i) da, e.g. for test log predictive scores.

        Parameters
        ----------
        mean, var : array_like, shape (N,)
            Marginals of the latent.
        y : array_like, shape (N,)
            Observations in the support.
        n_points : int, optional
            Gauss-Hermite points where there is no closed form.

        Returns
        -------
        ndarray, shape (N,)
            Log predictive densities; NaN where y is NaN.
        """
        mean, var = check_gaussian_marginals(mean, var)
        y = self.validate_y(y)
        check_same_length(y, mean)
        n_points = self.n_points if n_points is None else check_n_points(n_points)
        return self._predict_log_density(mean, var, y, n_points)

    def _predict_log_density(self, mean, var, y, n_points=None):
        return self._quadrature_predict_log_density(mean, var, y, n_points)

    def _quadrature_predict_log_density(self, mean, var, y, n_points=None):
        nodes, weights = gauss_hermite(n_points or self.n_points or PREDICT_N_POINTS)
        return _kernels._gh_log_predictive(
            self._log_lik, self._log_base, mean, var, y, self._per_point(), self._params(), nodes,
            np.log(weights),
        )

    # --- saving ------------------------------------------------------------------

    def spec(self):
        """This likelihood as JSON, ``{"class": name, "arguments": {...}}``, which :func:`.from_spec` rebuilds.

        Returns
        -------
        dict
            The class name and the constructor's arguments (numbers, strings,
            lists of numbers for per-point parameters).

        Raises
        ------
        ValueError
            For a likelihood that is not one of efvi's own classes (a
            :class:`Custom` log density, a subclass of your own): rebuilding it
            would mean running code named by a file.
        """
        arguments = self._spec_arguments()
        if self.n_points != DEFAULT_N_POINTS:
            arguments["n_points"] = self.n_points
        return spec_of(self, arguments)

    def _spec_arguments(self):
        """The constructor's keyword arguments (by convention ``_repr_fields``; see :meth:`with_per_point`)."""
        return {name: getattr(self, name) for name in self._repr_fields}

    # --- draws of y -------------------------------------------------------------

    def conditional_moments(self, latent):
        """``E[y | a]`` and ``Var[y | a]`` at given latent values, elementwise (no integration over ``a``).

        Parameters
        ----------
        latent : array_like, shape (..., N)
            Latent values ``a`` (finite); a per-point parameter of shape (N,)
            runs along the last axis.

        Returns
        -------
        mean, var : ndarray, the shape of ``latent``
        """
        latent = as_float(latent, "latent")
        shape = latent.shape
        mean, var = _kernels._conditional_moments(self._moments, _flat_copy(latent, shape),
                                                  self._per_point_along(shape), self._params())
        return mean.reshape(shape), var.reshape(shape)

    def _per_point_along(self, shape, name="latent"):
        """The per-point parameter broadcast over ``shape`` along its last axis and flattened (shape (1,) if shared)."""
        per_point = self._per_point()
        if per_point.shape[0] == 1:
            return per_point
        if not shape or shape[-1] != per_point.shape[0]:
            raise ValueError(f"{name} must have {per_point.shape[0]} entries along its last axis, one per value of "
                             f"{self.per_point_name}; got shape {shape}")
        return _flat_copy(per_point, shape)

    def sample(self, latent, rng=None):
        """Draws of ``y`` given latent values: one independent draw of ``y | a`` per entry of ``latent``.

        With posterior draws of the latent as ``latent`` these are
        posterior-predictive draws (what :meth:`efvi.inference.Prediction.sample`
        does).

        Parameters
        ----------
        latent : array_like, shape (..., N)
            Latent values ``a`` (finite), e.g. posterior draws of shape
            (n_draws, N); a per-point parameter of shape (N,) (exposures,
            trial counts) runs along the last axis.
        rng : numpy.random.Generator, int or None
            The random source; an int or None seeds a new generator.

        Returns
        -------
        ndarray, the shape of ``latent``, float64

        Raises
        ------
        NotImplementedError
            For a likelihood that cannot draw (a :class:`Custom` log density).
        ValueError
            For non-finite latent values, or a per-point parameter that does not
            match the last axis of ``latent``.
        """
        return np.asarray(self._draw(latent, np.random.default_rng(rng)), dtype=float)

    def _draw(self, latent, rng):
        """Draws of ``y | a`` of the shape of ``latent``; a subclass that can sample overrides this."""
        raise NotImplementedError(f"{type(self).__name__} cannot draw y given the latent (no sampler)")

    def __repr__(self):
        fields = [f"{name}={getattr(self, name)!r}" for name in self._repr_fields if getattr(self, name) is not None]
        if self.n_points != DEFAULT_N_POINTS:
            fields.append(f"n_points={self.n_points}")
        return f"{type(self).__name__}({', '.join(fields)})"
