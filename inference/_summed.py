"""Shared machinery of conjugate factors whose sites are per-point natural parameters.

Data point ``i`` of such a factor has a site ``s_i`` in the natural-parameter
space of each block it touches, and the block's message is the sum of the
sites, ``M = sum_i s_i`` -- or, when the block is a batch of ``G``
distributions and the factor has a ``group`` array, the per-group sums
``M_g = sum_{i: group_i = g} s_i``.  The targets do not depend on the block's
own posterior, so a step with ``rho = 1`` is the exact VMP update.
"""

import numpy as np

from ..expfam.checks import as_float

from .factor import Factor


class SummedSitesFactor(Factor):
    """Base class: per-point sites summed (per group) into a block.

    Without ``group`` a point's site has the block's full natural shape
    (batch + event) and the message is the plain sum over points; with
    ``group`` it has the event shape and is added to its group's element.
    """

    group = None

    def _set_group(self, group, n_data):
        if group is None:
            self.group = None
            return
        g = np.asarray(group)
        if g.shape != (n_data,) or not np.issubdtype(g.dtype, np.integer) or np.any(g < 0):
            raise ValueError(
                f"group must be an array of {n_data} non-negative integers (one per data point); "
                f"got {g.dtype} array of shape {g.shape}"
            )
        self.group = g

    def _check_group_block(self, role, block):
        batch = block.prior.batch_shape
        if self.group is None and batch != ():
            raise ValueError(
                f"{self.describe()}: block {block.name!r} ({role}) has batch shape {batch}; "
                "pass group=... to say which batch element each data point uses"
            )
        if self.group is not None and (len(batch) != 1 or self.group.max() >= batch[0]):
            raise ValueError(
                f"{self.describe()}: group indices must lie in range(G) for block {block.name!r} "
                f"of batch shape {batch}; got max group {self.group.max()}"
            )

    def _zero_sites(self, block):
        """Per-point zeros: the block's event shape with ``group``, its full shape without."""
        skip = len(block.prior.batch_shape) if self.group is not None else 0
        return tuple(np.zeros((self.n_data,) + np.shape(p)[skip:]) for p in block.prior.natural)

    def init_sites(self, blocks):
        return {b: self._zero_sites(blocks[b]) for b in self.block_names}

    def _summed(self, sites, index, batch_shape):
        if self.group is None:
            return tuple(np.sum(s, axis=0) for s in sites)
        groups = self.group if index is None else self.group[index]
        out = []
        for s in sites:
            acc = np.zeros(batch_shape + s.shape[1:])
            np.add.at(acc, groups, s)
            out.append(acc)
        return tuple(out)

    def message(self, block_name, sites, index=None):
        return self._summed(sites, index, self._batch_shapes[block_name])

    def bind(self, blocks):
        self._batch_shapes = {b: blocks[b].prior.batch_shape for b in self.block_names}

    def _rows(self, array, index):
        return array if index is None else array[index]

    def _gather(self, values, index):
        """Per-point values of a (possibly batched) block quantity, for the rows ``index``."""
        values = np.asarray(values)
        if self.group is None:
            return values
        return values[self._rows(self.group, index)]


def check_counts(y, name, upper=None):
    """Validate non-negative integer counts (NaN not allowed here); return float array (N,)."""
    arr = as_float(y, name, ndim_min=1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one count per data point); got shape {arr.shape}")
    if np.any(arr < 0) or np.any(arr != np.round(arr)):
        bad = arr[(arr < 0) | (arr != np.round(arr))][:5]
        raise ValueError(f"{name} must hold non-negative integers; got {bad.tolist()}")
    if upper is not None and np.any(arr > upper):
        raise ValueError(f"{name} must not exceed the number of trials; got {arr[arr > upper][:5].tolist()}")
    return arr
