"""Rules for the attributes of an ngvi optimiser restored from a file (:meth:`Optimizer.check_state`).

A loaded estimator sets the optimiser's attributes from what it saved, past
the constructor's checks; each optimiser class declares, attribute by
attribute, what its constructor and :meth:`step` keep them to
(``Optimizer.state_rules``: name -> rule), in the manner of NumPyro's
``arg_constraints``.  A rule is a callable ``rule(value, name, optimizer)``
that raises a ``ValueError`` naming the attribute.
"""

import numbers

import numpy as np

from ...expfam.checks import check_integer

__all__ = ["array", "boolean", "choice", "count", "real", "unit_pair", "unit_real"]


def real(low=None, low_open=True, allow_inf=False):
    """A finite real (or ``inf`` if ``allow_inf``) above ``low`` (``low_open``: strictly)."""
    def rule(value, name, optimizer):
        ok = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
        if ok and allow_inf and value == np.inf:
            return
        ok = ok and np.isfinite(value) and (low is None or (value > low if low_open else value >= low))
        if not ok:
            bound = "" if low is None else f" {'>' if low_open else '>='} {low}"
            raise ValueError(f"{name} must be a finite float{bound}{' or inf' if allow_inf else ''}; got {value!r}")
    return rule


def unit_real(value, name, optimizer):
    """A float in [0, 1) (a decay rate)."""
    real(0.0, low_open=False)(value, name, optimizer)
    if not value < 1.0:
        raise ValueError(f"{name} must be a float in [0, 1); got {value!r}")


def unit_pair(value, name, optimizer):
    """A pair of floats in [0, 1) (``betas``)."""
    if not isinstance(value, tuple) or len(value) != 2:
        raise ValueError(f"{name} must be a pair of floats in [0, 1); got {value!r}")
    for i, beta in enumerate(value):
        unit_real(beta, f"{name}[{i}]", optimizer)


def boolean(value, name, optimizer):
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False; got {value!r}")


def choice(*options):
    """One of ``options``."""
    def rule(value, name, optimizer):
        if value not in options:
            raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")
    return rule


def count(minimum=0, per_step=None):
    """An integer ``>= minimum``; with ``per_step`` (a callable of the optimiser) at most ``n_steps * per_step``."""
    def rule(value, name, optimizer):
        check_integer(value, name, minimum=minimum)
        if per_step is not None and value > optimizer.n_steps * per_step(optimizer):
            raise ValueError(f"{name} must be at most {optimizer.n_steps * per_step(optimizer)} after "
                             f"n_steps = {optimizer.n_steps} steps; got {value!r}")
    return rule


def array(copies=1, ndim=1, low=None):
    """A finite float ndarray of shape ``(copies * P,) * ndim``, every entry ``>= low`` if given."""
    def rule(value, name, optimizer):
        shape = (copies * optimizer.n_params,) * ndim
        if not isinstance(value, np.ndarray) or value.dtype.kind != "f" or value.shape != shape:
            got = f"shape {value.shape}, dtype {value.dtype}" if isinstance(value, np.ndarray) else type(value).__name__
            raise ValueError(f"{name} must be a float array of shape {shape}; got {got}")
        bad = ~np.isfinite(value) if low is None else ~(np.isfinite(value) & (value >= low))
        if np.any(bad):
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            expected = "finite" if low is None else f"finite and >= {low}"
            raise ValueError(f"{name} must be {expected}; entry {index} is {float(value[index])!r}")
    return rule
