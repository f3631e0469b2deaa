r"""A GLM whose rows are Dask arrays: the same fit, with the rows and their sites on the workers.

Usage is the in-memory API with dask arrays for ``X`` and ``y`` (``pip install
efvi[dask]``)::

    X = dask.array.from_zarr(...)                  # (N, D), chunked along rows only
    y = dask.array.from_zarr(...)                  # (N,), chunked like the rows of X
    model = efvi.Model({"w": efvi.Gaussian.from_mean_cov(np.zeros(D), np.eye(D))},
                       [efvi.glm.GLM(efvi.likelihoods.Bernoulli(), X, y, on="w")])
    fit = model.fit()                              # runs on the default Dask scheduler or client

:class:`efvi.models.glm.GLM` builds a :class:`DaskGLM` when ``X`` or ``y`` is a
dask array (this module registers it with the GLM when :mod:`efvi.models.glm`
is imported); Dask is imported only then.

Design: one code path for the maths
-----------------------------------
The CVI engine (:mod:`efvi.inference`) asks a factor for its expected
log-density and site targets at a posterior, for the message (the sum of sites
in the block's parameters) and for its first sites, and it updates the stored
sites by numpy arithmetic.  For a GLM all of these are sums over rows, so a
Dask GLM is the in-memory GLM applied to each block of rows plus a sum:

* a *pass* runs one task per row block (:mod:`._row_tasks`): it builds the
  in-memory :class:`~efvi.models.glm.GLM` on its rows ``X_j, y_j`` and
  evaluates it at the posterior -- marginals ``x_i^T m`` and
  ``||L^{-1} x_i||^2``, the likelihood's compiled expectations, the site
  targets ``(gamma_i, pi_i)`` -- and sums those targets into the message
  :math:`(X_j^T \gamma_j, -\tfrac12 X_j^T \operatorname{diag}(\pi_j) X_j)`,
  reading its rows once;
* the targets stay on the worker as the blocks of the new sites; the D- and
  D x D parts of the message and ``E[log p]`` are summed in a tree of tasks,
  and only that sum, ``D^2 + D + 1`` numbers, reaches the client;
* the posterior (one Cholesky of the D x D precision), the KL to the prior,
  the step, the ELBO and the convergence test are the engine's own, on the
  client; the posterior goes to the tasks of a pass as one delayed object
  (its natural parameters: each worker derives the mean and the Cholesky
  factor once);
* the stored sites are blocked arrays on the workers (``BlockArray``,
  :mod:`._block_array`): the engine's damped update ``s + rho (g - s)`` runs
  block by block where they are.

So the engine's step rule, back-off and convergence test, the likelihood's
kernels and the GLM's linear algebra are the same code as an in-memory fit, and
a Dask fit equals it to rounding (the tests check 1e-10).  A fit costs one pass
to validate the data (when the factor is built), one for the data-informed
first sites, one for the ELBO at the start, and then **one pass per
iteration**: the ELBO of a proposal is evaluated anyway, and the targets for
the next step come from the same pass.  Only a rejected proposal of the
adaptive step rule costs a pass more; from the data-informed start the full
steps of a log-concave likelihood are accepted, and ``fit(step=1.0)`` (a fixed
step that backs off, on the client, only when a step leaves the valid
parameters) never repeats a pass.  :attr:`DaskGLM.n_passes` counts them.

Each pass reads ``X`` once.  Persist ``X`` first (``X = X.persist()``) when it
fits in the workers' memory; otherwise every pass recomputes its blocks from
their source (files, or a seeded generator), and a worker holds only the
blocks it is working on.  ``y`` and the weights (8 bytes a row each) and the
sites (16 bytes a row) are persisted by the factor; a per-point likelihood
parameter given as a numpy array (an exposure for every row) goes to the
workers once, a slice per block.

Saving and resuming: ``fit.save(path)`` gathers the sites into the file one
array at a time (8 bytes a row each, one (N,) array in this process at a
time); :meth:`efvi.inference.FitResult.load` reads them back as numpy arrays, and
``fit(init=...)`` on a Dask GLM sends them to the workers once, a block each
(a Dask fit passed directly as ``init`` keeps its sites where they are).  A
fit resumes on either kind of factor: a Dask fit on the in-memory GLM and the
reverse, taking the path of an uninterrupted fit.

Restrictions: a full :class:`~efvi.expfam.Gaussian` weight block (the
mean-field start solves one system over all rows); full batch (no
``batch_size``); no Anderson acceleration (it extrapolates the whole site
vector); ``fit.sites[k]`` holds dask arrays.  The data belong to the cluster
that was running when the factor was built.
"""

