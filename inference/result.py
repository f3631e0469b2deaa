"""The fit result: posteriors, sites, ELBO trace, learned hyperparameters and the state to resume from.

Prediction at new inputs lives in :mod:`efvi.inference._prediction`, the
marginals a loaded structured posterior keeps and the hooks that rebuild
posteriors and likelihoods from a file in :mod:`efvi.inference._loaded`, the
file itself in :mod:`efvi.inference._fitfile`; the models register their hooks
through this module, which re-exports them.
"""

import numpy as np

from ..expfam import ExponentialFamily
from . import _fitfile
from ._loaded import Marginals
from ._prediction import Prediction, can_predict, latent_prediction
from .blocks import hyperparameter_values

# re-exported: the models register their hooks and draw through this module, and a prediction's class is found here
from ._loaded import register_likelihood_loader, register_rebuilder  # noqa: F401
from ._prediction import LatentPrediction, gaussian_draws, register_latent_predictor  # noqa: F401


class PriorNotSupportedError(NotImplementedError):
    """Raised by :meth:`FitResult.as_prior` for a posterior that efvi cannot turn into a correct prior.

    Attributes
    ----------
    block : str
        The block whose posterior cannot be the next prior.
    """

    def __init__(self, message, block):
        super().__init__(message)
        self.block = block


