"""What a ``fit(callback=...)`` hook receives each iteration."""

from dataclasses import dataclass


@dataclass(frozen=True)
class IterationInfo:
    """State after one iteration, passed to ``callback(info)``; return True to stop the fit.

    Attributes
    ----------
    iteration : int
        Iterations completed so far (1-based, counting resumed ones).
    elbo : float
        ELBO after this iteration (an estimate in stochastic fits).
    rho : float
        Smallest step size used in this iteration's block updates.
    posterior : dict
        Block name -> posterior.
    """

    iteration: int
    elbo: float
    rho: float
    posterior: dict
