"""Generic factors: the user writes a log-density (or its expectation), the engine does the rest."""

from .enumeration import Enumerated
from .expected import ExpectedLogFactor
from .montecarlo import MonteCarloFactor

__all__ = ["Enumerated", "ExpectedLogFactor", "MonteCarloFactor"]
