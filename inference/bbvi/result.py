"""The result of a black-box VI fit, named as :class:`efvi.inference.FitResult` names them."""

import numpy as np

from . import _file


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
    elbo_standard_error_trace : ndarray, shape (n_iter + 1,)
        The standard error of each estimate, ``sd_s [log p(z_s) - log q(z_s)] / sqrt(S)``.
    exact_elbo_trace : ndarray, shape (n_iter + 1,), or None
        ``expected_log_joint(q) + H[q]`` at the same points, when
        ``expected_log_joint`` was given.
    grad_variance : dict
        Block name -> ndarray (n_iter,): the trace of the covariance of the
        gradient estimate each iteration stepped along (the natural gradient
        for ``step="natural"``, the gradient in the natural parameters
        otherwise), from its per-draw terms: ``sum_d Var_s(c_sd) / S``.
    converged : bool
        Whether the stopping rule held (and step halvings did not dominate).
    message : str
        Why the fit stopped, in a sentence.
    n_backoffs : int
        Halvings of steps whose proposal left the natural parameter space.
    n_halved_steps : int
        Steps with at least one halving.
    timings : dict
        ``total`` and ``per_iteration`` seconds (over every resumption).
    options : dict
        The estimator, control variate, step, ``n_samples``, whether the
        gradient was Rao-Blackwellised (the log joint was given as terms), the
        learning rate (None for a schedule), ``tol``, ``window``,
        ``vectorized`` and whether ``init`` was a single distribution.
    state : RunState
        What :func:`efvi.inference.bbvi.resume` continues from.
    """

    def __init__(self, state, options, converged, message):
        self.state = state
        self.options = dict(options)
        self.converged = bool(converged)
        self.message = str(message)

    @property
    def posterior(self):
        """dict: block name -> the final ``q``."""
        return dict(self.state.posterior)

    @property
    def elbo_trace(self):
        """ndarray, shape (n_iter + 1,): the Monte Carlo ELBO at each iterate."""
        return np.asarray(self.state.elbo, dtype=float)

    @property
    def elbo_standard_error_trace(self):
        """ndarray, shape (n_iter + 1,): the standard error of each Monte Carlo ELBO."""
        return np.asarray(self.state.elbo_se, dtype=float)

    @property
    def exact_elbo_trace(self):
        """ndarray, shape (n_iter + 1,), or None: the exact ELBO at each iterate."""
        return None if self.state.exact is None else np.asarray(self.state.exact, dtype=float)

    @property
    def grad_variance(self):
        """dict: block name -> ndarray (n_iter,), the stepped gradient's variance each iteration."""
        return {name: np.asarray(v, dtype=float) for name, v in self.state.variance.items()}

    @property
    def n_backoffs(self):
        """int: halvings of steps that left the natural parameter space."""
        return self.state.stepper.n_backoffs

    @property
    def n_halved_steps(self):
        """int: steps with at least one halving."""
        return self.state.stepper.n_halved_steps

    @property
    def timings(self):
        """dict: ``total`` and ``per_iteration`` seconds."""
        total = self.state.elapsed
        return {"total": total, "per_iteration": total / max(self.n_iter, 1)}

    @property
    def n_iter(self):
        """int: iterations run."""
        return self.state.iteration

    @property
    def grad_variance_trace(self):
        """ndarray, shape (n_iter,): :attr:`grad_variance` summed over blocks."""
        return np.sum(list(self.grad_variance.values()), axis=0) if self.grad_variance else np.zeros(0)

    @property
    def elbo(self):
        """The last exact ELBO if ``expected_log_joint`` was given, else the last Monte Carlo estimate."""
        trace = self.elbo_trace if self.exact_elbo_trace is None else self.exact_elbo_trace
        return float(trace[-1])

    def summary(self):
        """A few lines: the ELBO, iterations, convergence, estimator and each posterior's mean."""
        kind = "exact" if self.exact_elbo_trace is not None else "Monte Carlo"
        lines = [f"ELBO {self.elbo:.6f} ({kind}) after {self.n_iter} iterations "
                 f"({'converged' if self.converged else 'NOT converged'}; {self.timings['total']:.3g} s, "
                 f"{self.n_backoffs} back-offs); " + ", ".join(f"{k}={v}" for k, v in self.options.items()),
                 f"  {self.message}"]
        for name, q in self.posterior.items():
            mean = np.asarray(getattr(q, "mean", np.nan))
            shown = np.array2string(mean.ravel()[:6], precision=4)
            lines.append(f"  {name}: {type(q).__name__}{tuple(q.batch_shape)} mean {shown}"
                         f"{' ...' if mean.size > 6 else ''}")
        return "\n".join(lines)

    def __repr__(self):
        return f"BBVIResult(elbo={self.elbo:.6g}, n_iter={self.n_iter}, converged={self.converged})"

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Write the result to ``path`` atomically, as :meth:`efvi.inference.FitResult.save` writes a fit.

        One ``.npz`` file of arrays plus JSON metadata, no pickle, written to
        a temporary file beside ``path`` and renamed over it when complete.
        It holds everything :func:`efvi.inference.bbvi.resume` needs except
        code: the log joint, and the learning rate if it was a schedule.
        """
        _file.save(self, path)

    @classmethod
    def load(cls, path):
        """The result saved at ``path`` by :meth:`save`, each entry checked as a fit file's are.

        Pass it to :func:`efvi.inference.bbvi.resume` to continue the fit.
        A file that is not such a result, or has an entry that is missing,
        malformed or inconsistent with the others, raises
        :class:`efvi.inference.FitFileError` naming the file and the entry.
        """
        return _file.load(path, cls)
