"""Export posterior samples to ArviZ: :func:`to_inference_data` (``efvi.to_inference_data``).

ArviZ is an optional dependency (``pip install efvi[arviz]``), imported only
when the function runs.  Each block of a fit becomes one variable of the
``posterior`` group with one chain of independent draws from the variational
posterior, so ArviZ's summaries (``az.summary``, ``az.plot_posterior``) read
the approximate posterior; its MCMC diagnostics (R-hat, ESS) have nothing to
diagnose here.

A structured block (dense GP, sparse GP, Markov GP, LDS) gives joint draws of
its latent function at its own inputs, and with ``inputs=`` at new inputs as
well, drawn together with them: a GP's from the Gaussian over both sets of
inputs, a state-space block's by forward filtering, backward sampling
(:mod:`efvi.models.lds.sampling`, ``O(T)``).
"""

import numpy as np

__all__ = ["to_inference_data"]

_MISSING = "to_inference_data needs ArviZ, an optional dependency: pip install efvi[arviz]"


def _arviz():
    try:
        import arviz
    except ImportError as error:
        raise ImportError(_MISSING) from error
    return arviz


def _estimator_coords(estimator, posterior):
    """Default dims and coords of a GLM estimator's weight block: the intercept and the feature names."""
    if "w" not in posterior or not hasattr(estimator, "coef_"):
        return {}, {}
    names = getattr(estimator, "feature_names_in_", None)
    n_features = np.shape(estimator.coef_)[0]
    names = [f"x{j}" for j in range(n_features)] if names is None else [str(name) for name in names]
    names = (["intercept"] if getattr(estimator, "fit_intercept", False) else []) + names
    if np.shape(posterior["w"].mean) != (len(names),):
        return {}, {}
    return {"w": ["feature"]}, {"feature": names}


def _posteriors(source):
    """Block name -> posterior, and default (dims, coords), from a fit, an estimator, a dict or one posterior."""
    if hasattr(source, "fit_result_"):
        posterior = source.fit_result_.posterior
        return dict(posterior), _estimator_coords(source, posterior)
    if hasattr(source, "posterior") and isinstance(source.posterior, dict):
        return dict(source.posterior), ({}, {})
    if isinstance(source, dict):
        return dict(source), ({}, {})
    if hasattr(source, "sample"):
        return {getattr(type(source), "name", "z"): source}, ({}, {})
    raise ValueError("fit must be a FitResult, a fitted estimator, a dict of posteriors or a posterior with "
                     f"sample(rng, n); got {type(source).__name__}")


def _new_inputs(inputs, posteriors):
    """Block name -> new inputs, from ``inputs`` (a dict, or the inputs of the one block that takes them)."""
    if inputs is None:
        return {}
    joint = [name for name, posterior in posteriors.items() if hasattr(posterior, "sample_joint")]
    if isinstance(inputs, dict):
        wrong = [name for name in inputs if name not in joint]
        if wrong:
            raise ValueError(f"inputs must name blocks that draw at new inputs ({', '.join(map(repr, joint))}); "
                             f"got {', '.join(map(repr, wrong))}")
        return dict(inputs)
    if len(joint) != 1:
        raise ValueError("inputs must be a dict block name -> new inputs when the exported blocks do not hold "
                         f"exactly one block that draws at new inputs; they hold {len(joint)} "
                         f"({', '.join(map(repr, joint))})")
    return {joint[0]: inputs}


def _draws(name, posterior, rng, n_samples, inputs=None):
    """Variable name -> draws with a leading chain axis of 1, shape (1, n_samples, ...)."""
    if inputs is not None:
        own, new = posterior.sample_joint(rng, n_samples, inputs)
        return {name: own[None], f"{name}_new": new[None]}
    if hasattr(posterior, "sample"):
        draws = posterior.sample(rng, n_samples)
    elif hasattr(posterior, "to_gaussian"):          # the GLM's dual route
        draws = posterior.to_gaussian().sample(rng, n_samples)
    else:
        raise ValueError(f"block {name!r} has a {type(posterior).__name__} posterior, which cannot be sampled; "
                         "leave it out with blocks=[...]")
    parts = getattr(type(posterior), "draw_parts", ())
    if parts:
        return {f"{name}_{part}": np.asarray(draw)[None] for part, draw in zip(parts, draws)}
    return {name: np.asarray(draws)[None]}


def to_inference_data(fit, n_samples=1000, seed=0, blocks=None, coords=None, dims=None, inputs=None):
    """Posterior samples of a fit as an ``arviz.InferenceData`` (one chain of independent draws).

    Parameters
    ----------
    fit : FitResult, fitted estimator, dict or posterior
        A :class:`efvi.inference.FitResult`, an estimator with
        ``fit_result_``, a dict block name -> posterior, or one posterior
        (named after its family, e.g. ``"gamma"``).
    n_samples : int
        Draws per block.
    seed : int or numpy.random.Generator
        Seeds the draws (blocks are drawn in the fit's order).
    blocks : iterable of str, optional
        The blocks to export (default: every block).
    coords : dict, optional
        ArviZ coordinates: dimension name -> labels.
    dims : dict, optional
        ArviZ dimensions: variable name -> list of dimension names of the
        axes after ``(chain, draw)``.  A GLM estimator's weights ``"w"``
        default to the dimension ``"feature"``, labelled ``"intercept"``
        (when fitted) and the feature names (``feature_names_in_``, from a
        DataFrame's columns) or ``x0, x1, ...``.  A family with several draw
        parts (``NormalWishart``) gives one variable per part,
        ``"<block>_<part>"``.

    Returns
    -------
    arviz.InferenceData
        A ``posterior`` group with one variable per block, shape
        ``(1, n_samples) + batch_shape + event_shape``; a structured
        block's variable holds joint draws of its latent function at its
        inputs, shape ``(1, n_samples, N)`` (a dense or sparse GP draws from
        the ``N x N`` posterior covariance: ``O(N^2)`` memory; a Markov GP
        or LDS by forward filtering, backward sampling: ``O(T)``).

    Raises
    ------
    ImportError
        If ArviZ is not installed.
    ValueError
        For an unknown block, a posterior that cannot be sampled (the
        marginals that a fit file keeps of a structured posterior it cannot
        rebuild, e.g. one with a custom kernel), ``inputs`` that name no
        block drawing at new inputs, or invalid ``n_samples``.
    """
    arviz = _arviz()
    posteriors, (default_dims, default_coords) = _posteriors(fit)
    if blocks is not None:
        names = [blocks] if isinstance(blocks, str) else list(blocks)
        unknown = [name for name in names if name not in posteriors]
        if unknown:
            raise ValueError(f"blocks must name blocks of the fit ({', '.join(map(repr, posteriors))}); "
                             f"got {', '.join(map(repr, unknown))}")
        posteriors = {name: posteriors[name] for name in names}
    if isinstance(n_samples, bool) or int(n_samples) != n_samples or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}")
    new_inputs = _new_inputs(inputs, posteriors)
    rng = np.random.default_rng(seed)
    samples = {}
    for name, posterior in posteriors.items():
        samples.update(_draws(name, posterior, rng, int(n_samples), new_inputs.get(name)))
    dims = {**{k: v for k, v in default_dims.items() if k in samples}, **(dims or {})}
    coords = {**{k: v for d in dims.values() for k, v in default_coords.items() if k in d}, **(coords or {})}
    return arviz.from_dict(posterior=samples, coords=coords or None, dims=dims or None,
                           attrs={"inference_library": "efvi"})
