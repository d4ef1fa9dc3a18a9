"""Tables as they come: text ids kept verbatim, text labels mapped in sorted order, missing values refused by column, --train gets a DataFrame.

The acceptance case is the hospital's: a CSV with ``patient_id`` strings
("P-00017", ...), ``diagnosis`` strings ("malignant"/"benign") in the fifth
column and named features, audited with a random forest whose
ColumnTransformer selects columns by name. ``audit mia`` runs on it with no
conversion, and the report names "P-00017".
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

from privaudit._core.labelled import read_labelled

sklearn = pytest.importorskip("sklearn")
pytest.importorskip("pandas")

HOSPITAL_TRAIN = '''
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def train(x_train, y_train, *, seed):
    """Selects its columns by name: works only when x_train is a DataFrame with the file's column names."""
    columns = ColumnTransformer([("scaled", StandardScaler(), ["mean radius", "mean texture", "mean area", "mean smoothness"])], remainder="drop")
    return make_pipeline(columns, RandomForestClassifier(n_estimators=10, random_state=seed)).fit(x_train, y_train)
'''


def _hospital(folder, rows: int = 120) -> tuple:
    """The hospital's CSV from scikit-learn's breast cancer data: patient_id first, diagnosis fifth, named features."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    names = [str(name) for name in data.feature_names[:8]]
    ids = [f"P-{i + 10:05d}" for i in range(rows)]
    path = folder / "hospital.csv"
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["patient_id", *names[:3], "diagnosis", *names[3:]])
        for i in range(rows):
            cells = [f"{value:.6g}" for value in data.data[i, :8]]
            writer.writerow([ids[i], *cells[:3], data.target_names[data.target[i]], *cells[3:]])
    return path, ids, names, data


def test_the_hospital_case_runs_with_no_conversion_and_the_report_names_its_patients(tmp_path, monkeypatch):
    path, ids, _, data = _hospital(tmp_path)
    (tmp_path / "hospital_train.py").write_text(HOSPITAL_TRAIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    output = tmp_path / "out"
    argv = [
        "audit",
        "mia",
        "--data",
        path,
        "--label-col",
        "diagnosis",
        "--id-col",
        "patient_id",
        "--train",
        "hospital_train:train",
        "--train-input",
        "dataframe",
    ]
    code, stdout, stderr = run_cli([*argv, "--references", "4", "--workers", "2", "--output", output, "--no-history"])
    assert code == 0, stderr
    results = json.loads((output / "results.json").read_text())
    shown = [record["record_id"] for record in results["most_vulnerable"]]
    assert shown and set(shown) <= set(ids) and all(text.startswith("P-") and len(text) == 7 for text in shown)
    report = (output / "report.html").read_text()
    assert all(text in report for text in shown)
    # the labels: text mapped in sorted order, recorded with the mapping in results.json and the report
    label = next(item for item in results["conventions"] if item["name"] == "label column of --data")
    assert label["value"] == "'diagnosis' (column 5 of 10); text labels mapped in sorted order: 'benign' -> 0, 'malignant' -> 1"
    assert "&#x27;benign&#x27; -&gt; 0, &#x27;malignant&#x27; -&gt; 1" in report


def test_a_known_patient_id_shows_verbatim(tmp_path):
    """The reader keeps "P-00017" as written (it used to become 17), and --members names patients by it."""
    path, ids, names, data = _hospital(tmp_path, rows=40)
    read = read_labelled(path, "--data", label_col="diagnosis", other_cols=("patient_id",), text_cols=("patient_id",))
    assert read.columns["patient_id"].tolist() == ids and "P-00017" in ids
    assert read.feature_names == tuple(names)
    # benign/malignant to 0/1 in sorted order: scikit-learn's target is 0 = malignant, so the codes are 1 - target
    np.testing.assert_array_equal(read.y, 1 - data.target[:40])
    np.testing.assert_allclose(read.x[:, 0], np.round(data.data[:40, 0], 4), rtol=1e-5)
    from privaudit.audits.mia.training import Pool, target_members

    pool = Pool(read.x.astype(np.float32), read.y, str(path), read.label, read.columns)
    (tmp_path / "members.txt").write_text("patient_id\nP-00017\nP-00010\n")
    members, _ = target_members(pool, members=str(tmp_path / "members.txt"), members_col=None, id_col="patient_id")
    assert np.flatnonzero(members).tolist() == [ids.index("P-00010"), ids.index("P-00017")]


def test_an_integer_id_beyond_2_to_the_53_is_kept_exactly(tmp_path):
    big = [str(2**60 + i) for i in range(4)]  # as floats these four collapse into one
    (tmp_path / "d.csv").write_text("id,a,label\n" + "".join(f"{text},{i / 10},{i % 2}\n" for i, text in enumerate(big)))
    read = read_labelled(tmp_path / "d.csv", "--data", other_cols=("id",), text_cols=("id",))
    assert read.columns["id"].tolist() == big and len({float(text) for text in big}) == 1


@pytest.mark.parametrize("cell", ["", "NA", "nan", "?", "null"])
def test_a_missing_value_is_refused_naming_its_column(tmp_path, cell):
    (tmp_path / "d.csv").write_text(f"age,weight,label\n1.5,2.5,0\n2.5,{cell},1\n")
    output = tmp_path / "out"
    line = assert_refused(["audit", "mia", "--data", tmp_path / "d.csv", "--label-col", "label", "--output", output, "--no-history"], output, "column 'weight'")
    assert "missing value" in line and "line 3" in line and "never imputes" in line


def test_a_text_feature_is_refused_naming_the_column_and_the_options(tmp_path):
    (tmp_path / "d.csv").write_text("ward,age,label\nnorth,1.5,0\nsouth,2.5,1\n")
    output = tmp_path / "out"
    line = assert_refused(["audit", "mia", "--data", tmp_path / "d.csv", "--label-col", "label", "--output", output, "--no-history"], output, "column 'ward'")
    assert "`--label-col`" in line and "`--id-col`" in line


def test_an_unknown_label_column_suggests_the_closest_and_lists_every_column(tmp_path):
    names = [f"feature_{i:03d}_with_a_long_name" for i in range(40)]
    header = ",".join([*names, "diagnosis"])
    (tmp_path / "d.csv").write_text(header + "\n" + ",".join(["0.5"] * 40 + ["benign"]) + "\n" + ",".join(["1.5"] * 40 + ["malignant"]) + "\n")
    output = tmp_path / "out"
    line = assert_refused(["audit", "mia", "--data", tmp_path / "d.csv", "--label-col", "diagnosys", "--output", output, "--no-history"], output, "--label-col")
    assert "did you mean 'diagnosis'?" in line
    assert all(repr(name) in line for name in names), "the column list was cut"


def test_train_input_array_keeps_the_bare_array_and_dataframe_needs_names(tmp_path):
    from privaudit.audits.mia.training import Pool, as_train_input, train_input_names

    named = Pool(np.zeros((2, 2), np.float32), np.zeros(2, np.int64), "p.csv", feature_names=("a", "b"))
    assert train_input_names(named) is None and train_input_names(named, "array") is None and train_input_names(named, "dataframe") == ("a", "b")
    frame = as_train_input(np.eye(2, dtype=np.float32), ("a", "b"))
    assert list(frame.columns) == ["a", "b"] and frame["b"].tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="`--train-input` dataframe needs a .csv or .parquet `--data` with a header row"):
        train_input_names(Pool(np.zeros((2, 2), np.float32), np.zeros(2, np.int64), "p.npz"), "dataframe")


def test_a_name_selecting_train_function_on_the_default_array_is_told_about_train_input(tmp_path, monkeypatch):
    path, _, _, _ = _hospital(tmp_path, rows=40)
    (tmp_path / "hospital_train_array.py").write_text(HOSPITAL_TRAIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    output = tmp_path / "out"
    argv = ["audit", "mia", "--data", path, "--label-col", "diagnosis", "--id-col", "patient_id", "--train", "hospital_train_array:train"]
    line = assert_refused([*argv, "--output", output, "--no-history"], output, "`--train` 'hospital_train_array:train' raised ValueError")
    assert "x_train is a float32 NumPy array of shape (8, 8)" in line and "`--train-input dataframe`" in line


def test_a_bogus_train_input_names_the_flag(tmp_path):
    output = tmp_path / "out"
    assert_refused(["audit", "mia", "--train-input", "tensor", "--output", output, "--no-history"], output, "`--train-input` must be one of")


def test_parquet_text_columns_and_missing_values(tmp_path):
    pandas = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pandas.DataFrame({"patient_id": ["P-00017", "P-00018"], "a": [0.5, 1.5], "diagnosis": ["malignant", "benign"]})
    frame.to_parquet(tmp_path / "d.parquet")
    read = read_labelled(tmp_path / "d.parquet", "--data", label_col="diagnosis", other_cols=("patient_id",), text_cols=("patient_id",))
    assert read.columns["patient_id"].tolist() == ["P-00017", "P-00018"] and read.y.tolist() == [1, 0] and read.classes == ("benign", "malignant")
    frame.loc[1, "a"] = None
    frame.to_parquet(tmp_path / "m.parquet")
    with pytest.raises(ValueError, match="column 'a' .* has 1 missing value"):
        read_labelled(tmp_path / "m.parquet", "--data", label_col="diagnosis", other_cols=("patient_id",))
