"""Kernel base classes: hyperparameters, input checks, autograd and state-space hooks.

A kernel is a covariance function :math:`k(x, x')` with positive
hyperparameters :math:`p`.  They are exposed and optimised on the log scale,

.. math::

    \\theta = \\log p, \\qquad p = \\exp(\\theta),

as one flat vector ``log_params`` whose order is fixed by ``param_names``.

Each kernel writes its formula once, as a private pure function
``_matrix(p, X, X2)`` of the (positive) parameter vector in autograd.numpy.
The fast path ``k(X, X2)`` calls it with plain arrays; ``k.matrix_fn(X, X2)``
returns :math:`\\theta \\mapsto K(\\theta)` calling the same function with
:math:`\\exp(\\theta)`, so autograd differentiates the kernel matrix with
respect to the log hyperparameters.  Inputs are validated once, outside the
returned function.

Some kernels of a scalar input (time) are also stationary Gauss-Markov
processes: :math:`f(t) = H x(t)` with

.. math::

    dx = F x \\, dt + L \\, d\\beta, \\qquad E[d\\beta \\, d\\beta^T] = Q_c \\, dt,

whose stationary covariance solves
:math:`F P_\\infty + P_\\infty F^T + L Q_c L^T = 0`.  Over a gap
:math:`\\Delta` the state moves by

.. math::

    x_{k+1} = A x_k + q_k, \\qquad A = e^{F \\Delta}, \\qquad
    q_k \\sim N(0, Q), \\quad Q = P_\\infty - A P_\\infty A^T,

and :math:`k(\\Delta) = H A(\\Delta) P_\\infty H^T`.  Kernels with such a form
implement the ``_ss_*`` hooks in closed form (autograd.numpy, no matrix
exponential); the rest raise ``NotImplementedError``.
"""

import autograd.numpy as anp
import numpy as np

from . import statespace
from ._validation import as_inputs, as_log_params, as_time_gaps

_ALGEBRA = {}
"""The classes the kernel algebra builds: ``"sum"`` and ``"product"`` of kernels, ``"constant"`` from a number.

Filled by :mod:`.combination` and :mod:`.constant` at import (the kernels
package imports both), so that this module never imports them.
"""


def register_algebra(role, cls):
    """Say which class ``k1 + k2`` (``role="sum"``), ``k1 * k2`` (``"product"``) or a number (``"constant"``) builds."""
    _ALGEBRA[role] = cls


