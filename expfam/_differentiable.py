"""Differentiable special functions for the log-normalisers, imported from autograd on first use.

``autograd.scipy.special`` holds ``gammaln`` and ``logsumexp`` with their
derivatives, but importing it runs ``autograd/scipy/__init__.py``, which also
imports ``scipy.stats``, ``scipy.integrate`` and ``scipy.signal``: about 0.45 s,
which was 40 % of ``import efvi``.  These functions import it the first time a
log-normaliser is evaluated; autograd traces through them as through any
Python function.
"""


def gammaln(x):
    """``log Gamma(x)``, elementwise (autograd-differentiable)."""
    from autograd.scipy import special

    return special.gammaln(x)


def logsumexp(x, axis=None):
    """``log sum exp(x)`` over ``axis`` (autograd-differentiable)."""
    from autograd.scipy import special

    return special.logsumexp(x, axis=axis)
