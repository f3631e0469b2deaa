"""Hypothesis strategies shared by the family cases (no case of its own)."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

BATCHES = [(), (3,), (2, 2)]
"""Batch shapes the moderate strategies draw from."""

SHAPE_RATE_EXTREMES = (np.repeat([1e-3, 1e6], 3), np.tile([1e-3, 1.0, 1e3], 2))
"""Shapes 1e-3 and 1e6, each with rates (or scales) 1e-3, 1 and 1e3: the extremes of the two-parameter
positive families."""


@st.composite
def log_uniform(draw, decades, to_natural):
    """``to_natural(*values)`` for positive parameters drawn log-uniform over a common batch shape.

    Parameters
    ----------
    decades : list of (float, float)
        For each parameter, the range of its base-10 logarithm.
    to_natural : callable(*arrays) -> tuple of arrays
        The natural parameters of the family at those parameters.
    """
    batch = draw(st.sampled_from(BATCHES))
    values = [10.0 ** draw(arrays(float, batch, elements=st.floats(low, high))) for low, high in decades]
    return to_natural(*values)
