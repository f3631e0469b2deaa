"""The result of a black-box VI fit, named as :class:`efvi.inference.FitResult` names them."""

import numpy as np


class BBVIResult:
    """What :func:`efvi.inference.bbvi.fit` returns.

    Attributes
    ----------
    posterior : dict
        Block name -> the final ``q`` (an expfam object of the family it started
        in); a single-block fit's block is named ``"z"``.
    elbo_trace : ndarray, shape (n_iter + 1,)
        Monte Carlo ELBO estimate, ``mean_s [log p(z_s) - log q(z_s)]`` over the
        draws of each iteration, at the start and after every iteration.
    exact_elbo_trace : ndarray, shape (n_iter + 1,), or None
        ``expected_log_joint(q) + H[q]`` at the same points, when
        ``expected_log_joint`` was given.
    grad_variance : dict
        Block name -> ndarray (n_iter,): the trace of the covariance of the
        gradient estimate each iteration stepped along (the natural gradient
        for ``step="natural"``, the gradient in the natural parameters
        otherwise), from its per-draw terms: ``sum_d Var_s(c_sd) / S``.
    n_backoffs : int
        Steps halved because the proposal left the natural parameter space.
    timings : dict
        ``total`` and ``per_iteration`` seconds.
    options : dict
        The estimator, control variate, step, ``n_samples`` and whether the
        gradient was Rao-Blackwellised (the log joint was given as terms).
    """

    def __init__(self, posterior, elbo_trace, exact_elbo_trace, grad_variance, n_backoffs, timings, options):
        self.posterior = posterior
        self.elbo_trace = np.asarray(elbo_trace, dtype=float)
        self.exact_elbo_trace = None if exact_elbo_trace is None else np.asarray(exact_elbo_trace, dtype=float)
        self.grad_variance = {name: np.asarray(v, dtype=float) for name, v in grad_variance.items()}
        self.n_backoffs = int(n_backoffs)
        self.timings = timings
        self.options = dict(options)

    @property
    def n_iter(self):
        """int: iterations run."""
        return len(self.elbo_trace) - 1

    @property
    def grad_variance_trace(self):
        """ndarray, shape (n_iter,): :attr:`grad_variance` summed over blocks."""
        return np.sum([v for v in self.grad_variance.values()], axis=0) if self.grad_variance else np.zeros(0)

    @property
    def elbo(self):
        """The last exact ELBO if ``expected_log_joint`` was given, else the last Monte Carlo estimate."""
        trace = self.elbo_trace if self.exact_elbo_trace is None else self.exact_elbo_trace
        return float(trace[-1])

    def summary(self):
        """A few lines: the ELBO, iterations, estimator and each posterior's mean."""
        kind = "exact" if self.exact_elbo_trace is not None else "Monte Carlo"
        lines = [f"ELBO {self.elbo:.6f} ({kind}) after {self.n_iter} iterations "
                 f"({self.timings.get('total', float('nan')):.3g} s, {self.n_backoffs} back-offs); "
                 + ", ".join(f"{k}={v}" for k, v in self.options.items())]
        for name, q in self.posterior.items():
            mean = np.asarray(getattr(q, "mean", np.nan))
            shown = np.array2string(mean.ravel()[:6], precision=4)
            lines.append(f"  {name}: {type(q).__name__}{tuple(q.batch_shape)} mean {shown}"
                         f"{' ...' if mean.size > 6 else ''}")
        return "\n".join(lines)

    def __repr__(self):
        return f"BBVIResult(elbo={self.elbo:.6g}, n_iter={self.n_iter})"
