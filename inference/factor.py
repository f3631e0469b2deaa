"""The factor protocol: what the CVI engine asks of every likelihood term.

A factor ``f_k`` touches one or more latent blocks (``roles`` maps its role
names, e.g. ``"on"`` or ``"precision"``, to block names) and holds ``n_data``
data points.  For each block ``b`` it touches, it keeps one *site* per data
point: the natural parameter of its local exponential-family approximation
(Khan and Nielsen, 2018, eqs. 18-21), stored with the data index first.  A factor may store a
site compactly (a GLM stores a 1-D Gaussian per point, not a ``D x D`` matrix),
as long as its :meth:`Factor.message` -- the sum of the sites in the block's
natural-parameter space -- is *linear* in the stored arrays, so that the
engine can interpolate sites with ``(1 - rho) s + rho g``.

At the current posterior ``q`` a factor returns a :class:`FactorEval`: its
expected log-density ``E_q[log f_k]`` (exact where possible) and, per block,
the *targets* ``g_kb = grad_{mu_b} E_q[log f_k]`` in the same per-point form
as its sites.  For a conjugate factor the targets do not depend on ``q_b``, so
one step with ``rho = 1`` is variational message passing.
"""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


@dataclass
class FactorEval:
    """A factor's evaluation at a posterior.

    Attributes
    ----------
    expected_log : float
        ``E_q[log f]`` summed over the evaluated data points (scaled by nothing).
    targets : dict
        Block name -> tuple of per-point arrays (leading dimension: the evaluated
        data points), the natural-gradient targets of the sites.
    stochastic : bool
        True when the evaluation is a Monte Carlo estimate.
    """

    expected_log: float
    targets: dict = field(default_factory=dict)
    stochastic: bool = False


def is_remote(part):
    """Whether a site array is kept outside this process: it is no numpy array and has a ``gather()`` method
    that brings its values here (the row blocks of a GLM on Dask arrays)."""
    return not isinstance(part, np.ndarray) and callable(getattr(part, "gather", None))


class Factor:
    """Base class of every factor.  Subclasses implement ``roles``-aware methods below.

    Attributes
    ----------
    roles : dict
        Role name -> block name.
    n_data : int
        Number of data points (sites per block).
    n_observed : int
        Number of data points that are observed (not missing); ``Model`` refuses a factor with none.
    stochastic : bool
        Whether :meth:`evaluate` returns Monte Carlo estimates.
    conjugate : bool
        Whether the targets never depend on the posterior of the blocks they
        are for (then one step with ``rho = 1`` is exact and acceleration is moot).
    distributed : bool
        Whether the factor's sites stay outside this process (in the row blocks of
        a Dask GLM): the engine then never gathers them (no Anderson acceleration,
        which extrapolates the whole site vector).
    parallel_coordinates : bool
        Whether a full step updates coupled coordinates of a block in parallel (a
        Jacobi sweep of mean-field equations, as for a mean-field GLM's weights):
        its slowest rate can be close to 1 and invisible in one step, so the
        stopping rule never measures the rate from a single step's gain.
    """

    roles = {}
    n_data = 1
    stochastic = False
    conjugate = False
    distributed = False
    parallel_coordinates = False

    def blas_flops(self):
        """Floating-point operations of this factor's largest single BLAS call in an iteration (default 0).

        A fit whose factors and blocks all report fewer than
        :data:`efvi.inference.blas_threads.SMALL_BLAS_FLOPS` runs BLAS on one thread.
        """
        return 0.0

    @property
    def n_observed(self):
        """Data points that are observed (default: all ``n_data``; a factor with missing values overrides it)."""
        return self.n_data

    @property
    def block_names(self):
        """Names of the blocks this factor touches, in role order, without repeats."""
        return list(dict.fromkeys(self.roles.values()))

    def bind(self, blocks):
        """Check that the blocks this factor touches have families it supports.

        Parameters
        ----------
        blocks : dict
            Block name -> :class:`efvi.inference.blocks.Block` for every block the
            factor touches.

        Raises
        ------
        ValueError
            If a family pairing is not supported, naming the factor, role,
            block and family.
        """

    def _require_family(self, blocks, role, *families):
        """Raise a named error unless the block in ``role`` has one of ``families``."""
        block = blocks[self.roles[role]]
        if block.family not in families:
            expected = " or ".join(f.__name__ for f in families)
            raise ValueError(
                f"{self.describe()}: {role}={block.name!r} must be a {expected} block; "
                f"got {block.family.__name__ if block.family else type(block).__name__} "
                "(this factor/family pairing is not supported)"
            )
        return block

    def replace_block(self, block):
        """A block to use instead of ``block`` when this factor is the only one touching it, or None (default).

        A factor that knows how the block's points see it can take over the
        conjugate computation (the GLM solves a weight block through the
        N x N Gram matrix when it has fewer rows than columns).  The model
        calls this once, when it is built, and binds the factor again.
        """
        return None

    def init_sites(self, blocks):
        """Zero sites (the fit starts at the prior): block name -> tuple of arrays with leading dimension ``n_data``."""
        raise NotImplementedError

    def informed_sites(self, blocks):
        """Data-informed first sites in the form of :meth:`init_sites`, or None (the default) to start at the prior.

        The engine starts from these, and from their messages, unless the fit
        asks for ``init="prior"``.
        """
        return None

    def restore_sites(self, sites):
        """A previous fit's sites (block name -> tuple of arrays) in the form this factor keeps them.

        Called when a fit resumes from a previous one (``fit(init=...)``), on a
        copy of its sites, which may come from a file (numpy arrays) or from a
        fit of the same model on another kind of storage.  The default gathers
        any part that lives outside this process (one with a ``gather()``
        method: the row blocks of a GLM on Dask arrays) into a numpy array; a
        factor that keeps its sites elsewhere overrides it.
        """
        return {b: tuple(part.gather() if is_remote(part) else part for part in parts) for b, parts in sites.items()}

    def evaluate(self, q, index=None, rng=None):
        """Expected log-factor and site targets at posterior ``q`` (dict name -> posterior).

        ``index`` (int array) restricts the evaluation to those data points;
        ``rng`` (``numpy.random.Generator``) drives Monte Carlo factors.  A
        factor with :attr:`has_coarse_rule` also takes ``coarse=True``.
        """
        raise NotImplementedError

    def message(self, block_name, sites, index=None):
        """The sum over data points of ``sites`` in the block's natural-parameter space.

        ``sites`` holds the rows ``index`` (all rows when ``index`` is None).
        """
        raise NotImplementedError

    def site_weights(self, block_name):
        """How much each site entry of block ``block_name`` counts in Anderson acceleration, or None (alike).

        Anderson acceleration (:mod:`efvi.inference._acceleration`) fits its
        extrapolation by least squares over the flattened sites.  A factor
        whose site ``i`` stands for ``w_i`` copies of a data point (and so holds
        ``w_i`` times a copy's parameters) returns ``1 / w_i`` for its entries
        (0 where ``w_i = 0``), shaped like the sites; the extrapolation then
        equals the one for the data with the copies written out.
        """
        return None

    def site_view(self, sites):
        """A user-facing view of this factor's sites (default: the raw dict)."""
        return SiteView(sites)

    def local_blocks(self):
        """Blocks whose batch is indexed by this factor's data points (not summed over)."""
        return ()

    has_coarse_rule = False
    """Whether :meth:`evaluate` takes ``coarse=True``: a cheaper, less accurate evaluation.

    Quadrature factors use a fixed small rule for the first sweep from the
    prior -- whose large variances would make the accurate rule expensive, and
    where accuracy buys nothing -- and their accurate rule afterwards.  Both
    modes are deterministic, so the step-size check compares like with like.
    """

    def first_step_targets(self, blocks):
        """Targets for the first step of a fit from the prior, or None (the default) for the CVI targets.

        A factor whose CVI targets at the prior are unusable (an exponential
        link under a diffuse prior, where ``E[exp(a)]`` overflows and the first
        step lands at a near-zero variance far from the optimum) returns
        data-informed targets in the form of :meth:`init_sites`; the step
        towards them is checked like any other.
        """
        return None

    def describe(self):
        """A short human-readable name for messages and summaries."""
        roles = ", ".join(f"{k}={v!r}" for k, v in self.roles.items())
        return f"{type(self).__name__}({roles})"


