"""Kernel hyperparameter learning shared by the GP and Markov GP blocks.

With the sites held fixed, the hyperparameters maximise ``log Z(theta)``, the
log normaliser of the prior times the sites.  At a fixed point of the sites
the other ELBO terms have zero gradient with respect to the posterior
marginals, so this gradient is the ELBO's; alternating the two updates until
both have converged gives a stationary point of the ELBO in ``(q, theta)``.
A block mixing this in provides ``kernel``, ``hyper_max_iter``,
``_set_kernel(kernel)`` and ``log_normaliser(log_params, message) -> (value, grad)``.
"""

import numpy as np
from scipy.optimize import minimize


class KernelHyperparameters:
    """Mixin: ``learn_hyperparameters``, ``state`` and ``set_state`` for kernel-based blocks."""

    def learn_hyperparameters(self, message):
        """Run L-BFGS on ``-log Z(theta)`` from the current kernel; returns True if it moved."""
        start = self.kernel.log_params

        def objective(theta):
            try:
                value, gradient = self.log_normaliser(theta, message)
            except ValueError:  # includes InvalidPosterior: theta outside the sites' valid region
                return np.inf, np.zeros_like(theta)
            return -value, -np.asarray(gradient, dtype=float)

        start_value = objective(start)[0]
        result = minimize(objective, start, jac=True, method="L-BFGS-B",
                          options={"maxiter": self.hyper_max_iter})
        if not np.all(np.isfinite(result.x)) or not result.fun <= start_value:
            return False
        if np.allclose(result.x, start, rtol=0, atol=1e-10):
            return False
        self._set_kernel(self.kernel.with_log_params(result.x))
        return True

    def state(self):
        return {"log_params": self.kernel.log_params}

    def set_state(self, state):
        if "log_params" in state:
            self._set_kernel(self.kernel.with_log_params(np.asarray(state["log_params"], dtype=float)))
