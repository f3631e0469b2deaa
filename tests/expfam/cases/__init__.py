"""Test cases for the family contract tests, one module per family.

Each module in this package calls :func:`register_case` once.  The contract
tests in ``tests/expfam/test_contract.py`` are parametrised over
``expfam.names()`` and fail for any registered family without a case here, so a
new family cannot go untested.
"""

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

CASES = {}


@dataclass
class FamilyCase:
    """Everything the contract tests need to know about one family.

    Attributes
    ----------
    family : type
        The family class.
    moderate : hypothesis strategy
        Draws natural-parameter tuples in the "moderate" range of the issue
        (e.g. Gamma shape 1e-2..1e3); the round trip must hold to 1e-10 there.
    extreme : list of tuples
        Natural-parameter tuples at the extremes (round trip to 1e-6, finite).
    examples : list
        Small batches of distribution objects built with readable constructors,
        used for Monte Carlo, scipy and KL checks.
    scipy_logpdf : callable(dist, z) -> array, optional
        Independent reference log density (scipy.stats); ``None`` if scipy lacks it.
    scipy_entropy : callable(dist) -> array, optional
        Independent reference entropy.
    invalid : list of (callable, str)
        Calls that must raise ``ValueError`` whose message contains the string
        (the argument's name).
    mean_to_natural_rtol : float
        Relative tolerance of the moderate round trip (1e-10 unless the issue says otherwise).
    derived_extremes : bool
        Whether the derived Newton solve (:mod:`efvi.expfam._newton`) converges at
        the extremes.  Not for the matrix families, whose extremes (condition
        numbers 1e8..1e10) give a Fisher information of condition 1e16 and more,
        equilibrated: there the solve raises ``ConvergenceError``
        (``tests/expfam/test_newton.py``) and only the closed forms apply.
    newton_moderate : hypothesis strategy, optional
        Where the derived Newton solve must converge to ``mean_to_natural_rtol``
        from its start (``tests/expfam/test_newton.py``); ``moderate`` unless
        the family's case says why not.
    """

    family: type
    moderate: Any
    extreme: list
    examples: list
    scipy_logpdf: Optional[Callable] = None
    scipy_entropy: Optional[Callable] = None
    invalid: list = field(default_factory=list)
    mean_to_natural_rtol: float = 1e-10
    derived_extremes: bool = True
    newton_moderate: Any = None

    def __post_init__(self):
        if self.newton_moderate is None:
            self.newton_moderate = self.moderate


def register_case(case):
    """Register a :class:`FamilyCase` under its family's registry name."""
    CASES[case.family.name] = case
    return case


for _info in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_info.name}")
