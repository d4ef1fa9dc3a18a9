"""Tests for the embedded scikit-learn datasets (privaudit.data.tabular)."""

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.datasets import load_breast_cancer, load_digits  # noqa: E402

from privaudit.data.tabular import Dataset, load_dataset  # noqa: E402

EXPECTED = {
    # name: (n_total, n_features, num_classes, image_shape)
    "digits": (1797, 64, 10, (1, 8, 8)),
    "breast-cancer": (569, 30, 2, None),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shapes_dtypes_and_metadata(name):
    n_total, n_features, num_classes, image_shape = EXPECTED[name]
    data = load_dataset(name, seed=3)
    assert isinstance(data, Dataset)
    assert data.name == name and data.seed == 3
    assert data.num_classes == num_classes
    assert data.image_shape == image_shape
    assert data.num_features == n_features
    assert data.x_train.dtype == np.float32 and data.x_test.dtype == np.float32
    assert data.y_train.dtype == np.int64 and data.y_test.dtype == np.int64
    assert data.x_train.ndim == 2 and data.x_train.shape[1] == n_features
    assert data.x_test.ndim == 2 and data.x_test.shape[1] == n_features
    assert data.y_train.shape == (len(data.x_train),)
    assert data.y_test.shape == (len(data.x_test),)
    assert len(data.x_train) + len(data.x_test) == n_total
    assert len(data.x_test) == int(np.ceil(0.25 * n_total))
    assert np.all(np.isfinite(data.x_train)) and np.all(np.isfinite(data.x_test))
    if image_shape is not None:
        assert int(np.prod(image_shape)) == n_features


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_class_present_and_counts_add_up(name):
    data = load_dataset(name)
    full = np.bincount(np.concatenate([data.y_train, data.y_test]))
    reference = np.bincount(load_digits().target if name == "digits" else load_breast_cancer().target)
    np.testing.assert_array_equal(full, reference)
    assert set(np.unique(data.y_train)) == set(range(data.num_classes))
    assert set(np.unique(data.y_test)) == set(range(data.num_classes))


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("test_fraction", [0.1, 0.25, 0.5])
@pytest.mark.parametrize("seed", [0, 7])
def test_split_is_stratified(name, test_fraction, seed):
    data = load_dataset(name, seed=seed, test_fraction=test_fraction)
    labels = np.concatenate([data.y_train, data.y_test])
    full = np.bincount(labels, minlength=data.num_classes) / len(labels)
    train = np.bincount(data.y_train, minlength=data.num_classes) / len(data.y_train)
    test = np.bincount(data.y_test, minlength=data.num_classes) / len(data.y_test)
    assert np.max(np.abs(train - full)) <= 0.02
    assert np.max(np.abs(test - full)) <= 0.02
    assert len(data.y_test) == int(np.ceil(test_fraction * len(labels)))


def test_split_is_a_partition_of_the_original_rows():
    data = load_dataset("digits", seed=5)
    original = load_digits().data / 16.0
    rows = np.concatenate([data.x_train, data.x_test]).astype(np.float64)
    # Every original row appears exactly once (digits has duplicate images, so compare as multisets).
    ours = np.unique(rows, axis=0, return_counts=True)
    theirs = np.unique(original, axis=0, return_counts=True)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])


def test_digits_pixels_scaled_to_unit_interval():
    data = load_dataset("digits")
    for x in (data.x_train, data.x_test):
        assert x.min() == 0.0 and x.max() == 1.0
        # Pixel values are k / 16 for integer k.
        np.testing.assert_allclose(x * 16, np.round(x * 16), atol=1e-5)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_same_seed_same_arrays_different_seed_different_split(name):
    first = load_dataset(name, seed=11)
    second = load_dataset(name, seed=11)
    for field in ("x_train", "y_train", "x_test", "y_test"):
        np.testing.assert_array_equal(getattr(first, field), getattr(second, field))
    other = load_dataset(name, seed=12)
    assert not np.array_equal(first.x_test, other.x_test)
    assert not np.array_equal(first.x_train, other.x_train)