class Kernel:
    """Base class of every kernel: immutable, callable on inputs.

    Subclasses supply the parameter hooks (``param_names``,
    ``_param_vector``, ``_with_params``) and the pure formulas ``_matrix`` and
    ``_diag``; kernels with a state-space form also supply ``_ss_dim``,
    ``_ss_obs_row``, ``_ss_model`` and ``_ss_transition``.

    Kernels add and multiply: ``k1 + k2`` is a :class:`Sum`, ``k1 * k2`` a
    :class:`Product`, and a positive number ``c`` in ``c * k`` or ``c + k``
    becomes a :class:`Constant` kernel (whose value is then a hyperparameter).
    """

    def __setattr__(self, name, value):
        raise AttributeError(
            f"{type(self).__name__} is immutable; build a new kernel (for example with with_log_params)"
        )

    # ----------------------------------------------------------- parameters
    @property
    def param_names(self):
        """tuple of str: name of each entry of ``log_params``, in order."""
        raise NotImplementedError

    def _param_vector(self):
        """Positive hyperparameters, shape (n_params,), in ``param_names`` order."""
        raise NotImplementedError

    def _with_params(self, p):
        """A new kernel of the same structure with positive hyperparameters ``p``."""
        raise NotImplementedError

    def _matrix(self, p, X, X2):
        """``K`` (N, M) from hyperparameters ``p`` (array or autograd box); ``X2`` None means ``X``."""
        raise NotImplementedError

    def _diag(self, p, X):
        """``diag K`` (N,) from hyperparameters ``p``."""
        raise NotImplementedError

    @property
    def input_dim(self):
        """int or None: number of input features the kernel requires (None: any)."""
        return None

    @property
    def n_params(self):
        """int: length of ``log_params``."""
        return len(self.param_names)

    @property
    def log_params(self):
        """ndarray, shape (n_params,): log of the hyperparameters, ordered as ``param_names``."""
        return np.log(self._param_vector())

    def with_log_params(self, log_params):
        """Return a new kernel of the same structure with these log hyperparameters.

        Parameters
        ----------
        log_params : array_like, shape (n_params,)

        Returns
        -------
        Kernel
        """
        log_params = as_log_params(log_params, self.n_params)
        with np.errstate(over="ignore"):  # an overflow becomes inf, rejected by name below
            params = np.exp(log_params)
        return self._with_params(params)

    # ------------------------------------------------------------- matrices
    def __call__(self, X, X2=None):
        """Kernel matrix ``K[i, j] = k(X[i], X2[j])``.

        Parameters
        ----------
        X : array_like, shape (N, D) or (N,)
        X2 : array_like, shape (M, D) or (M,), optional
            Defaults to ``X``; the result is then exactly symmetric.

        Returns
        -------
        ndarray, shape (N, M)
        """
        X, X2 = self._inputs(X, X2)
        return np.asarray(self._matrix(self._param_vector(), X, X2), dtype=float)

    def diag(self, X):
        """Diagonal ``k(X[i], X[i])`` without forming the matrix.

        Parameters
        ----------
        X : array_like, shape (N, D) or (N,)

        Returns
        -------
        ndarray, shape (N,)
        """
        X, _ = self._inputs(X, None)
        return np.asarray(self._diag(self._param_vector(), X), dtype=float)

    def matrix_fn(self, X, X2=None):
        """Return ``f(log_params) -> K`` written in autograd.numpy.

        Parameters
        ----------
        X : array_like, shape (N, D) or (N,)
        X2 : array_like, shape (M, D) or (M,), optional

        Returns
        -------
        callable
            ``f(log_params)`` with ``log_params`` of shape ``(n_params,)``
            (an array or an autograd box) returning the ``(N, M)`` kernel
            matrix; ``f(k.log_params)`` equals ``k(X, X2)``.
        """
        X, X2 = self._inputs(X, X2)
        return lambda log_params: self._matrix(self._exp_params(log_params), X, X2)

    def _inputs(self, X, X2):
        X = as_inputs(X, "X", self.input_dim)
        return X, (None if X2 is None else as_inputs(X2, "X2", X.shape[1]))

    def _exp_params(self, log_params):
        if anp.shape(log_params) != (self.n_params,):
            raise ValueError(f"log_params must have shape ({self.n_params},); got shape {anp.shape(log_params)}")
        return anp.exp(log_params)

    # ---------------------------------------------------------- state space
    @property
    def state_dim(self):
        """int: dimension ``d`` of the state-space form (raises if there is none)."""
        self._require_state_space()
        return self._ss_dim()

    def state_space(self):
        """Continuous-time state-space form of the kernel of a scalar input.

        Returns
        -------
        StateSpace
            ``F`` (d, d), ``L`` (d, s), ``Qc`` (s, s), ``H`` (d,), ``Pinf`` (d, d).

        Raises
        ------
        NotImplementedError
            If the kernel has no finite-dimensional state-space form.
        """
        self._require_state_space()
        F, L, Qc, Pinf = (np.asarray(m, dtype=float) for m in self._ss_model(self._param_vector()))
        return statespace.StateSpace(F=F, L=L, Qc=Qc, H=np.asarray(self._ss_obs_row(), dtype=float), Pinf=Pinf)

    def discretise(self, dt):
        """Transition and process-noise matrices over time gaps.

        Parameters
        ----------
        dt : array_like, shape (T,)
            Non-negative gaps between consecutive sorted times.

        Returns
        -------
        A : ndarray, shape (T, d, d)
            ``expm(F dt[k])``.
        Q : ndarray, shape (T, d, d)
            ``Pinf - A[k] Pinf A[k]^T``, exactly symmetric.
        """
        self._require_state_space()
        A, Q = self._discretise(self._param_vector(), as_time_gaps(dt))
        return np.asarray(A, dtype=float), np.asarray(Q, dtype=float)

    def discretise_fn(self, dt):
        """Return ``f(log_params) -> (A, Q)`` (see :meth:`discretise`) in autograd.numpy.

        Parameters
        ----------
        dt : array_like, shape (T,)

        Returns
        -------
        callable
        """
        self._require_state_space()
        dt = as_time_gaps(dt)
        return lambda log_params: self._discretise(self._exp_params(log_params), dt)

    def stationary_cov_fn(self):
        """Return ``f(log_params) -> Pinf``, shape (d, d), in autograd.numpy."""
        self._require_state_space()
        return lambda log_params: self._ss_model(self._exp_params(log_params))[3]

    def _discretise(self, p, dt):
        A = self._ss_transition(p, dt)
        return A, statespace.process_noise(A, self._ss_model(p)[3])

    def _require_state_space(self):
        if self.input_dim not in (None, 1):
            raise ValueError(
                f"a state-space form needs a scalar input (time); this {type(self).__name__} has input_dim={self.input_dim}"
            )
        self._ss_dim()  # raises NotImplementedError for kernels without a form

    def _ss_dim(self, *args):
        raise NotImplementedError(
            f"{type(self).__name__} has no finite-dimensional state-space form; state-space forms exist for "
            "Matern12, Matern32, Matern52, Periodic (truncated series), Constant, and their sums and products"
        )

    _ss_obs_row = _ss_model = _ss_transition = _ss_dim

    # ------------------------------------------------------------- algebra
    def __add__(self, other):
        other = _as_kernel(other)
        return NotImplemented if other is None else _ALGEBRA["sum"](self, other)

    def __mul__(self, other):
        other = _as_kernel(other)
        return NotImplemented if other is None else _ALGEBRA["product"](self, other)

    def __radd__(self, other):
        other = _as_kernel(other)
        return NotImplemented if other is None else other + self

    def __rmul__(self, other):
        other = _as_kernel(other)
        return NotImplemented if other is None else other * self


