r"""Kronecker-factored :math:`F_{r'}` for networks of dense layers (block-diagonal K-FAC).

For a dense layer with input :math:`a` (with a trailing 1 for the bias) and
pre-activation :math:`s = W^\top a`, the score of :math:`\log r'(x')` with
respect to :math:`W` is :math:`a \, \delta^\top`, :math:`\delta = \partial
\log r' / \partial s` backpropagated from a draw :math:`x' \sim r'` (not from
the data: that would be the empirical Fisher).  Martens and Grosse (2015)
approximate the layer's block of :math:`F_{r'}` by

.. math:: F_W \approx G \otimes A, \qquad A = \mathbb E[a a^\top], \quad
          G = \mathbb E[\delta \delta^\top],

and ignore the blocks between layers (Tang and Ranganath keep the
neighbouring blocks: the tridiagonal variant; this module is the
block-diagonal one).  The damped inverse uses factored Tikhonov damping,

.. math:: (F_W + \mu I)^{-1} \operatorname{vec}(\nabla_W) \approx
          \operatorname{vec}\big((A + \pi \sqrt\mu I)^{-1} \nabla_W
          (G + \sqrt\mu / \pi \, I)^{-1}\big), \qquad
          \pi = \sqrt{\frac{\operatorname{tr} A / \dim A}{\operatorname{tr} G / \dim G}} .

With ``rank`` set, a factor larger than ``rank`` keeps only its top
``rank`` eigenpairs :math:`U \Lambda U^\top` (the seed's low-rank
approximation of large matrices), and its damped inverse is applied as
:math:`\gamma^{-1}\big(M - U \operatorname{diag}(\lambda / (\lambda + \gamma))
U^\top M\big)`: a cost linear, not quadratic, in the layer width.

A VAE is one such network with a stochastic layer in the middle
(:math:`z = \mu + \sigma \odot \varepsilon`): backpropagate the score of
:math:`\log p(x' \mid z)` through the decoder, the reparameterisation and the
encoder, and hand each layer's inputs and :math:`\delta` to :meth:`update`.
"""

import numpy as np

from ...expfam.checks import as_float, check_integer
from ._checks import check_real


class KroneckerFisher:
    r"""Running Kronecker factors :math:`(A_l, G_l)` of dense layers, and the damped solve.

    Parameters
    ----------
    decay : float
        Exponential moving average of the factors, in [0, 1) (0: only the
        latest batch).
    inverse_every : int
        Recompute the damped inverses every this many :meth:`update` calls
        (and when the damping changes).
    rank : int or None
        Keep only the top ``rank`` eigenpairs of factors larger than that
        (None: exact factors).

    Notes
    -----
    Parameters and gradients are a flat list ``[W_1, b_1, W_2, b_2, ...]``
    with ``W_l`` (d_in, d_out) and ``b_l`` (d_out,), the layer order of
    :meth:`update`.
    """

    def __init__(self, decay=0.95, inverse_every=20, rank=None):
        self.decay = check_real(decay, "decay", low=0.0, high=1.0, low_open=False, expected="a float in [0, 1)")
        self.inverse_every = check_integer(inverse_every, "inverse_every", minimum=1)
        self.rank = None if rank is None else check_integer(rank, "rank", minimum=1, suffix=" or None")
        self.factors_ = None
        self.n_updates_ = 0
        self._inverses, self._inverse_damping = None, None

    def update(self, inputs, output_grads):
        """Fold in one batch: per layer, inputs ``a`` (B, d_in) and backpropagated scores ``delta`` (B, d_out)."""
        if len(inputs) != len(output_grads) or not inputs:
            raise ValueError(f"inputs and output_grads must be lists of equal, non-zero length (one per layer); "
                             f"got {len(inputs)} and {len(output_grads)}")
        batch = []
        for a, delta in zip(inputs, output_grads):
            a, delta = as_float(a, "inputs"), as_float(delta, "output_grads")
            if a.ndim != 2 or delta.ndim != 2 or a.shape[0] != delta.shape[0]:
                raise ValueError(f"each layer's inputs must be (B, d_in) and output_grads (B, d_out); "
                                 f"got {a.shape} and {delta.shape}")
            a1 = np.hstack([a, np.ones((a.shape[0], 1))])
            batch.append((a1.T @ a1 / a.shape[0], delta.T @ delta / a.shape[0]))
        if self.factors_ is None:
            self.factors_ = batch
        else:
            if [f[0].shape + f[1].shape for f in batch] != [f[0].shape + f[1].shape for f in self.factors_]:
                raise ValueError("inputs and output_grads must keep their layer shapes from update to update")
            self.factors_ = [(self.decay * A + (1 - self.decay) * A_new, self.decay * G + (1 - self.decay) * G_new)
                             for (A, G), (A_new, G_new) in zip(self.factors_, batch)]
        if self.n_updates_ % self.inverse_every == 0:
            self._inverses = None
        self.n_updates_ += 1

    def _inverse(self, factor, shift):
        """The damped inverse of one factor: a dense matrix, or (U, lambda / (lambda + shift), shift)."""
        if self.rank is None or factor.shape[0] <= self.rank:
            return np.linalg.inv(factor + shift * np.eye(factor.shape[0]))
        values, vectors = np.linalg.eigh(factor)
        values, vectors = np.maximum(values[-self.rank:], 0.0), vectors[:, -self.rank:]
        return vectors, values / (values + shift), shift

    def _damped_inverses(self, damping):
        if self._inverses is None or damping != self._inverse_damping:
            self._inverses, self._inverse_damping = [], damping
            root = np.sqrt(damping)
            for A, G in self.factors_:
                pi = np.sqrt((np.trace(A) / A.shape[0]) / max(np.trace(G) / G.shape[0], 1e-300))
                self._inverses.append((self._inverse(A, pi * root), self._inverse(G, root / pi)))
        return self._inverses

    def solve(self, gradient, damping):
        r""":math:`(F + \mu I)^{-1} g` layer by layer; ``gradient`` a list ``[W_1, b_1, ...]``; ``damping`` > 0."""
        if self.factors_ is None:
            raise ValueError("KroneckerFisher.solve needs factors: call update(inputs, output_grads) first")
        if not damping > 0:
            raise ValueError(f"damping must be > 0 for Kronecker factors (they can be singular); got {damping!r}")
        if not isinstance(gradient, (list, tuple)) or len(gradient) != 2 * len(self.factors_):
            raise ValueError(f"gradient must be a list [W_1, b_1, ...] of {2 * len(self.factors_)} arrays; "
                             f"got {type(gradient).__name__} of length {len(gradient) if hasattr(gradient, '__len__') else '?'}")
        out = []
        for (A_inv, G_inv), W, b in zip(self._damped_inverses(damping), gradient[::2], gradient[1::2]):
            stacked = _right(_left(A_inv, np.vstack([W, b[None, :]])), G_inv)
            out += [stacked[:-1], stacked[-1]]
        return out


def _left(inverse, matrix):
    if isinstance(inverse, np.ndarray):
        return inverse @ matrix
    vectors, shrink, shift = inverse
    return (matrix - vectors @ (shrink[:, None] * (vectors.T @ matrix))) / shift


def _right(matrix, inverse):
    if isinstance(inverse, np.ndarray):
        return matrix @ inverse
    vectors, shrink, shift = inverse
    return (matrix - ((matrix @ vectors) * shrink) @ vectors.T) / shift
