"""scikit-learn's bundled 8x8 handwritten digits, without importing scikit-learn.

`sklearn.datasets.load_digits()` reads `sklearn/datasets/data/digits.csv.gz`; importing
`sklearn.datasets` costs seconds (it pulls in SciPy), so the scripts read the same file with
NumPy (a tenth of a second). The arrays are identical to load_digits()'s `images`/`target`.
"""
import importlib.util
import os

import numpy as np


def load_digits():
    """(images: float64 [1797, 8, 8] with values 0..16, target: int64 [1797])."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None:
        raise ModuleNotFoundError("scikit-learn is needed for its bundled digits data set")
    path = os.path.join(spec.submodule_search_locations[0], "datasets", "data", "digits.csv.gz")
    table = np.loadtxt(path, delimiter=",")
    images = table[:, :-1].reshape(-1, 8, 8)
    target = table[:, -1].astype(np.int64)
    return images, target


def split(n, train_fraction=0.8, seed=0):
    """A fixed random train/test split of range(n): (train_index, test_index)."""
    order = np.random.RandomState(seed).permutation(n)
    cut = int(train_fraction * n)
    return order[:cut], order[cut:]
