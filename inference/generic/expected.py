"""A factor given by its expected log-density as a function of mean parameters.

For an exponential-family posterior the natural gradient of ``E_q[log f]`` is
its gradient with respect to the mean parameters (Khan and Nielsen, 2018, Theorem 1), so a
factor whose expectation ``E_q[log f_i] = F_i(mu)`` can be written down
deterministically needs nothing else: the site of data point ``i`` is
``grad_mu F_i(mu)``, computed here by autograd.  Exact enumeration for discrete
blocks (:mod:`efvi.inference.generic.enumeration`) is built on this.
"""

import numpy as np
from autograd import grad, jacobian

from ..factor import FactorEval
from .._summed import SummedSitesFactor
from . import _pointwise


class ExpectedLogFactor(_pointwise.PointwiseSites, SummedSitesFactor):
    """Factor defined by ``expected_log(mean_params, *data) -> (N,)``.

    Parameters
    ----------
    expected_log : callable
        ``expected_log(mu, *data)`` returns ``E_q[log f_i]`` for every data
        point, shape (N,), where ``mu`` is the block's mean-parameter tuple
        (full batch shape).  Written with ``autograd.numpy``.  On a
        structured Gaussian block (``gp.GP``, ``lds.MarkovGP``, ``lds.LDS``)
        point ``i`` sees the block's value ``a_i``, and ``mu`` is the pair of
        per-point arrays ``(E[a_i], E[a_i^2])``, each shape (N,): the factor
        then keeps one 1-D Gaussian site per point, as ``Observe`` does.
    on : str
        Name of the block (any registered family, or a structured Gaussian block).
    data : tuple of arrays, optional
        Per-point arrays (leading dimension N) passed after ``mu``; minibatches slice them.
    n_data : int, optional
        Number of data points; inferred from ``data`` when given.
    """

    def __init__(self, expected_log, on, data=(), n_data=None):
        if not callable(expected_log):
            raise ValueError(f"expected_log must be callable; got {type(expected_log).__name__}")
        self.expected_log_fn = expected_log
        self.data = tuple(np.asarray(d) for d in data)
        self.roles = {"on": on}
        self.n_data = _infer_n_data(self.data, n_data)

    def bind(self, blocks):
        if self._bind_pointwise(blocks):
            return
        super().bind(blocks)

    def evaluate(self, q, index=None, rng=None):
        if self._pointwise:
            return self._evaluate_pointwise(q, index)
        posterior = q[self.roles["on"]]
        mean = tuple(np.asarray(m) for m in posterior.mean_params)
        data = tuple(self._rows(d, index) for d in self.data)
        shapes = [m.shape for m in mean]
        sizes = [int(np.prod(s)) for s in shapes]
        flat = np.concatenate([m.ravel() for m in mean])

        def per_point(theta):
            parts, start = [], 0
            for shape, size in zip(shapes, sizes):
                parts.append(theta[start:start + size].reshape(shape))
                start += size
            return self.expected_log_fn(tuple(parts), *data)

        values = np.asarray(per_point(flat), dtype=float)
        n_rows = self.n_data if index is None else len(index)
        if values.shape != (n_rows,):
            raise ValueError(f"expected_log must return shape ({n_rows},); got {values.shape}")
        grads = np.asarray(jacobian(per_point)(flat)).reshape(n_rows, -1)
        targets, start = [], 0
        for shape, size in zip(shapes, sizes):
            targets.append(grads[:, start:start + size].reshape((n_rows,) + shape))
            start += size
        return FactorEval(float(values.sum()), {self.roles["on"]: tuple(targets)})

    def _evaluate_pointwise(self, q, index):
        """On a structured block: ``E`` and its gradient in each point's ``(E[a_i], E[a_i^2])``."""
        m, v = _pointwise.marginals(q[self.roles["on"]], index)
        data = tuple(self._rows(d, index) for d in self.data)
        first, second = m, m * m + v
        values = np.asarray(self.expected_log_fn((first, second), *data), dtype=float)
        if values.shape != m.shape:
            raise ValueError(f"expected_log must return shape {m.shape}; got {values.shape}")

        def total(mu1, mu2):
            return self.expected_log_fn((mu1, mu2), *data).sum()

        natural_mean = np.asarray(grad(total, 0)(first, second), float)
        precision = -2.0 * np.asarray(grad(total, 1)(first, second), float)
        return FactorEval(float(values.sum()), {self.roles["on"]: (natural_mean, precision)})


def _infer_n_data(data, n_data):
    if data:
        n = len(data[0])
        for i, d in enumerate(data):
            if len(d) != n:
                raise ValueError(f"data[{i}] has {len(d)} rows; data[0] has {n}")
        if n_data is not None and n_data != n:
            raise ValueError(f"n_data={n_data} disagrees with the data's {n} rows")
        return n
    if n_data is None:
        return 1
    if int(n_data) != n_data or n_data < 1:
        raise ValueError(f"n_data must be a positive integer; got {n_data!r}")
    return int(n_data)
