"""The one label-column rule of every tabular reader (.npz, .csv, .parquet): explicit, checked when exactly one column could be it, else refused.

Each expected label column is found independently in the test (numpy's own
CSV reader, a plain-Python whole-number test), never by the reader under test.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from privaudit._core.labelled import LABEL_NAMES, label_candidates, read_labelled


@pytest.fixture(params=[0, 1, 20261125])
def global_seed(request):
    """Seeds of the random tables: every assertion holds for any of them."""
    return request.param


def write_csv(path, header, table):
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        if header is not None:
            writer.writerow(header)
        writer.writerows(table.tolist())
    return path


def label_first_flag_last(seed, n=40):
    """The reported file: the label (3 classes) first, two real features, a 0/1 feature last."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 3, n)
    label[:3] = (0, 1, 2)
    flag = 1 - (label % 2)  # never equal to the label column: 0 -> 1, 1 -> 0, 2 -> 1
    return ["label", "a", "b", "flag"], np.column_stack([label, rng.normal(size=(n, 2)), flag]).astype(float)


def test_candidates_match_a_plain_python_whole_number_and_name_test(global_seed):
    rng = np.random.default_rng(global_seed)
    for _ in range(50):
        rows, columns = rng.integers(1, 6), rng.integers(1, 7)
        table = rng.normal(size=(rows, columns)) * 3
        whole = rng.random(columns) < 0.4
        table[:, whole] = np.round(table[:, whole])  # whole numbers of any sign
        names = [str(rng.choice(["a", "x1", "Label", "TARGET", "y", "yy", "class", "labels", "klass"])) for _ in range(columns)]
        expected = [
            index
            for index in range(columns)
            if all(float(value).is_integer() for value in table[:, index]) or names[index].lower() in {"label", "labels", "y", "target", "class"}
        ]
        assert label_candidates(names, table) == expected
        assert label_candidates(None, table) == [index for index in range(columns) if all(float(v).is_integer() for v in table[:, index])]
    assert set(LABEL_NAMES) == {"label", "labels", "y", "target", "class"}


