"""Kernel hyperparameter learning shared by the GP and Markov GP blocks.

The engine (:mod:`efvi.inference._hyperparameters`) maximises the ELBO over the log
hyperparameters by L-BFGS, re-converging the sites at each trial value; at
converged sites the ELBO's gradient is that of ``log Z(theta)`` with the sites
held fixed, which the block computes.
"""

import copy

import numpy as np


class KernelHyperparameters:
    """Mixin: the hyperparameter interface of :mod:`efvi.inference._hyperparameters` for kernel-based blocks.

    The block provides ``kernel``, ``_set_kernel(kernel)`` and
    ``log_normaliser(log_params, message) -> (value, gradient)``.
    """

    def hyperparameters(self):
        """The kernel's log hyperparameters, shape (n_params,)."""
        return self.kernel.log_params

    def hyperparameter_names(self):
        """The kernel's parameter names, in the order of :meth:`hyperparameters`."""
        return tuple(self.kernel.param_names)

    def with_hyperparameters(self, log_params):
        """A new block whose kernel has the log hyperparameters ``log_params`` (this one is unchanged)."""
        kernel = self.kernel.with_log_params(np.asarray(log_params, dtype=float))
        block = copy.copy(self)
        block._set_kernel(kernel)
        return block