def _as_kernel(other):
    if isinstance(other, Kernel):
        return other
    if isinstance(other, (int, float, np.integer, np.floating)) and not isinstance(other, bool):
        return _ALGEBRA["constant"](variance=other)
    return None


class Leaf(Kernel):
    """A kernel holding named hyperparameters (as opposed to a sum or product).

    Subclasses call ``_init_params`` from ``__init__`` with validated values
    (see ``_validation.positive_param``) and any non-hyperparameter options;
    ``_with_params`` rebuilds ``type(self)(**params, **options)``.  Each
    hyperparameter is readable as an attribute (a float, or a read-only array
    for an ARD lengthscale).
    """

    def _init_params(self, params, options=None):
        object.__setattr__(self, "_params", dict(params))
        object.__setattr__(self, "_options", dict(options or {}))

    def __getattr__(self, name):
        params = self.__dict__.get("_params", {})
        if name in params:
            value = params[name]
            return float(value) if value.ndim == 0 else value
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    @property
    def param_names(self):
        names = []
        for name, value in self._params.items():
            names.extend([name] if value.ndim == 0 else [f"{name}[{i}]" for i in range(value.size)])
        return tuple(names)

    def _param_vector(self):
        return np.concatenate([value.ravel() for value in self._params.values()])

    def _with_params(self, p):
        values, start = {}, 0
        for name, value in self._params.items():
            values[name] = p[start] if value.ndim == 0 else p[start : start + value.size]
            start += value.size
        return type(self)(**values, **self._options)

    def _unpack(self, p):
        """Split a parameter vector (array or autograd box) into this kernel's hyperparameters."""
        out, start = [], 0
        for value in self._params.values():
            out.append(p[start] if value.ndim == 0 else p[start : start + value.size])
            start += value.size
        return tuple(out)

    def __repr__(self):
        items = [f"{name}={getattr(self, name)!r}" for name in self._params]
        items += [f"{name}={value!r}" for name, value in self._options.items()]
        return f"{type(self).__name__}({', '.join(items)})"
