"""Joint posterior draws of a structured block's latent function at its own inputs and at new ones.

A structured posterior (dense GP, sparse GP, Markov GP, LDS) is a Gaussian over
the latent function at the block's points; :class:`JointDraws` gives it
``sample(rng, n)`` (the family interface that ``efvi.to_inference_data`` reads)
and ``sample_joint(rng, n, inputs)`` from one method ``_draws(rng, n,
inputs)``.  A GP's draws come from its full predictive covariance over the
stacked inputs (:func:`stacked_gaussian_draws`); a state-space block's from
forward filtering, backward sampling (:mod:`efvi.models.lds.sampling`).
"""

import numpy as np

from ..inference.result import gaussian_draws

from .gp.kernels._validation import as_inputs


class JointDraws:
    """Mixin of structured posteriors: :meth:`sample` and :meth:`sample_joint` from ``_draws(rng, n, inputs)``."""

    def sample(self, rng, n):
        """Joint posterior draws of the latent function at the block's own inputs (or time steps).

        Parameters
        ----------
        rng : numpy.random.Generator
        n : int
            Number of draws.

        Returns
        -------
        ndarray, shape (n, N)
        """
        return self._draws(_check_rng(rng), int(n), None)

    def sample_joint(self, rng, n, inputs):
        """Joint posterior draws at the block's own inputs and at new ones, drawn together.

        Parameters
        ----------
        rng : numpy.random.Generator
        n : int
            Number of draws.
        inputs : array_like
            New inputs, as ``predict`` takes them: rows ``X_new`` (M, D) or
            (M,) for a GP, times (M,) for a Markov GP, time steps for an LDS.

        Returns
        -------
        own : ndarray, shape (n, N)
            Draws at the block's own points.
        new : ndarray, shape (n, M)
            The same draws at ``inputs``.
        """
        return self._draws(_check_rng(rng), int(n), inputs)


def _check_rng(rng):
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    return rng


def stacked_gaussian_draws(posterior, own_inputs, rng, n, inputs):
    """Draws of a GP posterior's Gaussian over ``[own_inputs; inputs]`` (``O((N + M)^2)`` memory, ``O((N + M)^3)``).

    Parameters
    ----------
    posterior : GPPosterior or SparseGPPosterior
        Anything with ``predict(X, full_cov=True) -> (mean, cov)``.
    own_inputs : ndarray, shape (N, D)
    rng : numpy.random.Generator
    n : int
    inputs : array_like, shape (M, D) or (M,), or None

    Returns
    -------
    ndarray, shape (n, N)
        Without ``inputs``; with them, the pair ``(own (n, N), new (n, M))``.
    """
    stacked = own_inputs
    if inputs is not None:
        stacked = np.vstack([own_inputs, as_inputs(inputs, "inputs", own_inputs.shape[1])])
    draws = gaussian_draws(*posterior.predict(stacked, full_cov=True), n, rng)
    if inputs is None:
        return draws
    return draws[:, : own_inputs.shape[0]], draws[:, own_inputs.shape[0]:]