import weakref

import numpy as np

from ...expfam import Gaussian
from ...inference import FactorEval, GaussianSiteView
from ..likelihoods import Likelihood
from . import _row_tasks
from ._block_array import BlockArray
from ._dask_checks import dask_rows, dask_weights
from .factor import GLM, register_distributed

SPLIT_EVERY = 8
"""Partial sums combined by one task of the tree reduction."""


@register_distributed
class DaskGLM(GLM):
    """A GLM on a Gaussian weight block whose rows are Dask arrays (see the module notes).

    Built by :class:`efvi.models.glm.GLM` when ``X`` or ``y`` is a dask array.

    Parameters
    ----------
    likelihood : efvi.models.likelihoods.Likelihood
        A per-point parameter (exposure, trial counts) may be an (N,) numpy array.
    X : dask.array.Array or array_like, shape (N, D)
        Design matrix, chunked along rows only (each chunk holds whole rows).
    y : dask.array.Array or array_like, shape (N,)
        Responses, chunked like the rows of ``X``; NaN marks a missing one.
        A numpy ``X`` or ``y`` is split like the other.
    on : str
        Name of the Gaussian block of weights, dimension D.
    weights : dask.array.Array or array_like, shape (N,), optional
        Non-negative weight of each row's log-likelihood (as for
        :class:`efvi.models.glm.GLM`), chunked like the rows of ``X`` (a numpy
        array is split so).

    Attributes
    ----------
    X, y : dask.array.Array
        The rows (``y`` persisted on the workers).
    weights : dask.array.Array or None
        The rows' weights (persisted on the workers).
    row_chunks : tuple of int
        Rows per block.
    n_passes : int
        Passes over the row blocks so far (validation included).

    Raises
    ------
    ValueError
        Naming the argument and what is wrong: wrong dimensions, columns split
        into several chunks, rows of ``X`` and ``y`` chunked differently,
        unknown chunk sizes; a non-finite entry of ``X`` or an observation
        outside the likelihood's support, naming its row.
    """

    distributed = True

    def __init__(self, likelihood, X, y, on="w", weights=None):
        import dask

        if not isinstance(likelihood, Likelihood):
            raise ValueError(
                f"likelihood must be a efvi.models.likelihoods.Likelihood; got {type(likelihood).__name__}"
            )
        self.likelihood = likelihood
        self.X, y = dask_rows(X, y)
        weights = dask_weights(weights, self.X)
        self.n_data, dim = self.X.shape
        self.row_chunks = tuple(int(n) for n in self.X.chunks[0])
        self.n_passes = 0
        self.roles = {"on": on}
        for role, (block, _) in likelihood.latent_parameters.items():
            self.roles[role] = block
        starts = np.concatenate([[0], np.cumsum(self.row_chunks)[:-1]]).astype(int)
        likelihoods = _row_likelihoods(likelihood, self.n_data, starts, self.row_chunks)
        # the in-memory GLM on one missing row: the checks of bind, the layout of the sites
        self._template = GLM(likelihoods[0].subset(slice(0, 1)), np.zeros((1, dim)), np.array([np.nan]), on=on)
        shared = {id(lik): dask.delayed(lik, pure=False) for lik in likelihoods}
        self._likelihoods = [shared[id(lik)] for lik in likelihoods]
        X_blocks, y_blocks = self.X.to_delayed().ravel(), y.to_delayed().ravel()
        w_blocks = [None] * len(starts) if weights is None else weights.to_delayed().ravel()
        checks = [dask.delayed(_row_tasks.check_rows, pure=False)(X_j, y_j, lik_j, w_j, int(start))
                  for X_j, y_j, lik_j, w_j, start in zip(X_blocks, y_blocks, self._likelihoods, w_blocks, starts)]
        # y, the weights, the likelihoods and the checks in one graph: a y computed from X reads X once
        self.y, self.weights, *persisted = dask.persist(y, weights, *self._likelihoods, *checks)
        self._likelihoods = persisted[:len(likelihoods)]
        reports = dask.compute(*persisted[len(likelihoods):])
        self.n_passes += 1
        for j, (_, problem) in enumerate(reports):
            if problem is not None:
                raise ValueError(f"{problem} (block {j} of {len(reports)}: rows {starts[j]} to "
                                 f"{starts[j] + self.row_chunks[j] - 1})")
        self._n_observed = sum(n for n, _ in reports)
        self.all_observed = self._n_observed == self.n_data
        self._X_blocks, self._y_blocks = X_blocks, self.y.to_delayed().ravel()
        self._w_blocks = [None] * len(starts) if weights is None else self.weights.to_delayed().ravel()
        self._blocks = None
        self._remembered = None

    # ------------------------------------------------------------------ the factor protocol
    @property
    def n_observed(self):
        """Data points whose ``y`` is not NaN (counted when the factor was built)."""
        return self._n_observed

    def bind(self, blocks):
        """The in-memory GLM's checks of the blocks, and a full Gaussian weight block.

        Raises
        ------
        ValueError
            As :class:`efvi.models.glm.GLM`, or if the weight block is not a full Gaussian.
        """
        self._template.bind(blocks)
        weights = blocks[self.roles["on"]]
        if weights.family is not Gaussian:
            raise ValueError(
                f"{self.describe()}: on={weights.name!r} must be a full Gaussian block for a GLM on dask "
                f"arrays; got {weights.family.__name__} (a mean-field start solves one system over all rows)"
            )
        self._blocks = dict(blocks)
        self._site_layout = _layout(self._template.init_sites(blocks))

    def replace_block(self, block):
        """None: the rows stay on the workers (no N x N dual route)."""
        return None

    def init_sites(self, blocks):
        """Zero sites in the in-memory GLM's form, as blocked arrays on the workers."""
        import dask.array as da

        return {b: tuple(BlockArray(da.zeros((self.n_data,) + shape, chunks=self._chunks(shape)).persist())
                         for shape in shapes)
                for b, shapes in _layout(self._template.init_sites(blocks)).items()}

    def informed_sites(self, blocks):
        """The in-memory GLM's data-informed first sites of every row block (None if it has none)."""
        first = self._template.informed_sites(blocks)
        if first is None:
            return None
        sites, _, _ = self._pass(_row_tasks.informed_rows, _row_tasks.RowContext(self.roles["on"], blocks),
                                 _layout(first))
        return sites

    def restore_sites(self, sites):
        """A previous fit's sites as blocked arrays on the workers, chunked like the rows.

        Sites read from a file or taken from an in-memory fit (numpy arrays)
        go to the workers once, a block each; those of a Dask fit stay where
        they are (rechunked if its rows were split differently).
        """
        import dask.array as da

        restored = {}
        for b, parts in sites.items():
            kept = []
            for part in parts:
                chunks = self._chunks(part.shape[1:])
                if isinstance(part, BlockArray):
                    kept.append(part if part.array.chunks == chunks else BlockArray(part.array.rechunk(chunks).persist()))
                else:
                    kept.append(BlockArray(da.from_array(np.asarray(part, dtype=float), chunks=chunks).persist()))
            restored[b] = tuple(kept)
        return restored

    def evaluate(self, q, index=None, rng=None, coarse=False):
        """One pass: ``E_q[log p]`` summed over the rows, and the site targets left on the workers."""
        self._check_full_batch(index)
        context = _row_tasks.RowContext(self.roles["on"], self._blocks, {b: q[b] for b in self.block_names}, coarse)
        targets, expected, _ = self._pass(_row_tasks.evaluate_rows, context, self._site_layout)
        return FactorEval(float(expected), targets)

    def message(self, block_name, sites, index=None):
        """The sum of ``sites`` in the block's parameters: kept from the pass that made them, else one pass."""
        self._check_full_batch(index)
        remembered = self._recall(block_name, sites)
        if remembered is not None:
            return remembered
        per_block = zip(*(part.array.to_delayed().ravel() for part in sites))
        _, _, messages = self._pass(_row_tasks.message_rows, _row_tasks.RowContext(self.roles["on"], self._blocks),
                                    extra=[{block_name: tuple(parts)} for parts in per_block])
        return messages[block_name]

    def site_view(self, sites):
        """The sites as dask arrays (:class:`DaskSiteView`)."""
        return DaskSiteView(sites, self.roles["on"])

    # ------------------------------------------------------------------ passes over the row blocks
    def _pass(self, task, context, layout=None, extra=None):
        """Run ``task`` on every row block; returns (per-point BlockArrays or None, E[log p], messages).

        The per-point outputs are persisted where they were computed; the partial
        sums are added in a tree of tasks and only their total comes back.
        """
        import dask
        import dask.array as da

        shared = dask.delayed(context, pure=False)
        extra = [()] * len(self.row_chunks) if extra is None else [(e,) for e in extra]
        outputs = [dask.delayed(task, pure=False)(X_j, y_j, lik_j, w_j, shared, *more)
                   for X_j, y_j, lik_j, w_j, more in zip(self._X_blocks, self._y_blocks, self._likelihoods,
                                                         self._w_blocks, extra)]
        arrays = [(b, [da.concatenate([da.from_delayed(dask.delayed(_row_tasks.pick)(out, b, p),
                                                       shape=(n,) + shape, dtype=float)
                                       for out, n in zip(outputs, self.row_chunks)])
                       for p, shape in enumerate(shapes)])
                  for b, shapes in (layout or {}).items()]
        total = _tree_sum([dask.delayed(_row_tasks.partial_of)(out) for out in outputs])
        *persisted, total = dask.persist(*(a for _, parts in arrays for a in parts), total)
        expected, messages = total.compute()
        self.n_passes += 1
        sites, start = {}, 0
        for b, parts in arrays:
            sites[b] = tuple(BlockArray(a) for a in persisted[start:start + len(parts)])
            start += len(parts)
        if layout is not None:
            self._remember(sites, messages)
        return (sites if layout is not None else None), expected, messages

    def _remember(self, sites, messages):
        """Keep the messages of the per-point arrays a pass made (weakly: the engine decides what lives)."""
        self._remembered = ({b: tuple(weakref.ref(part) for part in parts) for b, parts in sites.items()}, messages)

    def _recall(self, block_name, sites):
        """The message of ``sites`` if a pass computed it with them, else None."""
        if self._remembered is None:
            return None
        refs, messages = self._remembered
        kept = refs.get(block_name)
        if kept is None or len(kept) != len(sites) or any(ref() is not part for ref, part in zip(kept, sites)):
            return None
        return messages[block_name]

    def _chunks(self, shape):
        return (self.row_chunks,) + tuple((n,) for n in shape)

    def _check_full_batch(self, index):
        if index is not None:
            raise ValueError(f"{self.describe()}: a GLM on dask arrays fits in full batch; got minibatches "
                             "(use batch_size=None)")


