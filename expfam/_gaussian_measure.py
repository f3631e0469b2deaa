"""The base measure shared by the Gaussian families: ``h(z) = (2 pi)^{-D/2}`` (Lebesgue, normalised)."""

import numpy as np

_LOG_2PI = np.log(2.0 * np.pi)


class GaussianBaseMeasure:
    """Mixin for Gaussian families whose base measure is ``(2 pi)^{-D/2}`` over ``z`` of shape (..., D)."""

    @classmethod
    def log_base_measure(cls, z):
        """``-D/2 log(2 pi)``, shape ``z.shape[:-1]``."""
        z = np.asarray(z)
        return np.full(z.shape[:-1], -0.5 * z.shape[-1] * _LOG_2PI)

    @classmethod
    def expected_log_base_measure(cls, natural):
        """``-D/2 log(2 pi)``, shape ``batch``."""
        dim = np.shape(natural[0])[-1]
        return np.full(cls.batch_shape_of(natural), -0.5 * dim * _LOG_2PI)
