r"""The logit link: :math:`\mu = \sigma(a) = 1 / (1 + e^{-a})`, the canonical link of the Bernoulli and binomial.

.. math::

    \log\mu = -\operatorname{softplus}(-a), \quad (\log\mu)' = \sigma(-a), \qquad
    \log(1 - \mu) = -\operatorname{softplus}(a), \quad (\log(1 - \mu))' = -\sigma(a),

and both second derivatives are :math:`-\sigma(a)\,\sigma(-a)`; all from one
exponential (:func:`._math.logistic`).  :math:`\log(1 + e^{\pm a})` has poles
at :math:`a = \pm i\pi`.
"""

import numba
import numpy as np
from scipy.special import logit

from ._kernels import INLINED

from ._link import Link, register_link
from ._math import logistic


@numba.jit(**INLINED)
def log_mean(a):
    softplus_pos, softplus_neg, sigmoid_pos, sigmoid_neg = logistic(a)
    return -softplus_neg, sigmoid_neg, -sigmoid_pos * sigmoid_neg


@numba.jit(**INLINED)
def log_complement(a):
    softplus_pos, softplus_neg, sigmoid_pos, sigmoid_neg = logistic(a)
    return -softplus_pos, -sigmoid_pos, -sigmoid_pos * sigmoid_neg


LOGIT = register_link(Link(
    "logit", "probability", log_mean, link=logit, strip_half_width=np.pi,
    log_concave=frozenset({"bernoulli", "binomial"}), log_complement=log_complement,
))
