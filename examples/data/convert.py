"""How the compressed data files beside this script were made from the public sources.

Run once by the maintainers (``python examples/data/convert.py SOURCE``, with
SOURCE a folder holding ``uci/`` and ``libsvm/`` in the layouts described in
``examples/data/README.md``); users never need it: the ``.npz`` files are
shipped.  Every array is stored exactly (float64 values as read from the text
files; split indices as boolean test masks, one row per split).
"""

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
UCI = ("bostonHousing", "concrete", "energy", "kin8nm", "naval-propulsion-plant", "power-plant",
       "wine-quality-red", "yacht")


def _int(path):
    return int(np.loadtxt(path))


def convert_uci(source):
    for name in UCI:
        folder = source / "uci" / name
        data = np.loadtxt(folder / "data.txt")
        features = np.loadtxt(folder / "index_features.txt", dtype=int, ndmin=1)
        target = _int(folder / "index_target.txt")
        n_splits = _int(folder / "n_splits.txt")
        test = np.zeros((n_splits, data.shape[0]), dtype=bool)
        for k in range(n_splits):
            test_rows = np.loadtxt(folder / f"index_test_{k}.txt", dtype=int, ndmin=1)
            train_rows = np.loadtxt(folder / f"index_train_{k}.txt", dtype=int, ndmin=1)
            test[k, test_rows] = True
            if test[k, train_rows].any() or test_rows.size + train_rows.size != data.shape[0]:
                raise ValueError(f"{name} split {k}: train and test rows must partition the data")
        np.savez_compressed(HERE / f"uci_{name}.npz", X=data[:, features], y=data[:, target], test=test,
                            n_hidden=_int(folder / "n_hidden.txt"), n_epochs=_int(folder / "n_epochs.txt"))


def convert_libsvm(source):
    for name, folder, stem in (("australian", "australian_presplit", "australian_scale"),
                               ("breast_cancer_libsvm", "breast_cancer_scale_presplit", "breast_cancer_scale")):
        path = source / "libsvm" / folder
        arrays = {key: np.loadtxt(path / f"{stem}_{key}.csv", ndmin=1) for key in ("X_tr", "y_tr", "X_te", "y_te")}
        np.savez_compressed(HERE / f"{name}.npz", **arrays)


if __name__ == "__main__":
    source = Path(sys.argv[1])
    convert_uci(source)
    convert_libsvm(source)
