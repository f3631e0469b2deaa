"""Latent blocks: a prior and the rule that turns summed site messages into a posterior.

A block ``z_b`` has a prior ``p_b`` and a posterior ``q_b`` of the same family
(mean field across blocks).  Every factor touching the block sends it a
*message*, the sum of its sites in the block's natural-parameter space, and

.. math:: \\lambda_b = \\eta_b + \\sum_k M_{kb}, \\qquad M_{kb} = \\sum_i \\tilde\\lambda_{kb}^{(i)}

(Khan and Nielsen, 2018, eq. 21).  For a plain exponential-family block the posterior is
``family.from_natural(lambda_b)``.  Structured Gaussian priors (GP, state
space; ``models/``) subclass :class:`Block` and replace the sum by their
conjugate computation; their messages are per-point 1-D Gaussian sites.

Every block also provides ``kl(q)``, the ``KL(q || p)`` term of the ELBO.
"""

import copy

import numpy as np

from .. import expfam
from ..expfam import ExponentialFamily


class InvalidPosterior(ValueError):
    """Raised when summed sites leave the natural parameter space (e.g. a non-PD precision).

    The engine catches it and backs off the step size; it never accepts such a
    posterior.
    """


class Block:
    """Protocol of a latent block.  Subclasses implement every method.

    Attributes
    ----------
    name : str
        The block's name in the model.
    family : type
        The posterior's family class (``efvi.expfam.Gaussian`` for structured Gaussian blocks).
    """

    name = None
    family = None
    learns_hyperparameters = False

    def zero_message(self):
        """A message that contributes nothing: a tuple of zero arrays."""
        raise NotImplementedError

    def posterior(self, message):
        """The posterior given the summed message; raises :class:`InvalidPosterior`."""
        raise NotImplementedError

    def kl(self, q):
        """``KL(q || prior)``, a float summed over the block's batch."""
        raise NotImplementedError

    def divergence(self, q, other):
        """The Jeffreys divergence ``KL(q || other) + KL(other || q)`` of two posteriors of this block.

        Both are the prior times sites, so it is the inner product of the
        differences of their natural and of their mean parameters; the engine
        uses it to ask how far a full step would move the posterior.
        """
        raise NotImplementedError

    def blas_flops(self):
        """Floating-point operations of this block's largest single BLAS call in an iteration (default 0).

        A structured prior whose posterior solves large dense systems (a GP's
        ``N x N`` Cholesky factorisation) says so, and its fit keeps BLAS's threads.
        """
        return 0.0

    def hyperparameters(self):
        """Learnable hyperparameters as a vector (structured priors with ``learns_hyperparameters``)."""
        return np.zeros(0)

    def with_hyperparameters(self, theta):
        """A new block with hyperparameters ``theta`` (this one is not changed)."""
        raise NotImplementedError(f"{type(self).__name__} has no hyperparameters to learn")

    def log_normaliser(self, theta, message):
        """``log Z(theta)`` of the prior times the fixed ``message``, and its gradient in ``theta``."""
        raise NotImplementedError(f"{type(self).__name__} has no hyperparameters to learn")

    def hyperparameter_names(self):
        """Names of the entries of :meth:`hyperparameters` (a result reports them by name)."""
        return ()

    def hyperparameter_log_scale(self):
        """Which entries of :meth:`hyperparameters` are logs of positive parameters, shape (n,) of bool.

        A result reports those as ``exp(theta)`` and the others as they are.
        By default every entry is a log (kernel lengthscales and variances);
        a block that learns unconstrained values (a sparse GP's inducing
        inputs) marks them False.
        """
        return np.ones(len(self.hyperparameter_names()), dtype=bool)


def hyperparameter_values(theta, log_scale):
    """The reported values of learned hyperparameters: ``exp(theta)`` where ``log_scale``, else ``theta``.

    Parameters
    ----------
    theta : ndarray, shape (n,)
    log_scale : sequence of bool, length n

    Returns
    -------
    list of float
    """
    return [float(np.exp(value)) if log else float(value) for value, log in zip(theta, log_scale)]


class ExpFamBlock(Block):
    """A block whose prior is an exponential-family object (any registered family).

    Parameters
    ----------
    name : str
    prior : efvi.expfam.ExponentialFamily
        The prior, possibly batched (e.g. ``Gamma`` with batch shape ``(K,)``).
    """

    def __init__(self, name, prior):
        if not isinstance(prior, ExponentialFamily):
            raise ValueError(
                f"latents[{name!r}] must be an expfam distribution or a structured prior; "
                f"got {type(prior).__name__}"
            )
        self.name = name
        self.prior = prior
        self.family = type(prior)

    def zero_message(self):
        return tuple(np.zeros_like(p) for p in self.prior.natural)

    def posterior(self, message):
        natural = expfam.tree_add(self.prior.natural, message)
        if not all(np.isfinite(p).all() for p in natural):
            raise InvalidPosterior(f"block {self.name!r}: natural parameters are not finite")
        posterior = self.family.from_valid_natural(natural)
        if posterior is None:
            raise InvalidPosterior(
                f"block {self.name!r}: natural parameters left the valid set of "
                f"{self.family.__name__}"
            )
        return posterior

    def kl(self, q):
        if all(np.array_equal(a, b) for a, b in zip(q.natural, self.prior.natural)):
            return 0.0          # q is the prior (a fit's start): exactly 0, without the KL's arithmetic
        return float(np.sum(q.kl(self.prior, validate=False)))     # q was built from this prior

    def divergence(self, q, other):
        natural = expfam.tree_sub(other.natural, q.natural)
        mean = expfam.tree_sub(other.mean_params, q.mean_params)
        return float(np.sum(self.family.inner(natural, mean)))


def as_block(name, prior):
    """Wrap a user's prior as a :class:`Block` named ``name``; a structured prior is copied, never changed."""
    if isinstance(prior, Block):
        block = copy.copy(prior)
        block.name = name
        return block
    return ExpFamBlock(name, prior)