def test_label_first_and_a_binary_feature_last_is_refused_naming_label_col(tmp_path, global_seed):
    header, table = label_first_flag_last(global_seed)
    file = write_csv(tmp_path / "m.csv", header, table)
    with pytest.raises(ValueError, match=r"`--label-col` \(`label_col`\) must name the label column of `--members`") as error:
        read_labelled(file, "--members")
    assert "2 of its columns could be it ('label' (column 1 of 4), 'flag' (column 4 of 4))" in str(error.value)
    data = read_labelled(file, "--members", label_col="label")
    independent = np.loadtxt(file, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(data.y, independent[:, 0])
    np.testing.assert_array_equal(data.x, independent[:, 1:])
    assert not np.array_equal(data.y, independent[:, -1])  # what taking the last column would have read
    assert (data.label.decided, data.label.value, data.label.evidence) == ("explicit", "'label' (column 1 of 4)", "--label-col (config `label_col`)")


@pytest.mark.parametrize("header", [True, False], ids=["header", "no-header"])
def test_the_one_whole_number_column_is_checked_wherever_it_stands(tmp_path, global_seed, header):
    rng = np.random.default_rng(global_seed)
    n, width = 30, int(rng.integers(2, 6))
    position = int(rng.integers(width))
    table = rng.normal(size=(n, width)) + 0.001  # real features: almost surely no whole number in any column
    table[:, position] = rng.integers(0, 4, n)
    names = [f"f{index}" for index in range(width)] if header else None
    file = write_csv(tmp_path / "d.csv", names, table)
    independent = np.loadtxt(file, delimiter=",", skiprows=1 if header else 0)
    assert not any(all(float(v).is_integer() for v in independent[:, index]) for index in range(width) if index != position)
    data = read_labelled(file, "--data")
    np.testing.assert_array_equal(data.y, independent[:, position])
    np.testing.assert_array_equal(data.x, np.delete(independent, position, axis=1))
    shown = f"column {position + 1} of {width}" if not header else f"'f{position}' (column {position + 1} of {width})"
    assert (data.label.name, data.label.decided, data.label.value) == ("label column of --data", "checked", shown)
    assert f"the other {width - 1} hold fractions" in data.label.evidence


@pytest.mark.parametrize(
    ("header", "rows", "match"),
    [
        # labels -1/+1 beside a 0/1 feature: both are whole numbers, so neither is taken
        (["f", "flag", "y"], [[0.5, 0, -1], [1.5, 1, 1]], "2 of its columns could be it ('flag' (column 2 of 3), 'y' (column 3 of 3))"),
        # a column named like a label that holds fractions, beside a 0/1 feature: the feature is not taken
        (["target", "flag"], [[0.5, 0], [1.5, 1]], "2 of its columns could be it ('target' (column 1 of 2), 'flag' (column 2 of 2))"),
        # no column could be the label
        (["a", "b"], [[0.5, 0.25], [1.5, 2.5]], "none of its columns could be it"),
    ],
    ids=["signed-labels", "named-fractions", "none"],
)
def test_ambiguous_or_absent_label_columns_are_refused(tmp_path, header, rows, match):
    file = write_csv(tmp_path / "d.csv", header, np.array(rows, dtype=float))
    with pytest.raises(ValueError, match="`--label-col`") as error:
        read_labelled(file, "--data")
    assert match in str(error.value)


def test_label_col_errors_name_the_option(tmp_path):
    file = write_csv(tmp_path / "d.csv", ["a", "y", "y"], np.array([[0.5, 1, 0], [1.5, 0, 1]], dtype=float))
    with pytest.raises(ValueError, match=r"`--label-col` \(`label_col`\): .* has 2 columns named 'y'"):
        read_labelled(file, "--data", label_col="y")
    with pytest.raises(ValueError, match=r"`--label-col` \(`label_col`\): .* has no column 'label'"):
        read_labelled(file, "--data", label_col="label")
    headerless = write_csv(tmp_path / "n.csv", None, np.array([[0.5, 1], [1.5, 0]], dtype=float))
    with pytest.raises(ValueError, match="needs a header row"):
        read_labelled(headerless, "--data", label_col="y")


def test_npz_labels_are_explicit_by_key_and_refuse_label_col(tmp_path, global_seed):
    rng = np.random.default_rng(global_seed)
    x, y = rng.integers(0, 2, size=(20, 3)).astype(float), rng.integers(0, 3, 20)  # whole-number features: the key decides, not a check
    np.savez(tmp_path / "d.npz", x=x, y=y)
    data = read_labelled(tmp_path / "d.npz", "--data")
    np.testing.assert_array_equal(data.x, x)
    np.testing.assert_array_equal(data.y, y)
    assert (data.label.decided, data.label.value) == ("explicit", "array 'y'")
    with pytest.raises(ValueError, match=r"`--label-col` \(`label_col`\) names a column of a .csv or .parquet file"):
        read_labelled(tmp_path / "d.npz", "--data", label_col="y")


def test_parquet_follows_the_same_rule(tmp_path, global_seed):
    pandas = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    header, table = label_first_flag_last(global_seed)
    frame = pandas.DataFrame(table, columns=header).astype({"label": "int64", "flag": "int64"})
    frame.to_parquet(tmp_path / "m.parquet")
    with pytest.raises(ValueError, match="2 of its columns could be it"):
        read_labelled(tmp_path / "m.parquet", "--members")
    data = read_labelled(tmp_path / "m.parquet", "--members", label_col="label")
    np.testing.assert_array_equal(data.y, frame["label"].to_numpy())
    np.testing.assert_array_equal(data.x, frame[["a", "b", "flag"]].to_numpy(dtype=float))
    assert data.label.value == "'label' (column 1 of 4)"
