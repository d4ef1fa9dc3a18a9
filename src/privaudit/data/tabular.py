"""Embedded default classification datasets: scikit-learn's bundled data, never downloaded.

Two small datasets ship inside scikit-learn itself, so they load offline and
are identical on every machine:

* ``"digits"``: 1797 handwritten digits, 8 x 8 grey-scale images flattened to
  64 features, pixel values 0..16 scaled to [0, 1], 10 classes.
* ``"breast-cancer"``: the Wisconsin diagnostic breast-cancer data, 569
  examples of 30 real features, 2 classes. Features are standardised with the
  mean and standard deviation of the *training* split only, so nothing about
  the test examples leaks into the inputs.

The train/test split is a stratified permutation drawn from
``numpy.random.default_rng(seed)``: each class is shuffled and split on its
own, so both splits keep the full data's class proportions.

:func:`load_dataset_file` splits the user's own dataset file (``.npz``,
``.csv`` or ``.parquet``, read by :func:`privaudit._core.labelled.read_labelled`)
the same way; its features are used as they are, without scaling, and how
its label column was decided is kept in :attr:`Dataset.conventions`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from .._core.conventions import Convention
from .._core.extras import require
from .._core.validation import check_choice, check_count, check_probability

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DATASET_NAMES", "MIXED_TABLES", "Dataset", "load_dataset", "load_dataset_file", "mixed_table"]

DATASET_NAMES = ("digits", "breast-cancer")
#: scikit-learn's tables that :func:`mixed_table` gives as a user holds them: id, named columns, strings.
MIXED_TABLES = ("breast-cancer", "diabetes")


@dataclasses.dataclass(frozen=True, eq=False)
class Dataset:
    """A train/test split of a classification dataset.

    Features are float32 arrays of shape (n, num_features); labels are int64
    arrays of shape (n,) with values in ``range(num_classes)``. ``image_shape``
    is the (channels, height, width) the flat features reshape to, or None
    for data that are not images. ``conventions`` records how the user's
    file was read (its label column); the embedded datasets have none.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    image_shape: tuple[int, int, int] | None
    seed: int
    conventions: tuple[Convention, ...] = ()

    @property
    def num_features(self) -> int:
        """The number of input features (columns of ``x_train``)."""
        return int(self.x_train.shape[1])


def _require_sklearn_datasets():
    return require("sklearn.datasets", purpose="the embedded datasets")


def _test_counts(class_sizes: np.ndarray, test_fraction: float) -> np.ndarray:
    """Test examples per class: ceil(n * fraction) in all (as scikit-learn), shared by largest remainder."""
    total = int(class_sizes.sum())
    n_test = min(max(math.ceil(total * test_fraction), 1), total - 1)
    exact = class_sizes * test_fraction
    counts = np.floor(exact).astype(np.int64)
    # Hand the missing examples to the classes with the largest fractional parts (stable: lower class first).
    order = np.argsort(-(exact - counts), kind="stable")
    for index in order:
        if counts.sum() >= n_test:
            break
        if counts[index] < class_sizes[index]:
            counts[index] += 1
    return counts


def _stratified_split(labels: np.ndarray, test_fraction: float, rng: np.random.Generator):
    """Indices (train, test): each class shuffled and split on its own, then both sides shuffled."""
    classes, sizes = np.unique(labels, return_counts=True)
    train, test = [], []
    for label, n_test in zip(classes, _test_counts(sizes, test_fraction)):
        members = rng.permutation(np.flatnonzero(labels == label))
        test.append(members[:n_test])
        train.append(members[n_test:])
    return rng.permutation(np.concatenate(train)), rng.permutation(np.concatenate(test))


def load_dataset(name: str, *, seed: int = 0, test_fraction: float = 0.25) -> Dataset:
    """Load an embedded dataset, split into train and test by a seeded stratified permutation.

    ``name`` is ``"digits"`` or ``"breast-cancer"``; ``test_fraction`` (in
    (0, 1)) of each class goes to the test split. The same ``seed`` always
    gives the same split. Needs scikit-learn (the ``dpsgd`` extra).

    >>> data = load_dataset("digits", seed=0)
    >>> data.x_train.shape, data.x_test.shape, data.num_classes, data.image_shape
    ((1347, 64), (450, 64), 10, (1, 8, 8))
    >>> float(data.x_train.min()), float(data.x_train.max())
    (0.0, 1.0)
    >>> cancer = load_dataset("breast-cancer", test_fraction=0.2)
    >>> cancer.x_train.shape, cancer.x_test.shape, cancer.num_classes
    ((455, 30), (114, 30), 2)
    >>> load_dataset("mnist")
    Traceback (most recent call last):
    ...
    ValueError: `name` must be one of 'digits', 'breast-cancer', got 'mnist'
    """
    check_choice(name, "name", DATASET_NAMES)
    seed = check_count(seed, "seed")
    test_fraction = check_probability(test_fraction, "test_fraction")
    datasets = _require_sklearn_datasets()

    if name == "digits":
        bunch = datasets.load_digits()
        features = np.asarray(bunch.data, dtype=np.float64) / 16.0
        image_shape = (1, 8, 8)
    else:
        bunch = datasets.load_breast_cancer()
        features = np.asarray(bunch.data, dtype=np.float64)
        image_shape = None
    labels = np.asarray(bunch.target, dtype=np.int64)
    num_classes = int(labels.max()) + 1

    rng = np.random.default_rng(seed)
    train_index, test_index = _stratified_split(labels, test_fraction, rng)
    x_train, x_test = features[train_index], features[test_index]

    if name == "breast-cancer":
        mean = x_train.mean(axis=0)
        std = x_train.std(axis=0)
        std = np.where(std > 0, std, 1.0)
        x_train = (x_train - mean) / std
        x_test = (x_test - mean) / std

    return Dataset(
        name=name,
        x_train=np.ascontiguousarray(x_train, dtype=np.float32),
        y_train=labels[train_index],
        x_test=np.ascontiguousarray(x_test, dtype=np.float32),
        y_test=labels[test_index],
        num_classes=num_classes,
        image_shape=image_shape,
        seed=seed,
    )


