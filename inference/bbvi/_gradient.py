"""One Monte Carlo estimate of the ELBO gradient of every block, from ``S`` draws shared by the blocks."""

import numpy as np

from . import _estimators

KINDS = ("euclidean", "natural")


class GradientEstimate:
    """One Monte Carlo estimate of the ELBO gradient for every block, from ``S`` shared draws.

    Attributes
    ----------
    posterior : dict
        Block name -> the ``q`` the estimate is taken at.
    euclidean : dict
        Block name -> ``grad_lambda ELBO``, flattened, shape ``batch + (P,)``
        (:func:`efvi.expfam.flatten` order; :func:`efvi.expfam.unflatten` gives the tuple).
    natural : dict
        Block name -> ``grad_mu ELBO = F(lambda)^{-1} grad_lambda ELBO``, the
        natural gradient, flattened likewise.
    variance, natural_variance : dict
        Block name -> the trace of the covariance of :attr:`euclidean` (of
        :attr:`natural`), ``sum_d Var_s(c_sd) / S`` from the per-draw terms ``c_s``.
    elbo : float
        ``mean_s [log p(z_s) - log q(z_s)]``, the Monte Carlo ELBO of the same draws.
    elbo_standard_error : float
        Its standard error, ``sd_s [log p(z_s) - log q(z_s)] / sqrt(S)``.
    """

    def __init__(self, posterior, euclidean, natural, variance, natural_variance, elbo, elbo_standard_error):
        self.posterior = posterior
        self.euclidean = euclidean
        self.natural = natural
        self.variance = variance
        self.natural_variance = natural_variance
        self.elbo = float(elbo)
        self.elbo_standard_error = float(elbo_standard_error)


def estimate(joint, posterior, options, rng, kinds=KINDS):
    """The gradient estimate at ``posterior`` from ``options["n_samples"]`` draws of ``rng``.

    Parameters
    ----------
    joint : LogJoint
    posterior : dict
        Block name -> ExponentialFamily.
    options : dict
        ``estimator``, ``control_variate`` and ``n_samples`` (validated).
    rng : numpy.random.Generator
    kinds : tuple of {"euclidean", "natural"}
        The gradients to compute; a fit computes only the one its step follows
        (the other costs a product with the Fisher information, or its inverse).

    Returns
    -------
    GradientEstimate
        With the gradients and variances of ``kinds`` only.
    """
    n_samples = options["n_samples"]
    draws = {name: q.sample(rng, n_samples) for name, q in posterior.items()}
    if options["estimator"] == "score":
        values, gradients = joint.values(draws, n_samples), None                # (K, S)
    else:
        values, gradients = joint.values_and_gradients(draws, n_samples)
    log_q = sum(np.asarray(q.logpdf(draws[name])).reshape(n_samples, -1).sum(axis=1)
                for name, q in posterior.items())
    weights = values.sum(axis=0) - log_q
    result = GradientEstimate(dict(posterior), {}, {}, {}, {}, np.mean(weights),
                              np.std(weights, ddof=1) / np.sqrt(n_samples))
    for name, q in posterior.items():
        family = type(q)
        terms = {}
        if gradients is None:
            log_p = values[joint.terms_of(name)].sum(axis=0)
            terms["euclidean"], _ = _estimators.score_terms(q, draws[name], log_p, options["control_variate"])
            if "natural" in kinds:
                terms["natural"] = _estimators.natural_from_euclidean(family, q.natural, terms["euclidean"])
        else:
            terms["natural"] = _estimators.reparameterisation_terms(q, draws[name], gradients[name])
            if "euclidean" in kinds:
                terms["euclidean"] = _estimators.euclidean_from_natural(family, q.natural, terms["natural"])
        if "euclidean" in kinds:
            result.euclidean[name] = terms["euclidean"].mean(axis=0)
            result.variance[name] = _estimators.trace_variance(terms["euclidean"])
        if "natural" in kinds:
            result.natural[name] = terms["natural"].mean(axis=0)
            result.natural_variance[name] = _estimators.trace_variance(terms["natural"])
    return result
