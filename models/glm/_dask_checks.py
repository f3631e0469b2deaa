"""Checks of the rows a GLM on Dask arrays is given: dask arrays of numbers, chunked along the rows only,
``y`` and the weights chunked like the rows of ``X``, known chunk sizes.  Each failure is a ValueError
that names the argument, what is required and what was given (:mod:`efvi.models.glm.distributed`)."""

import numpy as np

from ...expfam.checks import as_float


def dask_rows(X, y):
    """``X`` and ``y`` as dask arrays with the same row chunks and one column chunk, after checking them."""
    import dask.array as da

    for name, value in (("X", X), ("y", y)):
        if hasattr(value, "__dask_graph__") and not isinstance(value, da.Array):
            raise ValueError(f"{name} must be a dask array or a numpy array; got {type(value).__name__} "
                             "(a dask DataFrame converts with .to_dask_array(lengths=True))")
    if not isinstance(X, da.Array):       # split like y (when the shapes agree; the checks below say if not)
        X = as_float(X, "X", ndim_min=2)
        rows = y.chunks[0] if y.ndim == 1 and y.shape[0] == X.shape[0] else -1
        X = da.from_array(X, chunks=(rows,) + (-1,) * (X.ndim - 1))
    _check_dtype(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must have shape (N, D); got {X.shape}")
    if X.shape[1] == 0:
        raise ValueError(f"X must have at least one column (D >= 1, one per weight); got shape {X.shape}")
    if any(np.isnan(n) for n in X.chunks[0]):
        raise ValueError("X must have known chunk sizes along its rows; got unknown ones (call "
                         "X.compute_chunk_sizes(), or build X with lengths=True)")
    if len(X.chunks[1]) != 1:
        raise ValueError(f"X must be chunked along rows only (every chunk holds whole rows, all {X.shape[1]} "
                         f"columns); got column chunks {_describe_chunks(X.chunks[1])}: use X.rechunk({{1: -1}})")
    if not isinstance(y, da.Array):       # split like the rows of X
        y = as_float(y, "y", finite=False)
        y = da.from_array(y, chunks=(X.chunks[0],) if y.ndim == 1 and y.shape[0] == X.shape[0] else -1)
    _check_dtype(y, "y")
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional; got shape {y.shape}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have one entry per row of X ({X.shape[0]}); got {y.shape[0]}")
    if y.chunks[0] != X.chunks[0]:
        raise ValueError(f"y must be chunked like the rows of X, block for block: X's row chunks are "
                         f"{_describe_chunks(X.chunks[0])}, y's are {_describe_chunks(y.chunks[0])}; "
                         "rechunk one to match, e.g. y = y.rechunk(X.chunks[0])")
    return X, y


def dask_weights(weights, X):
    """The rows' weights as a dask array chunked like the rows of ``X`` (their values are checked per block)."""
    import dask.array as da

    if weights is None:
        return None
    if not isinstance(weights, da.Array):
        weights = as_float(weights, "weights", finite=False)
        split = weights.ndim == 1 and weights.shape[0] == X.shape[0]
        weights = da.from_array(weights, chunks=(X.chunks[0],) if split else -1)
    _check_dtype(weights, "weights")
    if weights.shape != (X.shape[0],):
        raise ValueError(f"weights must have shape ({X.shape[0]},), one per row of X; got shape {weights.shape}")
    if weights.chunks[0] != X.chunks[0]:
        raise ValueError(f"weights must be chunked like the rows of X: X's row chunks are "
                         f"{_describe_chunks(X.chunks[0])}, the weights' are {_describe_chunks(weights.chunks[0])}; "
                         "rechunk them, e.g. weights = weights.rechunk(X.chunks[0])")
    return weights


def _check_dtype(array, name):
    if np.issubdtype(array.dtype, np.complexfloating):
        raise ValueError(f"{name} must be real; got a complex dask array of dtype {array.dtype}")
    if not (np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.bool_)):
        raise ValueError(f"{name} must be numeric; got a dask array of dtype {array.dtype}")


def _describe_chunks(chunks):
    """``(1000, 1000, 500)``, or the first and last few of many chunks with their number."""
    chunks = tuple(int(n) if not np.isnan(n) else n for n in chunks)
    if len(chunks) <= 6:
        return str(chunks)
    return f"({', '.join(map(str, chunks[:3]))}, ..., {', '.join(map(str, chunks[-2:]))}) ({len(chunks)} chunks)"
