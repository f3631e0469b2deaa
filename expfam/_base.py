"""The exponential-family base class.

A family is

.. math:: q(z) = h(z) \\exp(\\langle \\lambda, \\phi(z) \\rangle - A(\\lambda)),

in a minimal representation.  A subclass supplies the pure maths on parameter
tuples (``sufficient_stats``, ``log_base_measure``, ``log_partition``,
``natural_to_mean``, ``mean_to_natural``, ``fisher``, ``is_valid_natural``,
``_sample``) and readable constructors.  Everything else -- validation, batch
shapes, ``logpdf``, ``entropy`` and ``kl`` -- is derived here once, from the
log-partition:

.. math::

    H[q] = A(\\lambda) - \\langle \\lambda, \\mu \\rangle - E_q[\\log h(z)], \\qquad
    KL(q \\| p) = A(\\lambda_p) - A(\\lambda_q) - \\langle \\lambda_p - \\lambda_q, \\mu_q \\rangle,

the Bregman divergence of ``A``.
"""

import numpy as np

from . import _params


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
    """

    name = None
    param_names = ()
    event_ndims = ()
    sample_ndim = 0

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """Sufficient statistics ``phi(z)``, a tuple shaped like the natural parameters."""
        raise NotImplementedError(f"{cls.__name__}.sufficient_stats")

    @classmethod
    def log_base_measure(cls, z):
        """``log h(z)``, shape ``batch``."""
        raise NotImplementedError(f"{cls.__name__}.log_base_measure")

    @classmethod
    def expected_log_base_measure(cls, natural):
        """``E_q[log h(z)]``; zero unless the family overrides it.

        The generic entropy needs it.  Families whose ``h`` is constant return
        that constant; others compute the expectation in closed form.
        """
        return np.zeros(cls.batch_shape_of(natural))

    @classmethod
    def log_partition(cls, natural):
        """``A(lambda)``, shape ``batch``; written with ``autograd.numpy`` so it differentiates."""
        raise NotImplementedError(f"{cls.__name__}.log_partition")

    @classmethod
    def natural_to_mean(cls, natural):
        """Mean parameters ``mu = grad A(lambda)``."""
        raise NotImplementedError(f"{cls.__name__}.natural_to_mean")

    @classmethod
    def mean_to_natural(cls, mean):
        """Natural parameters ``lambda = (grad A)^{-1}(mu)``."""
        raise NotImplementedError(f"{cls.__name__}.mean_to_natural")

    @classmethod
    def fisher(cls, natural):
        """Fisher information ``hess A(lambda)`` in flattened coordinates, shape ``batch + (P, P)``.

        The flattening is :func:`expfam.flatten`: parts concatenated in order,
        matrix parts row-major over all their entries.
        """
        raise NotImplementedError(f"{cls.__name__}.fisher")

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
        return cls._check_tuple(natural, name, cls.is_valid_natural, "natural parameter space")

    @classmethod
    def _check_tuple(cls, params, name, valid_fn, space):
        from ._validation import as_float

        if not isinstance(params, (tuple, list)) or len(params) != len(cls.param_names):
            raise ValueError(
                f"{name} for {cls.__name__} must be a tuple of {len(cls.param_names)} arrays "
                f"({', '.join(cls.param_names)}); got {type(params).__name__}"
                + (f" of length {len(params)}" if isinstance(params, (tuple, list)) else "")
            )
        arrays = tuple(
            as_float(p, f"{name}[{i}] ({pname})", ndim_min=k)
            for i, (p, pname, k) in enumerate(zip(params, cls.param_names, cls.event_ndims))
        )
        cls._check_shapes(arrays, name)
        valid = np.asarray(valid_fn(arrays))
        if not np.all(valid):
            where = tuple(int(i) for i in np.argwhere(~valid)[0]) if valid.ndim else ()
            raise ValueError(
                f"{name} for {cls.__name__} is outside the {space} at batch index {where}: "
                f"{cls._domain_description()}"
            )
        return arrays

    @classmethod
    def _check_shapes(cls, arrays, name):
        batch = cls.batch_shape_of(arrays)
        for i, (arr, k, pname) in enumerate(zip(arrays, cls.event_ndims, cls.param_names)):
            if tuple(arr.shape[: arr.ndim - k]) != batch:
                raise ValueError(
                    f"{name}[{i}] ({pname}) of {cls.__name__} has batch shape "
                    f"{arr.shape[: arr.ndim - k]}, expected {batch} like {name}[0]"
                )
        cls._check_event_shapes(arrays, name)

    @classmethod
    def _check_event_shapes(cls, arrays, name):
        """Family hook: check that the event shapes of the parts agree with each other."""

    @classmethod
    def _domain_description(cls):
        """Family hook: one sentence saying what the natural parameter space is."""
        return "see the family's docstring for its natural parameter space"

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
    def from_mean_params(cls, mean):
        """Build a distribution from mean parameters ``mu = E[phi(z)]``."""
        from ._validation import as_float

        if not isinstance(mean, (tuple, list)) or len(mean) != len(cls.param_names):
            raise ValueError(
                f"mean for {cls.__name__} must be a tuple of {len(cls.param_names)} arrays; got {mean!r}"
            )
        mean = tuple(as_float(p, f"mean[{i}]") for i, p in enumerate(mean))
        return cls.from_natural(cls.mean_to_natural(mean))

    @property
    def natural(self):
        """Natural parameters ``lambda`` (tuple of read-only arrays)."""
        return self._natural

    @property
    def mean_params(self):
        """Mean parameters ``mu = E[phi(z)]`` (tuple of read-only arrays), computed once."""
        if self._mean_params is None:
            mean = tuple(np.asarray(p, float) for p in type(self).natural_to_mean(self._natural))
            for p in mean:
                p.setflags(write=False)
            self._mean_params = mean
        return self._mean_params

    @property
    def batch_shape(self):
        """Shape of the batch of distributions held."""
        return type(self).batch_shape_of(self._natural)

    def log_partition_value(self):
        """``A(lambda)`` of this batch, shape ``batch_shape``."""
        return np.asarray(type(self).log_partition(self._natural))

    def sufficient_stats_of(self, z):
        """``phi(z)`` for draws ``z`` of this batch (shape ``sample_shape + batch + event``).

        The class-level :meth:`sufficient_stats` unless the statistics depend on
        the event size held by the object (Categorical's number of classes).
        """
        return type(self).sufficient_stats(z)

    def logpdf(self, z):
        """Log density ``log q(z)``; ``z`` has shape ``sample_shape + batch + event``.

        Returns
        -------
        array, shape ``sample_shape + batch``
        """
        cls = type(self)
        stats = self.sufficient_stats_of(z)
        return cls.inner(self._natural, stats) + cls.log_base_measure(z) - self.log_partition_value()

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

    def kl(self, other):
        """``KL(self || other)`` as the Bregman divergence of ``A``; shape ``batch_shape``."""
        cls = type(self)
        if not isinstance(other, cls):
            raise ValueError(
                f"other must be a {cls.__name__} for kl(); got {type(other).__name__}"
            )
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

    def __repr__(self):
        return f"{type(self).__name__}(batch_shape={self.batch_shape})"