def test_breast_cancer_standardised_on_train_split_only():
    data = load_dataset("breast-cancer", seed=2)
    train = data.x_train.astype(np.float64)
    np.testing.assert_allclose(train.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(train.std(axis=0), 1.0, atol=1e-5)
    # The test split is transformed with the train statistics, so it is not exactly standardised.
    test = data.x_test.astype(np.float64)
    assert np.max(np.abs(test.mean(axis=0))) > 1e-3


def test_breast_cancer_matches_independent_standardisation():
    data = load_dataset("breast-cancer", seed=4, test_fraction=0.3)
    raw = load_breast_cancer().data
    # Standardisation is an increasing affine map per column, so the sorted raw column maps
    # onto the sorted standardised column exactly: recover (mean, std) from it, find which raw
    # rows went to train, and check (mean, std) are those rows' own statistics.
    x_train = data.x_train.astype(np.float64)
    x_test = data.x_test.astype(np.float64)
    all_std = np.concatenate([x_train, x_test])
    a = np.empty(raw.shape[1])
    b = np.empty(raw.shape[1])
    for column in range(raw.shape[1]):
        slope, intercept = np.polyfit(np.sort(raw[:, column]), np.sort(all_std[:, column]), 1)
        a[column], b[column] = slope, intercept
    mean = -b / a
    std = 1.0 / a
    standardised = (raw - mean) / std
    # Identify train rows: each standardised train row equals one raw row under the map.
    distances = np.abs(x_train[:, None, :] - standardised[None, :, :]).max(axis=2)
    matches = distances.argmin(axis=1)
    assert np.all(distances.min(axis=1) < 1e-3)
    assert len(np.unique(matches)) == len(x_train)
    raw_train = raw[matches]
    np.testing.assert_allclose(mean, raw_train.mean(axis=0), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(std, raw_train.std(axis=0), rtol=1e-4)


@pytest.mark.parametrize("name", ["mnist", "Digits", "", None, 3])
def test_unknown_name_is_rejected(name):
    with pytest.raises(ValueError, match=r"^`name` must be one of 'digits', 'breast-cancer', got "):
        load_dataset(name)


def test_unknown_name_message_exact():
    with pytest.raises(ValueError) as info:
        load_dataset("x")
    assert str(info.value) == "`name` must be one of 'digits', 'breast-cancer', got 'x'"


@pytest.mark.parametrize("test_fraction", [0, 0.0, 1, 1.0, -0.1, 1.5, float("nan"), "a", None])
def test_bad_test_fraction_is_rejected(test_fraction):
    with pytest.raises(ValueError, match=r"`test_fraction`"):
        load_dataset("digits", test_fraction=test_fraction)


@pytest.mark.parametrize("test_fraction", [0, 1.5])
def test_bad_test_fraction_message_names_range(test_fraction):
    with pytest.raises(ValueError, match=r"`test_fraction` must be in \(0, 1\)"):
        load_dataset("breast-cancer", test_fraction=test_fraction)


@pytest.mark.parametrize("seed", [-1, 1.5, "0", None])
def test_bad_seed_is_rejected(seed):
    with pytest.raises(ValueError, match=r"`seed`"):
        load_dataset("digits", seed=seed)


def test_dataset_is_frozen():
    data = load_dataset("breast-cancer")
    with pytest.raises(AttributeError):
        data.seed = 1


@pytest.mark.parametrize("name", ["breast-cancer", "diabetes"])
def test_mixed_table_is_scikit_learns_table_with_an_id_and_string_categories(name):
    from sklearn.datasets import load_diabetes

    from privaudit.data.tabular import mixed_table

    frame = mixed_table(name)
    raw_x, raw_y = load_diabetes(return_X_y=True, scaled=False) if name == "diabetes" else load_breast_cancer(return_X_y=True)
    assert len(frame) == len(raw_y) and frame["record"].is_unique and frame.columns[0] == "record"
    if name == "diabetes":  # sex is the second feature, 1 or 2 in the raw data
        assert (frame["sex"] == [f"sex-{int(value)}" for value in raw_x[:, 1]]).all()
        assert np.allclose(frame["target"], raw_y)
    else:  # scikit-learn codes malignant as 0
        assert (frame["target"] == np.where(raw_y == 0, "malignant", "benign")).all()
        assert np.allclose(frame.drop(columns=["record", "target"]).to_numpy(), raw_x)
    with pytest.raises(ValueError, match="`name` must be one of"):
        mixed_table("iris")
