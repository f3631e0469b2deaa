"""The likelihoods' names from before they took a link: each is its distribution with one fixed link.

``BernoulliLogit()`` is ``Bernoulli(link="logit")``, ``BernoulliProbit()`` is
``Bernoulli(link="probit")``, ``BinomialLogit(n_trials)`` is
``Binomial(n_trials, link="logit")`` and ``GammaLogLink(shape)`` is
``Gamma(shape, link="log")``: the same compiled functions and results, under
the old names and constructors (subclasses, so ``isinstance`` checks against
the distribution hold).
"""

from ._quadrature import DEFAULT_N_POINTS
from .bernoulli import Bernoulli
from .binomial import Binomial
from .gamma import Gamma


class _BernoulliWithFixedLink(Bernoulli):
    """Binary labels with the link named by the subclass (``_fixed_link``).

    Parameters
    ----------
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).
    """

    _repr_fields = ()
    _fixed_link = None

    def __init__(self, n_points=DEFAULT_N_POINTS):
        super().__init__(link=self._fixed_link, n_points=n_points)


class BernoulliLogit(_BernoulliWithFixedLink):
    """Binary labels with a logit link: ``Bernoulli(link="logit")``; takes only ``n_points``."""

    _fixed_link = "logit"


class BernoulliProbit(_BernoulliWithFixedLink):
    """Binary labels with a probit link: ``Bernoulli(link="probit")``; takes only ``n_points``."""

    _fixed_link = "probit"


class BinomialLogit(Binomial):
    """Successes out of ``n_trials`` with a logit link: ``Binomial(n_trials, link="logit")``.

    Parameters
    ----------
    n_trials : int or array_like of int, shape (N,)
        Number of trials (>= 1), shared or per data point.
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).
    """

    _repr_fields = ("n_trials",)

    def __init__(self, n_trials=1, n_points=DEFAULT_N_POINTS):
        super().__init__(n_trials, link="logit", n_points=n_points)


class GammaLogLink(Gamma):
    """Positive continuous data with a log link on the mean: ``Gamma(shape, link="log")``.

    Parameters
    ----------
    shape : float
        Shape k > 0; the coefficient of variation of y given a is 1/sqrt(k).
    n_points : int, optional
        Gauss-Hermite points of the quadrature route (the expectations and
        predictions here are closed form).
    """

    _repr_fields = ("shape",)

    def __init__(self, shape=1.0, n_points=DEFAULT_N_POINTS):
        super().__init__(shape, link="log", n_points=n_points)
