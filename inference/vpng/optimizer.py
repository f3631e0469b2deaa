r"""The VPNG optimiser: RMSprop step sizes on the variational predictive natural gradient.

Each step maximises an objective (the ELBO) along the damped natural direction

.. math:: d = (F_r + \mu I)^{-1} g ,

with :math:`g` the objective's gradient, :math:`F_r` the variational
predictive Fisher (or an approximation: closed form, Monte Carlo, Gauss-Newton,
Kronecker factors) and :math:`\mu` the damping of Tang and Ranganath's step 3.
As in their experiments, RMSprop sets the step sizes:

.. math:: v \leftarrow \rho v + (1 - \rho) d^2, \qquad
          \lambda \leftarrow \lambda + \alpha \, d / (\sqrt v + \epsilon),

elementwise, :math:`v` starting at zero (PyTorch's convention, no bias
correction).  With no curvature (``fisher=None``) :math:`d = g` and the step is
plain RMSprop: the baseline of their Fig. 2.
"""

import numpy as np

from ...expfam.checks import as_float
from ..divergence import DivergenceRule
from ..ngvi._base import NonFiniteGradientError
from ._checks import check_real


class VPNG:
    r"""Gradient ascent along :math:`(F + \mu I)^{-1} g` with RMSprop step sizes.

    Parameters
    ----------
    learning_rate : float
        :math:`\alpha`, positive.
    decay : float
        :math:`\rho` in [0, 1): the decay of the squared-direction average
        (0.99 in the paper's experiments).
    damping : float
        :math:`\mu \ge 0`, added to the curvature before it is inverted.
    epsilon : float
        :math:`\epsilon > 0` in the RMSprop denominator.

    Attributes
    ----------
    square_avg_ : list of ndarray or None
        :math:`v`, one array per parameter array; ``None`` before the first step.
    n_steps_ : int

    Notes
    -----
    ``params`` and ``gradient`` are one array or a list of arrays of matching
    shapes.  ``fisher`` in :meth:`step` and :meth:`natural_direction` is

    - ``None``: no curvature (plain RMSprop);
    - an array (P, P): a dense :math:`F`, for a single parameter vector (P,);
    - an object with ``solve(gradient, damping)`` returning
      :math:`(F + \mu I)^{-1} g` in the layout of ``gradient`` (e.g.
      :class:`KroneckerFisher`).
    """

    def __init__(self, learning_rate=1e-3, *, decay=0.99, damping=1e-3, epsilon=1e-8):
        self.learning_rate = check_real(learning_rate, "learning_rate", low=0.0, expected="a positive finite float")
        self.decay = check_real(decay, "decay", low=0.0, high=1.0, low_open=False, expected="a float in [0, 1)")
        self.damping = check_real(damping, "damping", low=0.0, low_open=False, expected="a finite float >= 0")
        self.epsilon = check_real(epsilon, "epsilon", low=0.0, expected="a positive finite float")
        self.square_avg_ = None
        self.n_steps_ = 0
        self.divergence = DivergenceRule(name="the VPNG optimiser")

    def natural_direction(self, gradient, fisher=None):
        r""":math:`(F + \mu I)^{-1} g` in the layout of ``gradient`` (``g`` itself when ``fisher`` is None)."""
        single = not isinstance(gradient, (list, tuple))
        grads = [as_float(g, "gradient") for g in ([gradient] if single else gradient)]
        if fisher is None:
            out = grads
        elif hasattr(fisher, "solve"):
            out = fisher.solve(grads[0] if single else grads, self.damping)
            out = [out] if single else list(out)
        else:
            matrix = as_float(fisher, "fisher")
            if not single or grads[0].ndim != 1 or matrix.shape != (grads[0].size,) * 2:
                shape = grads[0].shape if single else [g.shape for g in grads]
                raise ValueError(f"fisher must be a (P, P) matrix for a single gradient vector (P,); got fisher "
                                 f"of shape {matrix.shape} and gradient of shape {shape}")
            out = [np.linalg.solve(matrix + self.damping * np.eye(matrix.shape[0]), grads[0])]
        return out[0] if single else out

    def step(self, params, gradient, fisher=None, loss=None):
        """One ascent step; returns the new parameters (same layout) and updates the RMSprop state.

        Parameters
        ----------
        params, gradient : ndarray or list of ndarray
        fisher : see the class notes
        loss : float, optional
            The objective's current value to minimise (e.g. the negative ELBO), watched by
            the divergence rule beside the parameters' norm.

        Raises
        ------
        efvi.inference.ngvi.NonFiniteGradientError
            When the direction or the new parameters are not finite.
        efvi.inference.DivergenceError
            When the parameters' norm (or ``loss``) grew by orders of magnitude within the
            last 100 steps (:mod:`efvi.inference.divergence`).  Either way the state is
            left as it was.
        """
        single = not isinstance(params, (list, tuple))
        params_list = [as_float(p, "params") for p in ([params] if single else params)]
        direction = self.natural_direction(gradient, fisher)
        directions = [direction] if single else direction
        if len(directions) != len(params_list) or any(d.shape != p.shape for d, p in zip(directions, params_list)):
            raise ValueError(f"gradient must match params in layout; got shapes {[d.shape for d in directions]} "
                             f"for params of shapes {[p.shape for p in params_list]}")
        averages = self.square_avg_ or [np.zeros_like(p) for p in params_list]
        new_averages, new_params = [], []
        with np.errstate(over="ignore", invalid="ignore"):          # an overflow is refused by name below
            for average, p, d in zip(averages, params_list, directions):
                new_averages.append(self.decay * average + (1.0 - self.decay) * d ** 2)
                new_params.append(p + self.learning_rate * d / (np.sqrt(new_averages[-1]) + self.epsilon))
        step = self.n_steps_ + 1
        if not all(np.all(np.isfinite(p)) for p in new_params + new_averages):
            raise NonFiniteGradientError(f"step {step}: the natural-gradient direction or the new parameters are "
                                         f"not finite; the optimiser's state was left unchanged", step)
        self.divergence(step, loss=None if loss is None else float(loss),
                        norm=float(np.sqrt(sum(np.sum(p ** 2) for p in new_params))))
        self.square_avg_, self.n_steps_ = new_averages, step
        return new_params[0] if single else new_params
