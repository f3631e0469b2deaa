"""Warnings raised by the engine."""


class ConvergenceWarning(UserWarning):
    """The fit stopped at ``max_iter`` before the ELBO met the relative tolerance."""


class StepBackoffWarning(UserWarning):
    """A step had to be shortened because the full step left the valid parameter set."""
