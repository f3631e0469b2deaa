"""The fit result: posteriors, sites, ELBO trace, learned hyperparameters and the state to resume from."""

import numpy as np


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
