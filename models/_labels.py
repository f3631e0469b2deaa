"""Class labels of the binary classifiers (``glm.BayesianLogisticRegression``, ``gp.GPClassifier``)."""

import numpy as np


def binary_labels(y, name="y"):
    """The two classes of ``y`` and ``y`` coded as 0.0 / 1.0 (1 for the second class), as scikit-learn does.

    Parameters
    ----------
    y : array_like, shape (N,)
        Labels of any sortable type (numbers, strings, booleans).
    name : str
        Name of the argument in error messages.

    Returns
    -------
    classes : ndarray, shape (2,)
        The sorted distinct labels.
    coded : ndarray, shape (N,)
        ``1.0`` where ``y == classes[1]``, else ``0.0``.

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, holds None or labels that cannot be sorted together, or does not
        hold exactly two distinct labels (NaN counts as a label).
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must have shape (N,); got shape {y.shape}")
    missing = np.array([label is None for label in y.tolist()]) if y.dtype == object else np.zeros(y.shape, bool)
    if np.any(missing):
        raise ValueError(f"{name} must hold a label for every point; got None at index {int(np.argmax(missing))}")
    try:
        classes = np.unique(y)
    except TypeError as error:   # labels that cannot be sorted together, e.g. strings and numbers
        raise ValueError(f"{name} must hold labels of one sortable type; got a mix ({error})") from None
    if classes.shape[0] > 2:
        raise ValueError(f"Only binary classification is supported. {name} must hold exactly two classes; got "
                         f"{classes.shape[0]}: {classes[:6].tolist()}")
    if classes.shape[0] < 2:
        raise ValueError(f"{name} must hold exactly two classes for binary classification; got "
                         f"{classes.shape[0]} class: {classes.tolist()}")
    return classes, (y == classes[1]).astype(float)
