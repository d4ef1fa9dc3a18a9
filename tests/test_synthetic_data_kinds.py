"""Column kinds of ``audit synthetic-data``: integer codes read as numbers are named on the console with the flag; --categorical/--numeric change the reading.

The table is statsmodels' ``fair`` survey as a user holds it: its ordinal
answers as integer codes (marriage rating 1-5, religiousness 1-4, education
9-20, occupations 1-6), text ids ``R-000123``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")
pytest.importorskip("statsmodels")

CODES = ("rate_marriage", "religious", "educ", "occupation", "occupation_husb")


def fair_as_users_hold_it() -> pd.DataFrame:
    from statsmodels.datasets import fair

    frame = fair.load_pandas().data
    frame = frame.astype({column: int for column in CODES})
    frame.insert(0, "record", [f"R-{i:06d}" for i in range(len(frame))])
    return frame


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """120 training, 120 holdout and 120 released rows of fair, disjoint (a clean release: rows of the same population)."""
    directory = tmp_path_factory.mktemp("fair")
    frame = fair_as_users_hold_it()
    rows = np.random.default_rng(0).permutation(len(frame))
    paths = {}
    for part, chunk in zip(("train", "holdout", "synthetic"), (rows[:120], rows[120:240], rows[240:360]), strict=True):
        paths[part] = directory / f"{part}.csv"
        frame.iloc[np.sort(chunk)].to_csv(paths[part], index=False)
    return paths


def _argv(tables, output, *extra):
    files = ["--train", tables["train"], "--holdout", tables["holdout"], "--synthetic", tables["synthetic"], "--id-col", "record"]
    return ["audit", "synthetic-data", *files, "--output", output, "--no-history", *extra]


def _brute_share_closer(tables, categorical: bool) -> tuple[float, float]:
    """Share of released rows closer to training than to holdout, from the definitions: |a - b| / training range (capped at 1), a category 0/1, the mean.

    (ties counted as not closer, ties counted as closer): coded answers tie often, and a tie's side is a float's last bit.
    """
    train, holdout, released = (pd.read_csv(tables[part]).drop(columns="record") for part in ("train", "holdout", "synthetic"))
    columns = list(train.columns)
    span = {c: float(train[c].max() - train[c].min()) or 1.0 for c in columns}

    def distance(row, table):
        parts = []
        for c in columns:
            if categorical and c in CODES:
                parts.append((table[c].to_numpy() != row[c]).astype(float))
            else:
                parts.append(np.minimum(np.abs(table[c].to_numpy(dtype=float) - float(row[c])) / span[c], 1.0))
        return np.mean(parts, axis=0).min()

    gaps = np.array([distance(row, train) - distance(row, holdout) for _, row in released.iterrows()])
    return float(np.mean(gaps < -1e-9)), float(np.mean(gaps < 1e-9))


def test_integer_codes_are_named_on_the_console_as_numbers_with_the_flag_that_reads_them_as_categories(tables, tmp_path):
    code, stdout, stderr = run_cli(_argv(tables, tmp_path / "numbers"))
    assert code == 0, stderr
    (line,) = [line for line in stdout.splitlines() if line.startswith("note: integer columns read as numbers")]
    named = set(line.split("--categorical ")[1].split(" ")[0].split(","))
    assert all(f"{column} (" in line for column in CODES) and named >= set(CODES)
    assert "affairs" not in named and "yrs_married" not in named  # 0.58, 9.5, ...: not whole numbers
    data = json.loads((tmp_path / "numbers" / "results.json").read_text())
    (convention,) = [c for c in data["conventions"] if c["name"] == "integer columns read as numbers"]
    assert convention["decided"] == "default" and "rate_marriage (5 values)" in convention["value"]
    assert {c["name"]: c["kind"] for c in data["schema"]}["rate_marriage"] == "numeric"
    low, high = _brute_share_closer(tables, categorical=False)
    assert low <= data["dcr"]["share_closer_to_training"] <= high
    # the console shows each attack's TPR at FPR 0 (members above every non-member, counted) beside its TPR at 1% FPR
    for attack in data["attacks"]:
        found = round(attack["tpr"][attack["fpr"].index(0.0)] * attack["num_members"])
        (row,) = [line for line in stdout.splitlines() if f" {attack['attack']}: TPR at FPR 0, at 1% FPR" in line]
        assert f"{found} of {attack['num_members']} above every non-member" in row


def test_categorical_reads_the_codes_as_categories_and_dcr_follows(tables, tmp_path):
    code, stdout, stderr = run_cli(_argv(tables, tmp_path / "categories", "--categorical", ",".join(CODES)))
    assert code == 0, stderr
    (line,) = [line for line in stdout.splitlines() if line.startswith("note: integer columns read as numbers")]
    assert not any(f"{column} (" in line for column in CODES)  # given: no longer named (age, 22 to 42 by 5 in this slice, still is)
    data = json.loads((tmp_path / "categories" / "results.json").read_text())
    kinds = {c["name"]: c["kind"] for c in data["schema"]}
    assert all(kinds[column] == "categorical" for column in CODES) and kinds["age"] == "numeric"
    (given,) = [c for c in data["conventions"] if c["name"] == "column kinds"]
    assert given["decided"] == "explicit" and given["value"] == f"categorical: {', '.join(CODES)}"
    assert data["config"]["categorical"] == list(CODES)
    low, high = _brute_share_closer(tables, categorical=True)
    assert low <= data["dcr"]["share_closer_to_training"] <= high and (low, high) != _brute_share_closer(tables, categorical=False)


def test_numeric_confirms_the_reading_and_silences_the_note(tables, tmp_path):
    code, stdout, stderr = run_cli(_argv(tables, tmp_path / "confirmed", "--numeric", ",".join((*CODES, "age"))))
    assert code == 0, stderr
    assert "integer columns read as numbers" not in stdout


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--categorical", "party"], "`--categorical` names columns that `--train` does not have: ['party']"),
        (["--categorical", "educ", "--numeric", "educ"], "both name ['educ']"),
        (["--numeric", "record"], "`--numeric` names columns that `--train` does not have: ['record']"),  # the id is no feature
    ],
)
def test_bad_kind_flags_are_refused_in_one_line_before_any_work(tables, tmp_path, extra, match):
    assert_refused(_argv(tables, tmp_path / "out", *extra), tmp_path / "out", match)