def load_dataset_file(path, *, name: str = "--data", label_col: str | None = None, seed: int = 0, test_fraction: float = 0.25) -> Dataset:
    """The user's labelled dataset file, split into train and test as :func:`load_dataset` splits the embedded ones.

    ``path`` is an ``.npz`` (arrays ``x`` and ``y``), ``.csv`` or ``.parquet``
    file (label column ``label_col``, else the one column that could be the
    label, else refused); see :func:`privaudit._core.labelled.read_labelled`.
    Features are used as they are (no scaling); the classes are 0 .. max(y).
    The label decision is the split's one convention. Errors are ValueErrors
    naming ``name``.

    >>> import tempfile, os
    >>> file = os.path.join(tempfile.mkdtemp(), "d.npz")
    >>> np.savez(file, x=np.arange(40.0).reshape(20, 2), y=np.arange(20) % 2)
    >>> data = load_dataset_file(file, seed=1)
    >>> data.x_train.shape, data.x_test.shape, data.num_classes, data.image_shape
    ((15, 2), (5, 2), 2, None)
    >>> data.conventions[0].describe()
    "label column of --data: array 'y' (explicit: the .npz key 'y' (by name, not position))"
    """
    from .._core.labelled import read_labelled

    seed = check_count(seed, "seed")
    test_fraction = check_probability(test_fraction, "test_fraction")
    labelled = read_labelled(path, name, label_col=label_col)
    x, y = labelled.x, labelled.y
    if len(y) < 4:
        raise ValueError(f"`{name}` must hold at least 4 examples (some to train on, some to test), got {len(y)} in {str(path)!r}")
    with np.errstate(over="ignore"):
        features = x.astype(np.float32)
    if not np.isfinite(features).all():
        raise ValueError(f"`{name}` must hold features within float32's range (|x| < 3.4e38), got larger values in {str(path)!r}")
    train_index, test_index = _stratified_split(y, test_fraction, np.random.default_rng(seed))
    return Dataset(
        name=str(path),
        x_train=np.ascontiguousarray(features[train_index]),
        y_train=y[train_index],
        x_test=np.ascontiguousarray(features[test_index]),
        y_test=y[test_index],
        num_classes=int(y.max()) + 1,
        image_shape=None,
        seed=seed,
        conventions=(labelled.label,),
    )


def mixed_table(name: str) -> pd.DataFrame:
    """scikit-learn's ``name`` table as a user holds one: an id column ``record`` first, named columns, a categorical column as strings.

    ``"breast-cancer"``: 569 rows, 30 named features, ``target`` as
    ``"malignant"``/``"benign"``, ids ``bc-000``.. ``"diabetes"``: 442 rows,
    its unscaled features with ``sex`` as ``"sex-1"``/``"sex-2"``, the disease
    progression ``target``, ids ``db-000``.. The synthetic-data guide, its
    benchmark and its tests audit generators on these.

    >>> frame = mixed_table("diabetes")
    >>> frame.shape, list(frame.columns[:3]), sorted(set(frame["sex"]))
    ((442, 12), ['record', 'age', 'sex'], ['sex-1', 'sex-2'])
    """
    datasets = _require_sklearn_datasets()
    check_choice(name, "name", MIXED_TABLES)
    if name == "diabetes":
        frame = datasets.load_diabetes(as_frame=True, scaled=False).frame
        frame["sex"] = frame["sex"].map(lambda value: f"sex-{int(value)}").astype(object)
    else:
        frame = datasets.load_breast_cancer(as_frame=True).frame
        frame["target"] = frame["target"].map({0: "malignant", 1: "benign"}).astype(object)
    frame.insert(0, "record", [f"{'db' if name == 'diabetes' else 'bc'}-{i:03d}" for i in range(len(frame))])
    return frame
