"""Differentiable special functions for the log-normalisers, imported from autograd on first use.

``autograd.scipy.special`` holds ``gammaln`` and ``logsumexp`` with their
derivatives, but importing it runs ``autograd/scipy/__init__.py``, which also
imports ``scipy.stats``, ``scipy.integrate`` and ``scipy.signal``: about 0.45 s,
which was 40 % of ``import efvi``.  These functions import it the first time
autograd traces a log-normaliser; autograd traces through them as through any
Python function.  :func:`gammaln` calls scipy directly on plain arrays
(nothing traced), without autograd's wrapper; a log-normaliser with a faster
form for plain arrays (Categorical's) asks :func:`traced` which to use.
"""

from autograd.tracer import isbox
from scipy import special


def traced(x):
    """Whether autograd is tracing ``x`` (an autograd box), so that only autograd functions may take it."""
    return isbox(x)


def gammaln(x):
    """``log Gamma(x)``, elementwise (autograd-differentiable)."""
    if not isbox(x):
        return special.gammaln(x)
    from autograd.scipy import special as differentiable

    return differentiable.gammaln(x)


def logsumexp(x, axis=None):
    """``log sum exp(x)`` over ``axis`` (autograd-differentiable)."""
    from autograd.scipy import special as differentiable

    return differentiable.logsumexp(x, axis=axis)
