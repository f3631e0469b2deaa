"""What a loaded fit is rebuilt from: the marginals of a structured posterior, and the hooks through which the
models say how a fit file's posteriors and likelihoods become objects again.

The models fill the hooks at import (the engine never imports them); the fit
reader (:mod:`efvi.inference._fit_reader`) looks them up.
"""

import numpy as np

# a saved predictor kind -> how to rebuild a posterior from a fit file; the one function that rebuilds likelihoods
_REBUILDERS = {}
_LIKELIHOOD_LOADERS = []


class Marginals:
    """Marginal means and variances of a structured Gaussian posterior, as loaded from a file.

    Attributes
    ----------
    mean, var : ndarray, shape (N,)
    """

    def __init__(self, mean, var):
        self.mean = np.asarray(mean)
        self.var = np.asarray(var)

    @property
    def batch_shape(self):
        return self.mean.shape

    def __repr__(self):
        return f"Marginals(n={self.mean.shape[0]})"


def register_rebuilder(kind, rebuild):
    """Say how a fit file's predictor ``kind`` becomes a posterior again (see ``predictive_state``).

    A structured posterior that can be saved with what prediction needs has a
    method ``predictive_state() -> (kind, spec, arrays)`` (a JSON-able spec and
    a dict of float64 arrays); on load ``rebuild(spec, array, name)`` is called
    with ``array(key)`` returning the checked array ``key`` and must return the
    posterior or raise ``ValueError`` / ``TypeError`` / ``KeyError``.
    """
    _REBUILDERS[kind] = rebuild


def register_likelihood_loader(load):
    """Say how a fit file's likelihood specs become likelihoods again (``load(spec)``, ValueError if invalid).

    A likelihood saved with a fit is ``likelihood.spec()`` (JSON); the models
    package registers the function that rebuilds it from efvi's own classes.
    """
    _LIKELIHOOD_LOADERS[:] = [load]
