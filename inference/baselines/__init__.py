"""Baselines that CVI is compared against: plain-gradient VI (Adam / SGD).

The Laplace approximation of a GLM lives beside the GLM (``efvi.models.glm.laplace``).
"""

from .gradient_vi import GradientVIResult, gradient_vi

__all__ = ["gradient_vi", "GradientVIResult"]
