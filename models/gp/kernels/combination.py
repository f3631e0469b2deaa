"""Sums and products of kernels.

.. math::

    (k_1 + k_2)(x, x') = k_1(x, x') + k_2(x, x'), \\qquad
    (k_1 k_2)(x, x') = k_1(x, x') \\, k_2(x, x'),

both positive semi-definite when the parts are (the product by the Schur
product theorem).  ``k1 + k2 + k3`` is one flat :class:`Sum` of three parts
(likewise products).  ``log_params`` concatenates the parts' vectors in
order; ``param_names`` prefixes each part's names with ``k1.``, ``k2.``, ...
(nested combinations of the other kind give ``k1.k2.variance``).

State space (scalar input): a sum stacks its parts' states block-diagonally,
a product takes their Kronecker product (:mod:`.statespace`); both are exact,
and available when every part has a state-space form.
"""

from functools import reduce

import numpy as np

from . import statespace
from ._base import Kernel, register_algebra


class _Combination(Kernel):
    """A kernel built from ``parts``, combined elementwise by ``_combine``."""

    _symbol = None

    def __init__(self, *parts):
        flat = []
        for part in parts:
            if not isinstance(part, Kernel):
                raise ValueError(f"{type(self).__name__} parts must be kernels; got {part!r}")
            flat.extend(part.parts if type(part) is type(self) else [part])
        if len(flat) < 2:
            raise ValueError(f"{type(self).__name__} needs at least two kernels; got {len(flat)}")
        dims = {part.input_dim for part in flat} - {None}
        if len(dims) > 1:
            raise ValueError(
                f"{type(self).__name__} parts must share an input dimension; got input_dim values {sorted(dims)}"
            )
        object.__setattr__(self, "parts", tuple(flat))

    @staticmethod
    def _combine(a, b):
        raise NotImplementedError

    @property
    def input_dim(self):
        dims = [part.input_dim for part in self.parts if part.input_dim is not None]
        return dims[0] if dims else None

    @property
    def param_names(self):
        return tuple(f"k{i + 1}.{name}" for i, part in enumerate(self.parts) for name in part.param_names)

    def _param_vector(self):
        return np.concatenate([part._param_vector() for part in self.parts])

    def _split(self, p):
        out, start = [], 0
        for part in self.parts:
            out.append(p[start : start + part.n_params])
            start += part.n_params
        return out

    def _with_params(self, p):
        return type(self)(*(part._with_params(q) for part, q in zip(self.parts, self._split(p))))

    def _matrix(self, p, X, X2):
        return reduce(self._combine, [part._matrix(q, X, X2) for part, q in zip(self.parts, self._split(p))])

    def _diag(self, p, X):
        return reduce(self._combine, [part._diag(q, X) for part, q in zip(self.parts, self._split(p))])

    def _ss_models(self, p):
        return [part._ss_model(q) for part, q in zip(self.parts, self._split(p))]

    def _ss_transitions(self, p, dt):
        return [part._ss_transition(q, dt) for part, q in zip(self.parts, self._split(p))]

    def __repr__(self):
        return f" {self._symbol} ".join(
            f"({part!r})" if isinstance(part, _Combination) else repr(part) for part in self.parts
        )


class Sum(_Combination):
    """Sum of kernels, ``k1 + k2 + ...``.

    Parameters
    ----------
    *parts : Kernel
        At least two kernels (sums among them are flattened).
    """

    _symbol = "+"

    @staticmethod
    def _combine(a, b):
        return a + b

    def _ss_dim(self):
        return sum(part._ss_dim() for part in self.parts)

    def _ss_obs_row(self):
        return np.concatenate([part._ss_obs_row() for part in self.parts])

    def _ss_model(self, p):
        return statespace.sum_model(self._ss_models(p))

    def _ss_transition(self, p, dt):
        return statespace.block_diag(self._ss_transitions(p, dt))


register_algebra("sum", Sum)


class Product(_Combination):
    """Elementwise product of kernels, ``k1 * k2 * ...``.

    Parameters
    ----------
    *parts : Kernel
        At least two kernels (products among them are flattened).
    """

    _symbol = "*"

    @staticmethod
    def _combine(a, b):
        return a * b

    def _ss_dim(self):
        return int(np.prod([part._ss_dim() for part in self.parts]))

    def _ss_obs_row(self):
        return reduce(np.kron, [part._ss_obs_row() for part in self.parts])

    def _ss_model(self, p):
        return reduce(statespace.product_model, self._ss_models(p))

    def _ss_transition(self, p, dt):
        return reduce(statespace.kron, self._ss_transitions(p, dt))


register_algebra("product", Product)
