"""The data shipped in examples/data loads, is validated, and equals the public sources.

The comparison with the original text files runs only where they are (the
maintainers' ``../shared/data``); it skips cleanly in a fresh clone.
"""

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT.parent / "shared" / "data"
_spec = importlib.util.spec_from_file_location("efvi_example_datasets", ROOT / "examples" / "_datasets.py")
datasets = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(datasets)

SIZES = {"bostonHousing": (506, 13), "concrete": (1030, 8), "energy": (768, 8), "kin8nm": (8192, 8),
         "naval-propulsion-plant": (11934, 16), "power-plant": (9568, 4), "wine-quality-red": (1599, 11),
         "yacht": (308, 6)}


@pytest.mark.parametrize("name", datasets.UCI_SETS)
def test_uci_sets_load_with_twenty_splits(name):
    data = datasets.load_uci(name)
    assert data["X"].shape == SIZES[name] and data["test"].shape == (20, SIZES[name][0])
    assert (data["n_hidden"], data["n_epochs"]) == (50, 40)
    X_tr, y_tr, X_te, y_te = datasets.uci_split(data, 7)
    assert X_tr.shape[0] + X_te.shape[0] == SIZES[name][0] and y_tr.shape[0] == X_tr.shape[0]
    # the standard splits hold out about 10% of the rows
    assert 0.08 < X_te.shape[0] / SIZES[name][0] < 0.12


@pytest.mark.parametrize("name", datasets.UCI_SETS)
def test_uci_sets_equal_the_public_text_files(name):
    folder = SOURCE / "uci" / name
    if not folder.is_dir():
        pytest.skip("the original text files are not on this machine")
    data = datasets.load_uci(name)
    raw = np.loadtxt(folder / "data.txt")
    target = int(np.loadtxt(folder / "index_target.txt"))
    np.testing.assert_array_equal(data["y"], raw[:, target])
    for k in (0, 19):
        test_rows = np.loadtxt(folder / f"index_test_{k}.txt", dtype=int)
        np.testing.assert_array_equal(np.flatnonzero(data["test"][k]), np.sort(test_rows))


def test_libsvm_sets_load_and_equal_the_public_files():
    for name, size, dim in (("australian", (345, 345), 14), ("breast_cancer_libsvm", (341, 342), 10)):
        X_tr, y_tr, X_te, y_te = datasets.load_libsvm(name)
        assert (X_tr.shape, X_te.shape) == ((size[0], dim), (size[1], dim))
        assert np.abs(X_tr).max() <= 1.0 and set(np.unique(y_tr)) == {0.0, 1.0}
    folder = SOURCE / "libsvm" / "australian_presplit"
    if folder.is_dir():
        np.testing.assert_array_equal(datasets.load_libsvm("australian")[0],
                                      np.loadtxt(folder / "australian_scale_X_tr.csv"))


def test_unknown_names_and_splits_are_named():
    with pytest.raises(ValueError, match="name must be one of"):
        datasets.load_uci("boston")
    with pytest.raises(ValueError, match="name must be"):
        datasets.load_libsvm("mnist")
    with pytest.raises(ValueError, match=r"k must be a split index in \[0, 20\)"):
        datasets.uci_split(datasets.load_uci("yacht"), 20)


def test_a_damaged_file_raises_data_file_error(tmp_path, monkeypatch):
    shutil.copy(datasets.DATA / "uci_yacht.npz", tmp_path / "uci_yacht.npz")
    monkeypatch.setattr(datasets, "DATA", tmp_path)
    path = tmp_path / "uci_yacht.npz"
    path.write_bytes(path.read_bytes()[:2000])                       # truncated
    with pytest.raises(datasets.DataFileError, match="uci_yacht.npz"):
        datasets.load_uci("yacht")
    with np.load(ROOT / "examples" / "data" / "uci_yacht.npz") as good:
        arrays = {key: good[key] for key in good.files}
    arrays["X"] = arrays["X"].copy()
    arrays["X"][3, 2] = np.nan                                        # altered
    np.savez_compressed(path, **arrays)
    with pytest.raises(datasets.DataFileError, match="finite"):
        datasets.load_uci("yacht")
    arrays["X"][3, 2] = 0.0
    arrays["test"] = arrays["test"][:, :-1]                           # inconsistent
    np.savez_compressed(path, **arrays)
    with pytest.raises(datasets.DataFileError, match="boolean mask"):
        datasets.load_uci("yacht")


def test_mnist_subset_loads_binarised_and_validates(tmp_path, monkeypatch):
    images, labels = datasets.load_mnist_subset()
    assert images.shape == (5000, 784) and labels.shape == (5000,)
    assert set(np.unique(images)) == {0.0, 1.0} and 0.1 < images.mean() < 0.2
    np.testing.assert_array_equal(np.bincount(labels), np.full(10, 500))
    with np.load(datasets.DATA / "mnist_5000_binarised.npz") as good:
        arrays = {key: good[key] for key in good.files}
    monkeypatch.setattr(datasets, "DATA", tmp_path)
    np.savez_compressed(tmp_path / "mnist_5000_binarised.npz", pixels=arrays["pixels"][:, :90], labels=arrays["labels"])
    with pytest.raises(datasets.DataFileError, match=r"mnist_5000_binarised.npz: pixels must be bit-packed"):
        datasets.load_mnist_subset()
    labels_bad = arrays["labels"].copy()
    labels_bad[0] = 11
    np.savez_compressed(tmp_path / "mnist_5000_binarised.npz", pixels=arrays["pixels"], labels=labels_bad)
    with pytest.raises(datasets.DataFileError, match=r"labels must be \(N,\) digits 0-9"):
        datasets.load_mnist_subset()