class FitResult:
    """What :meth:`efvi.inference.Model.fit` returns.

    Attributes
    ----------
    posterior : dict
        Block name -> posterior (an expfam object, or a structured posterior
        with ``mean`` and ``var`` marginals for GP and state-space blocks).
    sites : list
        One site view per factor, in the model's factor order; each holds the
        factor's sites with the data index first (``fit.sites[0].precision``
        for Gaussian sites).
    converged : bool
        Whether the stopping rule was met by a step that could have moved the
        fit (a full CVI step, or a shorter one where a full step would not
        move the posterior).
    message : str
        Why the fit did not converge ("" when it did).
    timings : dict
        ``total`` seconds and ``per_iteration`` seconds of this call to ``fit``.
    priors : dict
        Block name -> the prior block with its learned hyperparameters, for
        blocks that learn them (empty for a result loaded from a file; the
        model's own blocks are never changed).
    state : FitState
        Everything the fit carried between iterations; ``fit(init=result)``
        continues from it.
    factor_names : list of str
        A short description of each factor, in the model's order.
    hyperparameter_names : dict
        Block name -> names of its learned hyperparameters.
    hyperparameter_log_scale : dict
        Block name -> for each learned hyperparameter, whether it is learned as a log (then
        reported as ``exp(theta)``).
    likelihoods : list
        Each factor's likelihood (None for a factor without one), in the
        model's order: what :meth:`predict` uses when it is given ``factor=``
        or no likelihood.  A loaded fit has those of efvi's own likelihood
        classes (a ``Custom`` likelihood is code, which a file does not hold).
    """

    def __init__(self, posterior, sites, state, converged, timings, message="", priors=None,
                 hyperparameter_names=None, factor_names=None, likelihoods=None, unsaved_likelihoods=None,
                 hyperparameter_log_scale=None):
        self.posterior = posterior
        self.sites = sites
        self.state = state
        self.converged = bool(converged)
        self.message = str(message)
        self.timings = timings
        self.priors = dict(priors or {})
        if hyperparameter_names is None:
            hyperparameter_names = {b: tuple(p.hyperparameter_names()) for b, p in self.priors.items()}
        self.hyperparameter_names = hyperparameter_names
        if hyperparameter_log_scale is None:
            hyperparameter_log_scale = {b: tuple(bool(x) for x in p.hyperparameter_log_scale())
                                        for b, p in self.priors.items()}
        self.hyperparameter_log_scale = hyperparameter_log_scale
        self.factor_names = list(factor_names) if factor_names is not None else [""] * len(sites)
        self.likelihoods = list(likelihoods) if likelihoods is not None else [None] * len(sites)
        # a loaded fit: factor index -> why its likelihood is not there (its class, which a file cannot rebuild)
        self._unsaved_likelihoods = dict(unsaved_likelihoods or {})

    @property
    def elbo_trace(self):
        """ndarray, shape (n,): the ELBO at the start and after every iteration (stochastic fits: the
        minibatch / Monte Carlo estimate; a learning fit also records the ELBO at each new hyperparameter)."""
        return np.asarray(self.state.elbo_trace, dtype=float)

    @property
    def rho_trace(self):
        """ndarray, shape (n,): the smallest step size of each entry of :attr:`elbo_trace` (0 where no step)."""
        return np.asarray(self.state.rho_trace, dtype=float)

    @property
    def n_iter(self):
        """int: iterations run, including those of the fits this one resumed."""
        return self.state.iteration

    @property
    def n_backoffs(self):
        """int: proposals rejected because they left the valid parameter set."""
        return self.state.n_backoffs

    @property
    def elbo(self):
        """The last ELBO of the trace."""
        return float(self.state.elbo_trace[-1])

    @property
    def hyperparameters(self):
        """dict: block name -> {parameter name: learned value} for blocks that learn hyperparameters."""
        return {b: dict(zip(self.hyperparameter_names[b], hyperparameter_values(theta, self.hyperparameter_log_scale[b])))
                for b, theta in self.state.hyper.theta.items()}

    def as_prior(self, blocks=None):
        r"""The posterior as the prior of the next model: the latents dict for ``Model(latents=...)``.

        Bayes' rule applied to data arriving in tasks :math:`D_1, D_2, \ldots`
        makes each posterior the next prior,

        .. math:: p(z \mid D_1, \ldots, D_t) \propto p(D_t \mid z)\, p(z \mid D_1, \ldots, D_{t-1}),

        so ``Model(latents=fit.as_prior(), factors=[...next task...]).fit()``
        continues the inference.  Where the posterior is exact (a single block
        with conjugate factors, or a Gaussian block with Gaussian-likelihood GLM
        factors) the sequential fits equal the batch fit; where it is an
        approximation (non-conjugate likelihoods, or several blocks whose
        mean-field product ``q(z_1) q(z_2)`` drops their dependence) each task
        adds its approximation error (variational continual learning, Nguyen et
        al. 2018).

        Parameters
        ----------
        blocks : iterable of str, optional
            The blocks to return (default: every block).

        Returns
        -------
        dict
            Block name -> prior.  Exponential-family posteriors are returned as
            they are (immutable family objects of the prior's family, batch
            shape included); the GLM's dual route (``N < D``) gives its weight
            posterior as a full :class:`efvi.expfam.Gaussian` (this forms the
            ``D x D`` covariance once).

        Raises
        ------
        PriorNotSupportedError
            For a GP, Markov GP or LDS block (its posterior is a distribution
            over the function at this block's own inputs or time steps, while
            the next task's factors need a prior at theirs: that prior is the
            posterior process, a GP with mean ``k(x, X) alpha`` and kernel
            ``k(x, x') - k(x, X) W k(X, x')``, which efvi does not build), and
            for a structured posterior loaded from a file (only its marginals
            were saved).
        ValueError
            If ``blocks`` names a block the fit does not have.

        Examples
        --------
        >>> first = Model({"rate": Gamma(1.0, 1.0)}, [PoissonGamma(counts[:10], on="rate")]).fit()
        >>> second = Model(first.as_prior(), [PoissonGamma(counts[10:], on="rate")]).fit()
        """
        names = list(self.posterior) if blocks is None else [blocks] if isinstance(blocks, str) else list(blocks)
        unknown = [b for b in names if b not in self.posterior]
        if unknown:
            raise ValueError(f"blocks must name blocks of this fit ({', '.join(map(repr, self.posterior))}); "
                             f"got {', '.join(map(repr, unknown))}")
        return {name: _posterior_as_prior(name, self.posterior[name]) for name in names}

    def summary(self):
        """A few lines describing the fit: ELBO, iterations, convergence and each posterior."""
        lines = [
            f"ELBO {self.elbo:.6f} after {self.n_iter} iterations "
            f"({'converged' if self.converged else 'NOT converged'}, "
            f"{self.timings.get('total', float('nan')):.3g} s, {self.n_backoffs} back-offs)"
        ]
        if self.message:
            lines.append(f"  {self.message}")
        for name, q in self.posterior.items():
            mean = np.asarray(getattr(q, "mean", np.nan))
            shown = np.array2string(mean.ravel()[:6], precision=4)
            more = " ..." if mean.size > 6 else ""
            lines.append(f"  {name}: {type(q).__name__}{tuple(getattr(q, 'batch_shape', ()))} "
                         f"mean {shown}{more}")
        for name, values in self.hyperparameters.items():
            shown = ", ".join(f"{k}={v:.4g}" for k, v in values.items())
            lines.append(f"  {name} hyperparameters: {shown}")
        return "\n".join(lines)

    def __repr__(self):
        return f"FitResult(elbo={self.elbo:.6g}, n_iter={self.n_iter}, converged={self.converged})"

    # ------------------------------------------------------------------ prediction
    def predict_latent(self, inputs, block=None):
        """The posterior of a block's latent at new inputs.

        Parameters
        ----------
        inputs : array_like
            New rows ``X_new`` of shape (M, D) for a GLM's weights or a GP;
            new times, shape (M,), for a Markov GP (any order: before, between
            or after the data; interpolation and forecasts); time-step indices
            (integers ``>= 0``) for an LDS, where steps beyond the last are
            forecasts (constant transition, process covariance and observation
            row only).
        block : str, optional
            The block to predict; may be omitted when one block can predict.

        Returns
        -------
        LatentPrediction
            ``mean``, ``var``, ``interval(level)`` (exact Gaussian quantiles)
            and ``sample(n, seed)`` (joint draws).

        Raises
        ------
        ValueError
            If ``block`` is not a block that predicts, or ``inputs`` do not suit it.
        """
        name = self._predicting_block(block)
        return latent_prediction(self.posterior[name], inputs)

    def predict(self, inputs, likelihood=None, block=None, factor=None):
        """Posterior-predictive marginals of new observations ``y`` at new inputs.

        Parameters
        ----------
        inputs : array_like
            As for :meth:`predict_latent`.
        likelihood : efvi.models.likelihoods.Likelihood, optional
            The observation model of the new points; per-point parameters
            (exposures, trial counts) are those of the new points.  Its
            parameters must be fixed numbers (not latent blocks).  Default:
            the likelihood of the factor ``factor``, or of the one factor with
            a likelihood on the block (see :attr:`likelihoods`).
        block : str, optional
            As for :meth:`predict_latent`; default: the block of ``factor``.
        factor : int or str, optional
            The factor whose likelihood the new observations follow: its
            position in the model's list of factors, or its entry of
            :attr:`factor_names` (e.g. ``"Observe(on='f')"``).

        Returns
        -------
        Prediction
            ``mean`` and ``var`` of ``y``, ``interval(level)`` (exact for
            Gaussian and discrete likelihoods), ``sample(n, seed)``
            (posterior-predictive draws), ``log_density(y)`` and ``latent``.

        Raises
        ------
        ValueError
            If ``likelihood`` is not a likelihood with fixed parameters; if no
            likelihood is given and ``factor`` does not pick one (no such
            factor, a factor without a likelihood, one with a per-point
            parameter of the training points, or one that a loaded file does
            not hold); or as for :meth:`predict_latent`.
        """
        if likelihood is None:
            likelihood, block = self._factor_likelihood(factor, block)
        elif factor is not None:
            raise ValueError(f"give likelihood or factor, not both; got {likelihood!r} and factor={factor!r}")
        if not callable(getattr(likelihood, "predict_mean_var", None)):
            raise ValueError("likelihood must be an efvi likelihood (e.g. efvi.likelihoods.Poisson()); "
                             f"got {type(likelihood).__name__}")
        if getattr(likelihood, "latent_parameters", {}):
            raise ValueError(f"likelihood must have fixed parameters to predict; {likelihood!r} holds "
                             f"{sorted(likelihood.latent_parameters)} as latent blocks: pass a likelihood with "
                             "numbers, e.g. the posterior mean of the noise precision")
        return Prediction(self.predict_latent(inputs, block), likelihood)

    def _factor_likelihood(self, factor, block):
        """The likelihood of ``factor`` (or of the one factor on the predicting block) and the block to predict."""
        if factor is None:
            target = self._predicting_block(block)
            candidates = [k for k, lik in enumerate(self.likelihoods) if self._factor_block(k) == target
                          and (lik is not None or k in self._unsaved_likelihoods)]
            if len(candidates) != 1:
                names = ", ".join(f"{k}: {self.factor_names[k]}" for k in candidates)
                raise ValueError(f"factor must name the factor whose likelihood predicts block {target!r}, or pass "
                                 f"likelihood=: this fit has {len(candidates) or 'no'} factors with a likelihood "
                                 f"on it{f' ({names})' if names else ''}")
            k = candidates[0]
        else:
            k = self._factor_index(factor)
        likelihood, name = self.likelihoods[k], f"factor {k} ({self.factor_names[k]})"
        if likelihood is None:
            if k in self._unsaved_likelihoods:
                raise ValueError(f"{name}: its likelihood, a {self._unsaved_likelihoods[k]}, is not in the file this "
                                 "fit was loaded from (a file holds efvi's own likelihood classes only; a Custom "
                                 "likelihood is code): pass likelihood=")
            raise ValueError(f"{name} has no likelihood to predict new observations with: pass likelihood=")
        per_point = likelihood.per_point_name
        if per_point is not None and np.ndim(getattr(likelihood, per_point)) > 0:
            raise ValueError(f"{name}: its likelihood has one {per_point} per training point; the new points need "
                             f"their own: pass likelihood=fit.likelihoods[{k}].with_per_point(<{per_point} of the "
                             "new points>)")
        observed = self._factor_block(k)
        if block is not None and observed is not None and block != observed:
            raise ValueError(f"{name} observes block {observed!r}, not block={block!r}")
        return likelihood, block if block is not None else observed

    def _factor_index(self, factor):
        n = len(self.factor_names)
        if isinstance(factor, str):
            matches = [k for k, name in enumerate(self.factor_names) if name == factor]
            if len(matches) == 1:
                return matches[0]
        elif isinstance(factor, (int, np.integer)) and not isinstance(factor, (bool, np.bool_)) and 0 <= factor < n:
            return int(factor)
        raise ValueError(f"factor must be a factor's position (0 to {n - 1}) or its unique entry of factor_names "
                         f"({', '.join(map(repr, self.factor_names))}); got {factor!r}")

    def _factor_block(self, k):
        """The block whose values factor ``k``'s likelihood observes (its Gaussian sites' block), or None."""
        return getattr(self.sites[k], "block", None)

    def _predicting_block(self, block):
        able = [b for b, q in self.posterior.items() if can_predict(q)]
        if block is None:
            if len(able) != 1:
                raise ValueError(f"block must name the block to predict: this fit has "
                                 f"{len(able) or 'no'} blocks that predict ({', '.join(map(repr, able))})")
            return able[0]
        if block not in self.posterior:
            raise ValueError(f"block must name a block of this fit ({', '.join(map(repr, self.posterior))}); "
                             f"got {block!r}")
        q = self.posterior[block]
        if isinstance(q, Marginals):
            raise ValueError(f"block {block!r} was loaded from a file that holds only its marginal means and "
                             "variances (its prior has no saved form, e.g. a kernel outside efvi's kernels); refit "
                             "to predict")
        if not can_predict(q):
            raise ValueError(f"block {block!r} has a {type(q).__name__} posterior, which does not predict at new "
                             f"inputs; blocks that do: {', '.join(map(repr, able)) or 'none'}")
        return block

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Write the result to ``path`` atomically (``.npz``: arrays plus JSON metadata, no pickle).

        The file is written to a temporary file beside ``path`` and renamed
        over it only when complete, so a failed save leaves any previous file
        at ``path`` as it was.
        """
        _fitfile.save(self, path)

    @classmethod
    def load(cls, path):
        """Read a result written by :meth:`save`, checking every entry.

        Posteriors of exponential-family blocks come back as family objects;
        structured posteriors come back as :class:`Marginals` (mean and var).
        To continue a fit, pass the loaded result to ``model.fit(init=...)``.

        Raises
        ------
        efvi.inference.FitFileError
            If the file cannot be read or any entry is missing, malformed or
            out of range; the message names the file and the entry.
        """
        return _fitfile.load(path, FitResult)


def _posterior_as_prior(name, posterior):
    """The prior that continues the inference from ``posterior`` (see :meth:`FitResult.as_prior`)."""
    if isinstance(posterior, ExponentialFamily):
        return posterior
    if hasattr(posterior, "to_gaussian"):          # the GLM's dual route: a weight posterior in the N-space
        return posterior.to_gaussian()
    if isinstance(posterior, Marginals):
        raise PriorNotSupportedError(
            f"block {name!r}: this result was loaded from a file, which keeps only the marginal means and "
            f"variances of a structured posterior ({posterior!r}); a prior needs the whole posterior: refit, "
            "or keep the original FitResult", name)
    kind = type(posterior).__name__
    raise PriorNotSupportedError(
        f"block {name!r} has a structured posterior ({kind}), a Gaussian over the latent function or states at "
        "this block's own inputs or time steps; the next model's factors need a prior at theirs, i.e. the "
        "posterior process (for a GP: mean k(x, X) alpha and kernel k(x, x') - k(x, X) W k(X, x')), which efvi "
        "does not build as a block.  Fit the tasks' data in one model instead (its sites are the sum of the "
        "tasks' sites, so it is the posterior that exact sequential updating would reach), or read the "
        f"posterior at new inputs with fit.posterior[{name!r}].predict(...)", name)


def save_archive(path, fmt, arrays, content, fits=None):
    """Write an efvi file of format ``fmt`` atomically, in the fit file's form (``.npz``, JSON metadata, no pickle).

    The writer of :meth:`FitResult.save`, for other efvi objects that save
    themselves (the scikit-learn estimators' ``save``).

    Parameters
    ----------
    path : str or os.PathLike
    fmt : str
        A format name that :func:`open_archive` will ask for, e.g. ``"efvi-estimator-1"``.
    arrays : dict
        Name -> ndarray of float64 or int64 (names not starting with ``fits/``).
    content : JSON-able object
        Everything else, as numbers, strings, lists and objects (finite numbers only).
    fits : dict, optional
        Name -> :class:`FitResult`, each stored whole (read back by ``archive.fit(name)``).
    """
    _fitfile.write_archive(path, fmt, arrays, content, fits or {})


def open_archive(path, fmt, what):
    """Open a file of :func:`save_archive` for checked reading; use it as a context manager.

    Parameters
    ----------
    path : str or os.PathLike
    fmt : str
        The format the file must have.
    what : str
        What the file holds, for messages (e.g. ``"estimator"``).

    Returns
    -------
    reader
        With ``content`` (the JSON content), ``array(key)`` (the array
        checked against the file's list of arrays and for finite values),
        ``fit(name)`` (a :class:`FitResult`, checked as :meth:`FitResult.load`
        checks a fit file), ``fail(entry, problem)`` (raises
        :class:`~efvi.inference.FitFileError` naming the file and the entry)
        and ``finish()`` (fails for any array not read).

    Raises
    ------
    efvi.inference.FitFileError
        If the file cannot be read, or is not of format ``fmt``.
    """
    return _fitfile.ArchiveReader(path, fmt, what, FitResult)
