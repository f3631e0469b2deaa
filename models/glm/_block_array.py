"""Per-point arrays kept in row blocks on the Dask workers: how a Dask GLM stores its sites.

The engine (:mod:`efvi.inference`) keeps every factor's sites and changes them
only by numpy arithmetic: the damped update ``s + rho (g - s)``
(:func:`efvi.expfam.tree_lerp`) and a test whether they are all zero.  A
:class:`BlockArray` answers that arithmetic block by block on the workers:
each ufunc gives a new BlockArray with the same row blocks, persisted at once,
so no task graph grows from one iteration to the next and nothing N-sized
reaches the client.  Anything that needs the values in this process
(``np.asarray``, ``np.concatenate``, ...) raises a ``TypeError`` that says
how to get them (``.array.compute()``).  Two things do ask for the values on
purpose: saving a fit gathers each site array with :meth:`BlockArray.gather`
(one array at a time, as it is written), and a fit resumed on another kind of
factor gathers them through :meth:`efvi.inference.Factor.restore_sites`.
A BlockArray is never changed in place (every operation makes a new one), so
copying a fit's state shares it (:meth:`BlockArray.copy`).
"""

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin


class BlockArray(NDArrayOperatorsMixin):
    """A persisted dask array whose first axis is data points, chunked like the rows of ``X``.

    Parameters
    ----------
    array : dask.array.Array, shape (N, ...)
        Persisted (its blocks are in the workers' memory).

    Attributes
    ----------
    array : dask.array.Array
        The values; ``array.compute()`` gathers them.
    """

    def __init__(self, array):
        self.array = array

    @property
    def shape(self):
        return self.array.shape

    @property
    def ndim(self):
        return self.array.ndim

    @property
    def size(self):
        return self.array.size

    @property
    def dtype(self):
        return self.array.dtype

    def __len__(self):
        return self.array.shape[0]

    def gather(self):
        """The values as one numpy array in this process (N-sized: for saving a fit, not for iterating).

        Returns
        -------
        ndarray, shape ``self.shape``, float64
        """
        return np.asarray(self.array.compute(), dtype=float)

    def copy(self):
        """Itself: a BlockArray is never changed in place, so a copy of a fit's state may share it."""
        return self

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # results are new arrays: an in-place update (``out=``) returns the new one, which the
        # augmented assignment (``s *= rho``) binds in place of the old
        kwargs.pop("out", None)
        if method != "__call__":
            return NotImplemented
        arguments = []
        for value in inputs:
            if isinstance(value, BlockArray):
                arguments.append(value.array)
            elif np.ndim(value) == 0:
                arguments.append(value)
            else:       # a per-point numpy array would have to travel to every block
                return NotImplemented
        return BlockArray(ufunc(*arguments, **kwargs).persist())

    def __array_function__(self, func, types, args, kwargs):
        if func is np.any and len(args) == 1 and not kwargs:
            return bool(self.array.any().compute())
        sizes = {np.ndim: self.ndim, np.shape: self.shape, np.size: self.size}
        if func in sizes and len(args) == 1 and not kwargs:
            return sizes[func]
        raise TypeError(_STAY_REMOTE.format(what=f"numpy.{func.__name__} does not apply to them"))

    def __array__(self, dtype=None, copy=None):
        raise TypeError(_STAY_REMOTE.format(what="they do not become numpy arrays in this process by accident "
                                                 "(.gather() asks for them on purpose)"))

    def __repr__(self):
        return f"BlockArray(shape={self.shape}, row chunks={len(self.array.chunks[0])})"


_STAY_REMOTE = ("the sites of a Dask GLM stay in row blocks on the Dask workers: {what}; fit.sites[k].natural_mean "
                "and .precision are dask arrays, and .compute() gathers one")
