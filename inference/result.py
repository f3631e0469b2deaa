"""The fit result: posteriors, sites, ELBO trace, learned hyperparameters and the state to resume from."""

import numpy as np

from ..expfam import ExponentialFamily


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
    """

    def __init__(self, posterior, sites, state, converged, timings, message="", priors=None,
                 hyperparameter_names=None, factor_names=None):
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
        self.factor_names = list(factor_names) if factor_names is not None else [""] * len(sites)

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
        return {b: dict(zip(self.hyperparameter_names[b], np.exp(theta).tolist()))
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

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Write the result to ``path`` atomically (``.npz``: arrays plus JSON metadata, no pickle).

        The file is written to a temporary file beside ``path`` and renamed
        over it only when complete, so a failed save leaves any previous file
        at ``path`` as it was.
        """
        from ._fitfile import save

        save(self, path)

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
        from ._fitfile import load

        return load(path)


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