class DaskSiteView(GaussianSiteView):
    """The Gaussian sites of a Dask GLM as dask arrays chunked like the rows (persisted on the workers).

    ``natural_mean``, ``precision``, ``pseudo_obs`` and ``pseudo_noise_var``
    are dask arrays of shape (N,); ``.compute()`` gathers one.
    """

    def __init__(self, sites, block):
        self._sites = {b: tuple(part.array for part in parts) for b, parts in sites.items()}
        self.block = block
        self.natural_mean, self.precision = self._sites[block][:2]

    def __repr__(self):
        return f"DaskSiteView(block={self.block!r}, n={len(self)}, row chunks={len(self.precision.chunks[0])})"


def _layout(sites):
    """Block name -> the shape of one point's part, for each part of the per-point ``sites``."""
    return {b: [np.shape(part)[1:] for part in parts] for b, parts in sites.items()}


def _tree_sum(partials):
    """The sum of the blocks' ``(expected_log, messages)``, added in a tree of tasks."""
    import dask

    while len(partials) > 1:
        partials = [dask.delayed(_row_tasks.add_partials, pure=False)(*partials[i:i + SPLIT_EVERY])
                    for i in range(0, len(partials), SPLIT_EVERY)]
    return partials[0]


def _row_likelihoods(likelihood, n_data, starts, lengths):
    """The likelihood of every row block: itself, or its per-point parameter sliced to the block."""
    name = likelihood.per_point_name
    value = None if name is None else getattr(likelihood, name)
    if value is None or np.ndim(value) == 0:
        return [likelihood] * len(starts)
    if np.shape(value)[0] != n_data:
        raise ValueError(f"{name} has {np.shape(value)[0]} entries but X has {n_data} rows")
    return [likelihood.subset(slice(int(s), int(s + n))) for s, n in zip(starts, lengths)]


__all__ = ["DaskGLM", "DaskSiteView"]
