"""The exponential-family base class.

A family is

.. math:: q(z) = h(z) \\exp(\\langle \\lambda, \\phi(z) \\rangle - A(\\lambda)),

in a minimal representation.  A subclass supplies its log-partition
``log_partition`` (written with ``autograd.numpy``), its sufficient statistics
``sufficient_stats``, its base measure ``log_base_measure`` (default
:math:`h = 1`), its support ``in_support`` (default: every point), its natural
parameter space ``is_valid_natural``, and readable names: ``name``,
``param_names``, ``event_ndims``, ``sample_ndim`` and a constructor
(``docs/add_a_family.md`` lists this contract with a worked example).
Everything else is derived here once, from the log-partition:

.. math::

    \\mu = \\nabla A(\\lambda), \\qquad F(\\lambda) = \\nabla^2 A(\\lambda), \\qquad
    \\lambda = (\\nabla A)^{-1}(\\mu),

    H[q] = A(\\lambda) - \\langle \\lambda, \\mu \\rangle - E_q[\\log h(z)], \\qquad
    KL(q \\| p) = A(\\lambda_p) - A(\\lambda_q) - \\langle \\lambda_p - \\lambda_q, \\mu_q \\rangle,

the mean parameters and the Fisher information by autograd
(:mod:`efvi.expfam._autodiff`), the inverse map by a safeguarded Newton solve
(:mod:`efvi.expfam._newton`), the KL divergence as the Bregman divergence of
``A``, together with validation, batch and event shapes and ``logpdf``.  A
family with closed forms overrides ``natural_to_mean``, ``mean_to_natural``,
``fisher``, :meth:`ExponentialFamily.entropy` or ``_kl`` (the checks of
``other`` stay here), and the contract tests compare every closed form with
the derived route.  ``logpdf`` is ``-inf`` outside the support.

Every class-level map (``natural_to_mean``, ``log_partition``,
``from_natural``, ...: :data:`efvi.expfam._arguments.PARAMETER_ARGUMENTS`),
whether defined here or by a family, reads its parameter arguments with
:func:`efvi.expfam._arguments.parameter_parts`: a family with one part takes
that part as a bare array as well as in a 1-tuple, and a family with several
raises a ``ValueError`` for a bare array instead of reading its rows as parts.
"""

import inspect

import numpy as np

from . import _autodiff, _newton, _params
from ._arguments import check_draw, check_kl_other, check_parameter_tuple, read_parameter_tuples
from .checks import as_float


