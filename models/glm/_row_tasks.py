"""What one Dask task does with one block of a GLM's rows: run the in-memory GLM on them.

A Dask GLM (:mod:`efvi.models.glm.distributed`) has no site maths of its own.
Every task builds the ordinary :class:`efvi.models.glm.GLM` on its block of
rows ``X_j, y_j`` and asks it what the engine would ask the whole factor: its
expected log-density and site targets at the posterior (the likelihood's
compiled expectations, the marginals ``x_i^T m`` and ``||L^{-1} x_i||^2``),
its data-informed first sites, and the message of a set of sites
(``(X_j^T gamma_j, -X_j^T diag(pi_j) X_j / 2)``).  Those are separable over
the rows, so the sums of the blocks' answers are the whole factor's answers.

These functions run on the workers and import nothing from Dask; each returns
``(targets, partial)``: the per-point arrays that stay on the worker (or None)
and the small ``partial = (expected_log, messages)`` that is summed over the
blocks by :func:`add_partials`.
"""

import numpy as np

from ...expfam import tree_add
from ..sites import check_weights
from .factor import GLM


class RowContext:
    """What every block's task of one pass shares (shipped once per pass as one delayed object).

    Parameters
    ----------
    on : str
        Name of the weight block.
    blocks : dict
        Block name -> :class:`efvi.inference.Block` for every block the factor touches.
    q : dict or None
        Block name -> posterior (the engine's ``q``, only the blocks the factor touches).
    coarse : bool
        Whether the likelihood evaluates with its cheap first-sweep quadrature.
    """

    def __init__(self, on, blocks, q=None, coarse=False):
        self.on, self.blocks, self.q, self.coarse = on, blocks, q, coarse


def block_factor(X, y, likelihood, weights, context):
    """The in-memory GLM on one block of rows, bound to the model's blocks.

    Parameters
    ----------
    X : ndarray, shape (n_j, D)
    y : ndarray, shape (n_j,)
    likelihood : efvi.models.likelihoods.Likelihood
        The likelihood of these rows (per-point parameters already sliced).
    weights : ndarray, shape (n_j,), or None
        The rows' weights (None: all 1).
    context : RowContext

    Returns
    -------
    efvi.models.glm.GLM
    """
    factor = GLM(likelihood, X, y, on=context.on, weights=weights)
    factor.bind(context.blocks)
    return factor


def evaluate_rows(X, y, likelihood, weights, context):
    """Site targets, ``E_q[log p(y_j | a_j)]`` and the targets' messages of one block at ``context.q``."""
    factor = block_factor(X, y, likelihood, weights, context)
    result = factor.evaluate(context.q, coarse=context.coarse)
    messages = {b: factor.message(b, parts) for b, parts in result.targets.items()}
    return result.targets, (result.expected_log, messages)


def informed_rows(X, y, likelihood, weights, context):
    """The block's data-informed first sites and their messages (the factor has them: checked by the caller)."""
    factor = block_factor(X, y, likelihood, weights, context)
    sites = factor.informed_sites(context.blocks)
    return sites, (0.0, {b: factor.message(b, parts) for b, parts in sites.items()})


def message_rows(X, y, likelihood, weights, context, sites):
    """The messages of the block's stored ``sites`` (block name -> tuple of per-point arrays)."""
    factor = block_factor(X, y, likelihood, weights, context)
    return None, (0.0, {b: factor.message(b, parts) for b, parts in sites.items()})


def check_rows(X, y, likelihood, weights, start):
    """Validate one block of rows whose first row is row ``start`` of the whole data.

    Returns
    -------
    n_observed : int
        Entries of ``y`` that are not missing (NaN).
    problem : str or None
        What is wrong with the block, naming the global row, or None.
    """
    if X.shape[0] != y.shape[0]:
        return 0, (f"X has {X.shape[0]} rows but y has {y.shape[0]} entries in the block starting at row {start} "
                   "(a chunk's length differs from its stated size)")
    finite = np.isfinite(X)
    if not finite.all():
        row, column = (int(i) for i in np.argwhere(~finite)[0])
        return 0, (f"X must be finite (no NaN or inf); got {X[row, column].item()!r} at row {start + row}, column "
                   f"{column}")
    rows = f"[{start}:{start + y.shape[0]}]"
    try:
        likelihood.validate_y(y, f"y{rows}")
        if weights is not None:
            check_weights(weights, y.shape[0], f"weights{rows}")
    except ValueError as err:
        return 0, str(err)
    return int(np.count_nonzero(~np.isnan(y))), None


def pick(output, block, part):
    """Part ``part`` of block ``block``'s per-point arrays in a task's ``(targets, partial)`` output."""
    return output[0][block][part]


def partial_of(output):
    """The ``(expected_log, messages)`` of a task's output."""
    return output[1]


def add_partials(*partials):
    """Sum ``(expected_log, messages)`` over blocks: the log-densities and, block by block, the messages."""
    expected, messages = partials[0]
    messages = dict(messages)
    for other_expected, other_messages in partials[1:]:
        expected = expected + other_expected
        for b, message in other_messages.items():
            messages[b] = tree_add(messages[b], message)
    return expected, messages
