"""Estimators load on first use: they need scikit-learn, which ``import efvi`` must not pay for.

A subpackage lists its estimator names with :func:`lazy_names`; ``efvi.models.glm.BayesianGLM``
(or ``from efvi.models.glm import BayesianGLM``) then imports the estimator module, and scikit-learn
with it, only when the name is first used.
"""

import importlib
import sys


def lazy_names(package, names):
    """A module-level ``__getattr__`` for ``package`` that imports each of ``names`` from its module.

    Parameters
    ----------
    package : str
        The subpackage's ``__name__``.
    names : dict of str to str
        Attribute name -> the submodule (relative to ``package``) that defines it.

    Returns
    -------
    callable
        ``__getattr__(name)``; it caches the value in the package's namespace.
    """
    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