class ExponentialFamily:
    """Base class of every family: an immutable batch of distributions.

    Subclass attributes
    -------------------
    name : str
        Registry name.
    param_names : tuple of str
        Names of the natural-parameter parts, used in error messages.
    event_ndims : tuple of int
        Trailing event dimensions of each natural-parameter part.
    sample_ndim : int
        Dimensions of one draw ``z`` (0 for scalars, 1 for vectors, 2 for matrices).
    draw_parts : tuple of str
        Names of the arrays of a draw that is a tuple (Normal-Wishart's
        ``("mu", "precision")``); empty for draws that are one array.
    readable_params : tuple of str or None
        The readable parameters ``repr`` shows (default None: the arguments
        of the constructor ``__init__``).
    """

    name = None
    readable_params = None
    param_names = ()
    event_ndims = ()
    sample_ndim = 0
    draw_parts = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        read_parameter_tuples(cls)

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """Sufficient statistics ``phi(z)``, a tuple shaped like the natural parameters."""
        raise NotImplementedError(f"{cls.__name__}.sufficient_stats")

    @classmethod
    def log_base_measure(cls, z):
        """``log h(z)``, shape ``z``'s leading (sample + batch) shape; zero (``h = 1``) unless overridden."""
        draw = z[0] if cls.draw_parts else z
        return np.zeros(np.shape(draw)[: np.ndim(draw) - cls.sample_ndim])

    @classmethod
    def expected_log_base_measure(cls, natural):
        """``E_q[log h(z)]``, shape ``batch``, which the generic entropy needs.

        Zero for a family that keeps the default ``h = 1``; a family with another
        base measure must override this too (in closed form, or by a series for
        the Poisson's ``E log z!``), and otherwise gets a ``NotImplementedError``
        rather than a wrong entropy.
        """
        if getattr(cls.log_base_measure, "__func__", None) is not ExponentialFamily.log_base_measure.__func__:
            raise NotImplementedError(
                f"{cls.__name__} has a base measure h(z) other than 1: define "
                f"{cls.__name__}.expected_log_base_measure (E_q[log h(z)]) for its entropy"
            )
        return np.zeros(cls.batch_shape_of(natural))

    @classmethod
    def log_partition(cls, natural):
        """``A(lambda)``, shape ``batch``; written with ``autograd.numpy`` so it differentiates."""
        raise NotImplementedError(f"{cls.__name__}.log_partition")

    @classmethod
    def natural_to_mean(cls, natural):
        """Mean parameters ``mu = grad A(lambda)``, by autograd unless the family has a closed form.

        Returns
        -------
        tuple of float arrays shaped like ``natural`` (batch shapes broadcast)
        """
        return _autodiff.gradient_of_log_partition(cls.log_partition, natural, cls.event_ndims)

    @classmethod
    def mean_to_natural(cls, mean):
        """Natural parameters ``lambda = (grad A)^{-1}(mu)``, by Newton's method unless the family has a closed form.

        The safeguarded Newton solve of :mod:`efvi.expfam._newton` on
        ``A(lambda) - <lambda, mu>``, with the family's ``natural_to_mean`` and
        ``fisher``; every iterate stays in the natural parameter space.

        Raises
        ------
        ValueError
            Naming ``mean[i]`` for a malformed part, or ``mean`` outside :meth:`is_valid_mean`.
        efvi.expfam.ConvergenceError
            If the solve does not converge for some batch element (mean parameters
            on the boundary of the mean parameter space, or beyond it).
        """
        return _newton.mean_to_natural(cls, mean)

    @classmethod
    def fisher(cls, natural):
        """Fisher information ``hess A(lambda)`` in flattened coordinates, shape ``batch + (P, P)``.

        By autograd unless the family has a closed form.  The flattening is
        :func:`efvi.expfam.flatten`: parts concatenated in order, matrix parts
        row-major over all their entries.
        """
        return _autodiff.hessian_of_log_partition(cls.log_partition, natural, cls.event_ndims)

    @classmethod
    def fisher_vp(cls, natural, vector):
        """Fisher-vector product ``F(lambda) v`` for a parameter tuple ``vector``."""
        flat = _params.flatten(vector, cls.event_ndims)
        out = np.einsum("...ij,...j->...i", cls.fisher(natural), flat)
        return _params.unflatten(out, vector, cls.event_ndims)

    @classmethod
    def is_valid_natural(cls, natural):
        """Boolean array, shape ``batch``: whether ``lambda`` lies in the natural parameter space."""
        raise NotImplementedError(f"{cls.__name__}.is_valid_natural")

    @classmethod
    def is_valid_mean(cls, mean):
        """Boolean array, shape ``batch``: whether ``mu`` lies in the mean parameter space.

        Every finite ``mu`` by default; a family declares its mean parameter
        space (with :meth:`_mean_domain_description`) so that the derived
        :meth:`mean_to_natural` rejects impossible moments by name instead of
        failing to converge.
        """
        return np.ones(cls.batch_shape_of(mean), dtype=bool)

    @classmethod
    def in_support(cls, z):
        """Whether each draw lies in the support; boolean, shape ``z``'s leading (sample + batch) shape.

        Every point by default; a family with a smaller support overrides this.
        NaN entries may give either answer: :meth:`logpdf` returns NaN for them.
        """
        draw = z[0] if cls.draw_parts else z
        return np.ones(np.shape(draw)[: np.ndim(draw) - cls.sample_ndim], dtype=bool)

    @classmethod
    def _sample(cls, natural, rng, n):
        """Draw ``n`` samples, shape ``(n,) + batch + event``."""
        raise NotImplementedError(f"{cls.__name__}._sample")

    @classmethod
    def inner(cls, natural, stats):
        """``<lambda, phi>`` summed over event dimensions, shape ``batch``."""
        return _params.inner(natural, stats, cls.event_ndims)

    @classmethod
    def batch_shape_of(cls, params):
        """Batch shape of a parameter tuple (natural or mean)."""
        first = np.shape(params[0])
        return tuple(first[: len(first) - cls.event_ndims[0]])

    @classmethod
    def check_natural(cls, natural, name="natural"):
        """Validate a natural-parameter tuple and return it as float arrays.

        Raises
        ------
        ValueError
            If the tuple has the wrong number of parts, a part is not finite,
            the parts' shapes disagree, or ``lambda`` is outside the natural
            parameter space; the message names the part.
        """
        return check_parameter_tuple(cls, natural, name)

    @classmethod
    def _check_event_shapes(cls, arrays, name):
        """Family hook: check that the event shapes of the parts agree with each other."""

    @classmethod
    def _domain_description(cls):
        """Family hook: one sentence saying what the natural parameter space is."""
        return "see the family's docstring for its natural parameter space"

    @classmethod
    def _mean_domain_description(cls):
        """Family hook: one sentence saying what the mean parameter space is (see :meth:`is_valid_mean`)."""
        return "see the family's docstring for its mean parameter space"

    @classmethod
    def _newton_start(cls, mean):
        """Family hook: natural parameters inside the natural parameter space at which the derived
        :meth:`mean_to_natural` starts, parts broadcasting against ``mean``'s batch.

        By default a fixed point found once (:func:`efvi.expfam._newton.standard_start`).
        """
        return _newton.standard_start(cls, tuple(p.shape[p.ndim - k:] for p, k in zip(mean, cls.event_ndims)))

    # ------------------------------------------------------------------ objects
    def __init__(self, *args, **kwargs):
        raise TypeError(
            f"use a readable constructor of {type(self).__name__} or "
            f"{type(self).__name__}.from_natural / from_mean_params"
        )

    @classmethod
    def from_natural(cls, natural, validate=True):
        """Build a distribution from natural parameters (validated unless ``validate=False``)."""
        obj = object.__new__(cls)
        natural = cls.check_natural(natural) if validate else tuple(np.asarray(p, float) for p in natural)
        natural = tuple(p.copy() if p.flags.writeable else p for p in natural)  # never freeze the caller's array
        for p in natural:
            p.setflags(write=False)
        obj._natural = natural
        obj._mean_params = None
        return obj

    @classmethod
    def from_valid_natural(cls, natural):
        """The distribution with natural parameters ``natural`` (finite float arrays of the right
        shapes), or None if some batch element is outside the natural parameter space.

        The engine's test of every proposal; a family may override it to keep
        what the test computed (the Gaussian keeps the precision's Cholesky factor).
        """
        if not np.all(cls.is_valid_natural(natural)):
            return None
        return cls.from_natural(natural, validate=False)

    @classmethod
    def from_mean_params(cls, mean):
        """Build a distribution from mean parameters ``mu = E[phi(z)]`` (a tuple; one part may come bare)."""
        mean = tuple(as_float(p, f"mean[{i}]") for i, p in enumerate(mean))
        for i, (part, k) in enumerate(zip(mean, cls.event_ndims)):
            if k and 0 in part.shape[part.ndim - k:]:
                raise ValueError(f"mean[{i}] of {cls.__name__} must have event dimensions of size >= 1; "
                                 f"got shape {part.shape}")
        return cls.from_natural(cls.mean_to_natural(mean))

    @property
    def natural(self):
        """Natural parameters ``lambda`` (tuple of read-only arrays)."""
        return self._natural

    @property
    def mean_params(self):
        """Mean parameters ``mu = E[phi(z)]`` (tuple of read-only arrays), computed once."""
        if self._mean_params is None:
            mean = tuple(np.asarray(p, float) for p in self._compute_mean_params())
            for p in mean:
                p.setflags(write=False)
            self._mean_params = mean
        return self._mean_params

    def _compute_mean_params(self):
        """:meth:`natural_to_mean` of this batch; a family overrides it to reuse what the object holds
        (the Gaussian its precision's Cholesky factor and mean, the Normal-Wishart its scale's factor)."""
        return type(self).natural_to_mean(self._natural)

    @property
    def batch_shape(self):
        """Shape of the batch of distributions held."""
        return type(self).batch_shape_of(self._natural)

    def log_partition_value(self):
        """``A(lambda)`` of this batch (read-only), shape ``batch_shape``, computed once.

        A fit asks for a prior's at every iteration (its KL divergence, a
        conjugate factor's expectations); the natural parameters are
        read-only, so the value cannot go stale.
        """
        value = getattr(self, "_log_partition", None)
        if value is None:
            value = np.asarray(self._compute_log_partition(), dtype=float)
            value.setflags(write=False)
            self._log_partition = value
        return value

    def _compute_log_partition(self):
        """:meth:`log_partition` of this batch; a family overrides it to reuse what the object holds."""
        return type(self).log_partition(self._natural)

    def sufficient_stats_of(self, z):
        """``phi(z)`` for draws ``z`` of this batch (shape ``sample_shape + batch + event``).

        The class-level :meth:`sufficient_stats` unless the statistics depend on
        the event size held by the object (Categorical's number of classes).
        """
        return type(self).sufficient_stats(z)

    def in_support_of(self, z):
        """:meth:`in_support` for draws of this batch (Categorical needs its number of classes)."""
        return type(self).in_support(z)

    @property
    def event_shape(self):
        """Shape of one draw: ``()`` for scalars, ``(D,)``, ``(K,)`` or ``(D, D)``.

        For a draw that is a tuple (:attr:`draw_parts`), a tuple of shapes.
        """
        cls = type(self)
        if cls.sample_ndim == 0:
            return ()
        part = cls.event_ndims.index(cls.sample_ndim)
        return self._natural[part].shape[self._natural[part].ndim - cls.sample_ndim:]

    def _log_density(self, natural, draw, log_partition):
        """``<lambda, phi(z)> + log h(z) - A``, for draws of the batch ``natural`` describes."""
        cls = type(self)
        return cls.inner(natural, self.sufficient_stats_of(draw)) + cls.log_base_measure(draw) - log_partition

    def logpdf(self, z):
        """Log density ``log q(z)``; ``z`` has shape ``sample_shape + batch + event``.

        ``-inf`` (without a warning) for points outside the support, as
        ``scipy.stats`` does; NaN where ``z`` has a NaN entry.

        Returns
        -------
        array, shape ``sample_shape + batch`` (the leading shape of ``z`` broadcast with the batch)

        Raises
        ------
        ValueError
            Naming ``z`` if its shape does not end in :attr:`event_shape` or its
            leading shape does not broadcast with the batch shape.
        """
        cls = type(self)
        parts, events, shape = check_draw(self, z)
        draw = parts if cls.draw_parts else parts[0]
        support = np.broadcast_to(self.in_support_of(draw), shape)
        if np.all(support):
            return self._log_density(self._natural, draw, self.log_partition_value())
        missing = np.zeros(shape, dtype=bool)
        for part, event in zip(parts, events):
            missing = missing | np.any(np.isnan(part), axis=tuple(range(part.ndim - len(event), part.ndim)))
        keep = support & ~missing
        out = np.where(missing, np.nan, -np.inf)
        if np.any(keep):
            natural = tuple(np.broadcast_to(p, shape + p.shape[p.ndim - k:])[keep]
                            for p, k in zip(self._natural, cls.event_ndims))
            inside = tuple(np.broadcast_to(part, shape + event)[keep] for part, event in zip(parts, events))
            log_partition = np.broadcast_to(self.log_partition_value(), shape)[keep]
            out[keep] = self._log_density(natural, inside if cls.draw_parts else inside[0], log_partition)
        return out

    def sample(self, rng, n):
        """Draw ``n`` samples with a ``numpy.random.Generator``; shape ``(n,) + batch + event``."""
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
        if int(n) != n or n < 0:
            raise ValueError(f"n must be a non-negative integer; got {n!r}")
        return type(self)._sample(self._natural, rng, int(n))

    def entropy(self):
        """Differential (or discrete) entropy, shape ``batch_shape``, from the log-partition."""
        cls = type(self)
        return (
            self.log_partition_value()
            - cls.inner(self._natural, self.mean_params)
            - np.asarray(cls.expected_log_base_measure(self._natural))
        )

    def kl(self, other, validate=True):
        """``KL(self || other)``; shape: the two batch shapes broadcast.

        The Bregman divergence of ``A`` unless the family has a closed form
        (``_kl``).  KL is non-negative, so a value rounding made slightly
        negative (near-identical pairs, about -1e-15) is returned as 0, which
        is the nearer of the two to the exact value.

        Parameters
        ----------
        other : distribution of this family
        validate : bool
            Check ``other`` (family, event and batch shapes); a caller that
            built both itself (the fit's engine, every iteration) may skip it.

        Raises
        ------
        ValueError
            Naming ``other`` if it is not of this family, its event shapes (D or
            K) differ from this one's, or its batch shape does not broadcast.
        """
        if validate:
            check_kl_other(self, other)
        return np.maximum(self._kl(other), 0.0)

    def _kl(self, other):
        """``KL(self || other)`` for a checked ``other``: the Bregman divergence of ``A``."""
        cls = type(self)
        diff = _params.tree_sub(other.natural, self._natural)
        return (
            other.log_partition_value()
            - self.log_partition_value()
            - cls.inner(diff, self.mean_params)
        )

    def __getitem__(self, index):
        """Index the batch: ``q[i]`` is the ``i``-th distribution (or a sub-batch)."""
        if not isinstance(index, tuple):
            index = (index,)
        parts = []
        for p in self._natural:
            parts.append(np.array(p[index + (Ellipsis,)]))
        return type(self).from_natural(tuple(parts), validate=False)

    def __reduce__(self):
        """Copy and pickle by the natural parameters (a readable constructor may need arguments in ``__new__``)."""
        return (_from_natural, (type(self), self.natural))

    def __repr__(self):
        """The readable parameters: their values when they hold few numbers, else their shapes and ranges.

        ``Gamma(shape=2.0, rate=1.0)``; for a large batch or event
        ``Gamma(batch_shape=(1000,), shape=<(1000,) from 0.5 to 3.0>, rate=<(1000,) all 1.0>)``
        (``REPR_MAX_ENTRIES`` numbers at most are shown).  A family without
        readable parameters shows its batch and event shapes.
        """
        values = self._readable_values()
        if values is not None and sum(value.size for _, value in values) <= REPR_MAX_ENTRIES:
            shown = [f"{name}={_format_value(value)}" for name, value in values]
        else:
            shown = [f"batch_shape={self.batch_shape}"] if self.batch_shape else []
            shown += ([f"event_shape={self.event_shape}"] if values is None
                      else [f"{name}={_summarise_value(value)}" for name, value in values])
        return f"{type(self).__name__}({', '.join(shown)})"

    def _readable_values(self):
        """``[(name, float array), ...]`` of the readable parameters, or None when the family has none."""
        names = type(self).readable_params
        if names is None:
            if type(self).__init__ is ExponentialFamily.__init__:
                return None
            names = list(inspect.signature(type(self).__init__).parameters)[1:]
        try:
            return [(name, np.asarray(getattr(self, name), dtype=float)) for name in names]
        except (AttributeError, TypeError, ValueError):
            return None


REPR_MAX_ENTRIES = 12
"""``repr`` shows the readable parameters' values when they hold at most this many numbers in all."""


def _format_value(value):
    """A parameter printed plainly to six significant digits: ``2.0``, ``[0.5, 1.0]``."""
    rounded = np.vectorize(lambda x: float(f"{x:.6g}"), otypes=[float])(value)
    return repr(rounded.tolist())


def _summarise_value(value):
    """A large parameter as its shape and range: ``<(30,) from -1.49 to 0.52>``, ``<(30,) all 1.0>``."""
    low, high = (float(f"{x:.4g}") for x in (np.min(value), np.max(value)))
    return f"<{value.shape} all {low!r}>" if low == high else f"<{value.shape} from {low!r} to {high!r}>"


read_parameter_tuples(ExponentialFamily)


def _from_natural(cls, natural):
    """Rebuild a distribution of family ``cls`` from its natural parameters (unpickling, ``copy``)."""
    return cls.from_natural(natural)
