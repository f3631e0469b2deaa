r"""A learned noise precision for the Bayesian-MLP regressor: a Gamma posterior updated with the weights.

The regressor's likelihood is :math:`y_n \sim N(f(x_n; w), 1/\tau)` with a
Gamma(:math:`a_0, b_0`) prior on the noise precision :math:`\tau`, and the
posterior is the mean field :math:`q(w)\,q(\tau)` with :math:`q(\tau)` =
Gamma(:math:`a, b`).  Given :math:`q(w)`, the optimal :math:`q(\tau)` is
conjugate (the variational-Bayes step, or CVI with step 1):

.. math::
    a = a_0 + \tfrac{N}{2}, \qquad
    b = b_0 + \tfrac12 \sum_n E_{q(w)}\big[(y_n - f(x_n; w))^2\big],

and given :math:`q(\tau)` the weights see a Gaussian likelihood of variance
:math:`1 / E_q[\tau] = b / a` (the term :math:`\tfrac12 E_q[\log\tau]` does
not depend on :math:`w`).  The expected squared residuals need no extra pass:
every optimiser step returns the Monte Carlo average negative log-likelihood
:math:`\ell` of its minibatch at weights drawn from :math:`q(w)` (at the
point estimate for Adam and RMSprop), and for a Gaussian of variance
:math:`\sigma^2`

.. math:: \ell = \tfrac12 \log(2\pi\sigma^2) + \overline{r^2} / (2\sigma^2)
    \quad\Longrightarrow\quad \overline{r^2} = \sigma^2 \big(2\ell - \log(2\pi\sigma^2)\big),

so the average over an epoch's minibatches is an unbiased estimate of
:math:`\frac1N \sum_n E_{q(w)}[r_n^2]` (made with the weights of that epoch).
"""

import math

NOISE_PRIOR = (1e-2, 1e-2)
"""Shape and rate of the Gamma prior on the noise precision of the standardised targets: prior mean 1
(the targets' own variance), worth 0.02 observations."""


def mean_squared_residual(nll, variance):
    """The average squared residual behind an average Gaussian negative log-likelihood.

    Parameters
    ----------
    nll : float
        Average of :math:`-\\log N(y_n; f_n, \\sigma^2)` over some points.
    variance : float
        The :math:`\\sigma^2` it was computed with.

    Returns
    -------
    float
        The average of :math:`(y_n - f_n)^2` over the same points (>= 0 up to rounding).
    """
    return max(variance * (2.0 * nll - math.log(2.0 * math.pi * variance)), 0.0)


def noise_posterior(n_data, mean_squared, prior=NOISE_PRIOR):
    """The Gamma posterior of the noise precision given the expected squared residuals.

    Parameters
    ----------
    n_data : int
        N, the number of training points.
    mean_squared : float
        :math:`\\frac1N \\sum_n E_{q(w)}[(y_n - f(x_n; w))^2]`.
    prior : (float, float)
        Shape :math:`a_0` and rate :math:`b_0` of the prior.

    Returns
    -------
    shape, rate : float
        :math:`a = a_0 + N/2`, :math:`b = b_0 + N \\overline{r^2} / 2`; the weights'
        likelihood variance is ``rate / shape``.
    """
    prior_shape, prior_rate = prior
    return prior_shape + 0.5 * n_data, prior_rate + 0.5 * n_data * mean_squared


LIKELIHOOD_STATE = {"hess": 1, "momentum": 1, "first": 1, "second": 2}
"""Optimiser attributes that estimate a gradient or curvature of the log-likelihood (power 1: a gradient,
a Hessian or Gauss-Newton curvature, a momentum; power 2: a running squared gradient)."""


def rescale_likelihood_state(optimizer, factor):
    """Put an optimiser's running estimates in the units of a log-likelihood multiplied by ``factor``.

    A new noise variance multiplies a Gaussian log-likelihood's gradients and
    curvature by ``factor = old variance / new variance``.  The curvature
    (``hess``) makes the posterior precision ``ess * hess + prior_precision``, so
    it must follow at once: IVON, for one, forgets it over ``1 / (1 - beta2)`` =
    1e5 steps.  A rescaled ``hess`` that would leave the precision not positive
    (a negative curvature scaled up) is kept as it was.

    Parameters
    ----------
    optimizer : efvi.inference.ngvi.Optimizer
        Changed in place: each attribute of :data:`LIKELIHOOD_STATE` it has.
    factor : float
        Positive.
    """
    for name, power in LIKELIHOOD_STATE.items():
        old = getattr(optimizer, name, None)
        if old is None:
            continue
        setattr(optimizer, name, old * factor ** power)
        if name == "hess":
            try:
                optimizer.check_state()
            except ValueError:
                optimizer.hess = old
