r"""Base class of the distributions that take a link: ``Bernoulli(link="probit")``, ``Poisson(link="softplus")``.

A subclass is one distribution.  It declares

* ``family``: its name (links declare by it whether they keep it log-concave);
* ``domain``: the links it accepts, ``"probability"`` or ``"positive"`` (:mod:`._link`);
* ``_family_functions``: its compiled log density and moments in terms of a link
  (see :mod:`._pairs`) and the :math:`a`-independent ``_log_base`` (which also
  becomes the class's ``_log_base``);
* ``family_strip_half_width``: where its log density is analytic as a function
  of the link's :math:`\log\mu` (infinite when it is entire);
* ``_mean_guess(y)``: a smoothed estimate of each point's mean, whose image
  under the link function is the IRLS start (``initial_latent``);

and the link fills in the rest: the compiled functions of the pair
(:func:`._pairs.pair_functions`), ``log_concave``, ``exponential_link`` and the
strip of analyticity that sizes the quadrature ladder.
"""

from ._base import Likelihood
from ._kernels import no_wide_rule
from ._link import get_link
from ._quadrature import DEFAULT_N_POINTS
from ._pairs import pair_functions


class LinkedLikelihood(Likelihood):
    """A distribution whose mean is ``h(a)`` for a link ``h`` chosen by name.

    Parameters
    ----------
    link : str
        A registered link onto the distribution's ``domain`` (``_link.LINKS``).
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).

    Attributes
    ----------
    link : str
        The link's name.
    """

    family = None
    domain = None
    family_strip_half_width = float("inf")
    default_link = None
    _family_functions = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_family_functions" in cls.__dict__:     # the a-independent part, as every likelihood declares it
            cls._log_base = staticmethod(cls._family_functions[1])

    def __init__(self, link=None, n_points=DEFAULT_N_POINTS):
        super().__init__(n_points)
        self._link = get_link(self.default_link if link is None else link, self.domain, type(self).__name__)
        self.link = self._link.name
        self._bind_pair()

    def _bind_pair(self):
        """The pair's compiled functions, from this process's cache of pairs (numba's on disk in a new process)."""
        self._log_lik, self._moments, self._expectations_kernel = pair_functions(
            (self.family, *self._family_functions), self._link, self._wide_rule())

    def __getstate__(self):
        # the compiled functions are bound again where the likelihood is unpickled (a Dask worker,
        # multiprocessing): pickled, they would compile afresh there, for seconds in every process
        state = super().__getstate__()
        for name in ("_log_lik", "_moments", "_expectations_kernel"):
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._bind_pair()

    def _wide_rule(self):
        """The expectations kernel's rule for wide Gaussians (none unless a subclass has one for its link)."""
        return no_wide_rule

    @property
    def log_concave(self):
        """Whether ``log p(y | a)`` is concave in ``a``: declared by the link for each distribution."""
        return self.family in self._link.log_concave

    @property
    def exponential_link(self):
        """Whether ``log p(y | a)`` grows like ``exp(a)``: the log and complementary log-log links."""
        return self._link.exponential

    @property
    def strip_half_width(self):
        """Half-width of the strip where ``log p(y | a)`` is analytic: the narrower of the distribution's and the link's."""
        return min(self.family_strip_half_width, self._link.strip_half_width)

    def initial_latent(self, y):
        """The link function of a smoothed mean of each point (``_mean_guess``): the IRLS start."""
        return self._link.link(self._mean_guess(y))

    def _mean_guess(self, y):
        raise NotImplementedError
