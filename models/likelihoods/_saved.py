"""The registry of the likelihood classes a file can name, and a likelihood's JSON form.

A leaf module (numpy only): :meth:`efvi.models.likelihoods.Likelihood.spec`
writes through :func:`spec_of` without importing the classes, and
:mod:`efvi.models.likelihoods.spec`, which imports them, fills
:data:`SAVED_CLASSES` (the package imports it, so the registry is full
whenever a likelihood exists).
"""

import numpy as np

SAVED_CLASSES = {}
"""The likelihood classes that :func:`efvi.models.likelihoods.from_spec` builds, by name (filled by
:mod:`efvi.models.likelihoods.spec`)."""


def spec_of(likelihood, arguments):
    """``{"class": name, "arguments": ...}`` of ``likelihood`` with the constructor's ``arguments`` made JSON-safe.

    Raises
    ------
    ValueError
        If the class is not one of :data:`SAVED_CLASSES`.
    """
    name = type(likelihood).__name__
    if SAVED_CLASSES.get(name) is not type(likelihood):
        raise ValueError(
            f"a {name} likelihood cannot be saved: a file holds numbers and names, never code, so only efvi's own "
            f"likelihood classes ({', '.join(SAVED_CLASSES)}) can be rebuilt from one; a Custom likelihood (Python "
            "functions) or a class of your own stays in your code: pass it again after loading")
    return {"class": name, "arguments": {key: _json_value(value) for key, value in arguments.items()
                                         if value is not None}}        # None: the constructor's default


def _json_value(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value