class SiteView:
    """Read-only access to one factor's sites: ``view[block_name]`` is a tuple of arrays.

    Each array has the data index first, so ``view[block][j][i]`` is part ``j``
    of data point ``i``'s site.
    """

    def __init__(self, sites):
        self._sites = {k: tuple(np.asarray(a) for a in v) for k, v in sites.items()}

    def __getitem__(self, block_name):
        return self._sites[block_name]

    def __iter__(self):
        return iter(self._sites)

    def keys(self):
        """Names of the blocks with sites."""
        return self._sites.keys()

    def __repr__(self):
        parts = ", ".join(f"{k}: {[a.shape for a in v]}" for k, v in self._sites.items())
        return f"{type(self).__name__}({parts})"


class GaussianSiteView(SiteView):
    """Sites that are 1-D Gaussians ``t_i(a) = exp(natural_mean_i a - precision_i a^2 / 2)``.

    ``view[block]`` gives the raw arrays like any :class:`SiteView`; the
    attributes describe the Gaussian block's sites.

    Attributes
    ----------
    block : str
        The Gaussian block the 1-D sites belong to.
    natural_mean : ndarray, shape (N,)
        ``gamma_i``.
    precision : ndarray, shape (N,)
        ``pi_i`` (zero for missing points; may be negative for non-log-concave likelihoods).
    pseudo_obs : ndarray, shape (N,)
        ``gamma_i / pi_i``, the pseudo-observation (NaN where ``pi_i = 0``).
    pseudo_noise_var : ndarray, shape (N,)
        ``1 / pi_i`` (inf where ``pi_i = 0``).
    """

    kind = "gaussian"

    def __init__(self, sites, block):
        super().__init__(sites)
        self.block = block
        self.natural_mean = np.asarray(sites[block][0])
        self.precision = np.asarray(sites[block][1])

    # the derived attributes are computed on first use: most fits never look at them
    @cached_property
    def pseudo_obs(self):
        return self._per_precision(self.natural_mean, np.nan)

    @cached_property
    def pseudo_noise_var(self):
        return self._per_precision(1.0, np.inf)

    def _per_precision(self, numerator, where_zero):
        """``numerator / precision``, and ``where_zero`` where the precision is 0 (an empty site)."""
        nonzero = self.precision != 0
        return np.where(nonzero, numerator / np.where(nonzero, self.precision, 1.0), where_zero)

    def __len__(self):
        return self.precision.shape[0]

    def __repr__(self):
        return f"GaussianSiteView(block={self.block!r}, n={len(self)})"
