"""Likelihoods as JSON, so that saved estimators and fits keep them without pickle.

``likelihood.spec()`` gives ``{"class": name, "arguments": {...}}`` for one of
efvi's own likelihood classes: the constructor's arguments as numbers, strings
and lists of numbers (per-point parameters).  :func:`from_spec` builds the
likelihood again by looking its class up in :data:`SAVED_CLASSES` and calling
the constructor, which validates the arguments: a file names no code to run.
A :class:`~efvi.models.likelihoods.Custom` likelihood holds Python functions,
and a subclass defined elsewhere is code too, so neither has a spec.
"""

import numpy as np

from ...inference.result import register_likelihood_loader

from ._saved import SAVED_CLASSES, spec_of
from .aliases import BernoulliLogit, BernoulliProbit, BinomialLogit, GammaLogLink
from .bernoulli import Bernoulli
from .binomial import Binomial
from .exponential import Exponential
from .gamma import Gamma
from .gaussian import Gaussian
from .negative_binomial import NegativeBinomial
from .poisson import Poisson
from .student_t import StudentT

SAVED_CLASSES.update({cls.__name__: cls for cls in (
    Gaussian, Bernoulli, Binomial, Poisson, NegativeBinomial, Gamma, Exponential, StudentT,
    BernoulliLogit, BernoulliProbit, BinomialLogit, GammaLogLink)})


def from_spec(spec):
    """The likelihood of :meth:`Likelihood.spec`'s ``spec``.

    Parameters
    ----------
    spec : dict
        ``{"class": name, "arguments": {...}}`` with ``name`` in :data:`SAVED_CLASSES`.

    Returns
    -------
    Likelihood

    Raises
    ------
    ValueError
        If ``spec`` does not have that form, names another class, or holds
        arguments the constructor rejects.
    """
    if not isinstance(spec, dict) or set(spec) != {"class", "arguments"} or not isinstance(spec["arguments"], dict):
        raise ValueError(f"spec must be {{'class': name, 'arguments': {{...}}}}; got {spec!r}"[:300])
    name, arguments = spec["class"], spec["arguments"]
    cls = SAVED_CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"spec must name one of efvi's likelihood classes ({', '.join(SAVED_CLASSES)}); "
                         f"got {name!r}"[:300])
    for key, value in arguments.items():
        if not (value is None or isinstance(value, (bool, int, float, str))
                or (isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                    for v in value))):
            raise ValueError(f"spec's argument {key!r} of {name} must be a number, a string, null or a list of "
                             f"numbers; got {value!r}"[:300])
    try:
        return cls(**{key: np.asarray(value) if isinstance(value, list) else value for key, value in arguments.items()})
    except TypeError as err:
        raise ValueError(f"spec's arguments {sorted(arguments)} do not suit {name} ({err})") from None


register_likelihood_loader(from_spec)

__all__ = ["SAVED_CLASSES", "from_spec", "spec_of"]
