"""VOGN: variational online Gauss-Newton (Khan et al., 2018).

The diagonal form of the natural-gradient step of Khan and Nielsen (2018),
eqs. 16-17, with the expected Hessian replaced by a Gauss-Newton
approximation evaluated at a weight sample:

.. math::
    h &\\leftarrow \\beta_2 h + (1 - \\beta_2) \\hat h,\\qquad
        \\hat h = \\tfrac{1}{B} \\textstyle\\sum_{n \\in \\mathcal{B}} g_n^2
        \\ \\text{(or the Gauss-Newton diagonal)} \\\\
    \\bar g &\\leftarrow \\beta_1 \\bar g + (1 - \\beta_1) (\\hat g + \\delta (m - m_0)) \\\\
    m &\\leftarrow m - \\alpha \\, \\frac{\\bar g / (1 - \\beta_1^t)}{h + \\delta},
    \\qquad \\sigma^2 = 1 / (\\lambda (h + \\delta)).

Khan et al. (2018) use per-example squared gradients (``curvature="squared_gradients"``);
``"gauss_newton"`` is the generalised Gauss-Newton diagonal (equal to the
expected Hessian for canonical-link GLMs), ``"hessian"`` the diagonal of the
exact Hessian (one model call per sample: for small models and tests).
With ``betas=(0, 1 - lr)``, exact curvature and a full batch one step is the
mean-field CVI step.  A curvature that would make a precision non-positive
(``"hessian"`` of a non-log-concave likelihood) is handled by the
positivity-preserving rule of Lin et al. (2020) on those coordinates.
"""

import numpy as np

from ._base import DiagonalOptimizer, as_vector, check_betas
from . import _state_rules as rules
from ._kernels import vogn_update

_CURVATURES = ("squared_gradients", "gauss_newton", "hessian")


class VOGN(DiagonalOptimizer):
    """Variational online Gauss-Newton (Khan et al., 2018).

    Parameters
    ----------
    model : object following the ngvi model protocol
    n_data : int
    prior_precision : float or ndarray (P,)
    lr : float
        Step of the mean.
    betas : (float, float)
        Momentum (0: none, as in the paper) and curvature decay, each in [0, 1).
    hess_init : float
        Initial per-example curvature (>= 0).
    mc_samples, seed : int
    ess : float, optional
        Effective sample size (default ``n_data``).
    prior_mean : float or ndarray (P,)
        Prior mean (default 0; a vector also sets the starting mean, see :class:`Optimizer`).
    curvature : {"squared_gradients", "gauss_newton", "hessian"}
    antithetic : bool
        Draw the weight samples in pairs ``m +- sigma eps`` (``mc_samples`` even); the
        Monte Carlo averages are then exact for a quadratic log-likelihood.
    """

    state_rules = {**DiagonalOptimizer.state_rules, "betas": rules.unit_pair,
                   "curvature": rules.choice(*_CURVATURES), "antithetic": rules.boolean}

    def __init__(self, model, n_data, *, prior_precision=1.0, lr=1e-3, betas=(0.0, 0.999), hess_init=1.0,
                 mc_samples=1, seed=0, ess=None, prior_mean=0.0, curvature="squared_gradients", antithetic=False):
        if curvature not in _CURVATURES:
            raise ValueError(f"curvature must be one of {', '.join(map(repr, _CURVATURES))}; got {curvature!r}")
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess,
                         mc_samples=mc_samples, seed=seed, hess_init=hess_init, prior_mean=prior_mean)
        self.betas = check_betas(betas)
        self.curvature = curvature
        self._set_antithetic(antithetic)

    _checks_proposal = True

    def _propose(self, X, y, batch_size, step):
        beta1, beta2 = self.betas
        _, params, _ = self._draw()
        nll, grads, curv = self._diagonal_curvature(params, X, y, batch_size, step, self.curvature)
        state = {name: np.empty(self.n_params) for name in ("mean", "hess", "momentum")}
        status, n_corrected = vogn_update(grads, np.ascontiguousarray(curv), self.mean, self.hess, self.momentum,
                                          self.ess, as_vector(self.prior_precision), as_vector(self.prior_mean),
                                          beta1, 1.0 - beta2, 1.0 - beta1 ** step, self.lr, *state.values())
        self._raise_for_status(status, tuple(state), step)
        return {**state, "n_corrected_": self.n_corrected_ + n_corrected}, float(np.mean(nll))
