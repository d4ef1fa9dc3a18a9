"""``privaudit audit mechanism``: the exit status is the verdict, files are read, bad input is refused before any sampling, the report renders."""

from __future__ import annotations

import json
import os

import mechanisms_reference
import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

from privaudit.mechanisms.sampling import PROBE_SIZE

SMALL = ["--samples", "3000", "--pilot-samples", "2000", "--no-history"]


@pytest.fixture()
def files(tmp_path):
    dataset, neighbour = tmp_path / "d.npy", tmp_path / "n.csv"
    np.save(dataset, np.linspace(0.0, 1.0, 10))
    neighbour.write_text("value\n" + "\n".join(str(v) for v in np.append(np.linspace(0.0, 1.0, 10), 1.0)) + "\n")
    return dataset, neighbour


def test_exit_status_is_0_when_the_claim_stands_and_1_when_it_is_rejected(files, tmp_path):
    dataset, neighbour = files
    common = ["--dataset", dataset, "--neighbour", neighbour, "--epsilon", "1", "--delta", "0", *SMALL]
    code, stdout, _ = run_cli(["audit", "mechanism", "--mechanism", "mechanisms_reference:cli_laplace", "--output", tmp_path / "ok", *common])
    stands = json.loads((tmp_path / "ok" / "results.json").read_text())
    assert code == 0 and stands["verdict"] == "not rejected" and stands["pair"]["record"] == [1.0] and stands["pair"]["relation"] == "add-remove"
    code, stdout, _ = run_cli(["audit", "mechanism", "--mechanism", "mechanisms_reference:cli_laplace_half", "--output", tmp_path / "bug", *common])
    rejected = json.loads((tmp_path / "bug" / "results.json").read_text())
    assert code == 1 and rejected["rejected"] and rejected["epsilon"] > 1.0 and "claim rejected at confidence 0.95" in stdout
    assert {"distributions.png", "tradeoff.png"} <= set(os.listdir(tmp_path / "bug"))


def test_the_neighbour_is_searched_under_the_mechanisms_declared_relation(files, tmp_path):
    dataset, _ = files
    argv = [
        "audit",
        "mechanism",
        "--mechanism",
        "mechanisms_reference:cli_laplace",
        "--dataset",
        dataset,
        "--epsilon",
        "1",
        "--output",
        tmp_path / "out",
        *SMALL,
    ]
    code, _, stderr = run_cli(argv)
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert code == 0, stderr
    # 8 neighbours of D (2 removals, 2 extremes added, 2 x 2 random), those of the other datasets D, and the local moves
    assert data["pair"]["searched"] and len(data["pair"]["candidates"]) > 8 and "pairs tried" in data["pair"]["search_budget"]
    relation = next(c for c in data["conventions"] if c["name"] == "neighbouring relation")
    assert relation["decided"] == "explicit" and "neighbouring" in relation["evidence"]


def test_domain_on_the_command_line_bounds_the_searched_records(files, tmp_path):
    dataset, _ = files
    argv = [
        "audit",
        "mechanism",
        "--mechanism",
        "mechanisms_reference:cli_laplace",
        "--dataset",
        dataset,
        "--epsilon",
        "1",
        "--domain",
        "-3,4",
        "--search-steps",
        "0",
    ]
    code, _, stderr = run_cli([*argv, "--output", tmp_path / "out", *SMALL])
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert code == 0, stderr
    domain = next(c for c in data["conventions"] if c["name"] == "record domain")
    assert domain["decided"] == "explicit" and domain["value"] == "[-3, 4]" and "--domain" in domain["evidence"]
    tried = [how for how, _ in data["pair"]["candidates"]]
    assert "add a record at the domain's minimum" in tried and not any(how.startswith("local search") for how in tried)
    assert all(-3.0 <= value <= 4.0 for value in data["pair"]["record"])


@pytest.mark.parametrize(
    ("mechanism", "extra", "match"),
    [
        ("no_such_module:fn", ["--epsilon", "1"], "`--mechanism` 'no_such_module:fn': cannot import 'no_such_module'"),
        ("mechanisms_reference:wrong_shape", ["--epsilon", "1"], "`--mechanism` must return `size` = 2 outputs along the first axis, got shape (3,)"),
        ("mechanisms_reference:returns_nan", ["--epsilon", "1"], "`--mechanism` must return finite numbers"),
        (
            "mechanisms_reference:cli_laplace",
            [],
            "`--epsilon` or `--rho` must be given (the claim under test is yours); `--mechanism` mechanisms_reference:cli_laplace states ε = 1, δ = 0",
        ),
        ("mechanisms_reference:cli_laplace", ["--epsilon", "0"], "`--epsilon` must be > 0, got 0"),
        ("mechanisms_reference:cli_laplace", ["--epsilon", "-1"], "`--epsilon` must be > 0, got -1"),
        ("mechanisms_reference:cli_laplace", ["--epsilon", "1", "--samples", str(10**12)], "needs about"),
        ("mechanisms_reference:cli_laplace_half", [], "`--epsilon` or `--rho` must be given"),
        (
            "mechanisms_reference:cli_laplace",
            ["--epsilon", "1", "--domain", "1,0"],
            "`--domain` must be two comma-separated numbers LOW,HIGH with LOW < HIGH, got '1,0'",
        ),
        ("mechanisms_reference:cli_laplace", ["--epsilon", "1", "--domain", "low,5"], "`--domain` must be two comma-separated numbers"),
    ],
)
def test_bad_input_is_refused_with_one_line_before_any_sampling(mechanism, extra, match, files, tmp_path):
    dataset, neighbour = files
    mechanisms_reference.CALLS.clear()
    argv = [
        "audit",
        "mechanism",
        "--mechanism",
        mechanism,
        "--dataset",
        dataset,
        "--neighbour",
        neighbour,
        "--output",
        tmp_path / "out",
        "--no-history",
        *extra,
    ]
    assert_refused(argv, tmp_path / "out", match)
    assert all(size == PROBE_SIZE for size in mechanisms_reference.CALLS), mechanisms_reference.CALLS  # probed, never sampled


def test_a_dataset_file_that_is_not_npy_or_csv_is_refused(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("1\n2\n")
    assert_refused(
        ["audit", "mechanism", "--dataset", path, "--output", tmp_path / "out", "--no-history"], tmp_path / "out", "`--dataset` must be a .npy or .csv file"
    )


def test_report_renders_in_headless_chromium(files, tmp_path):
    from browser import CONSOLE, chromium, render

    if chromium() is None and not os.environ.get("CI"):
        pytest.skip("no chromium binary on PATH")
    dataset, neighbour = files
    argv = [
        "audit",
        "mechanism",
        "--mechanism",
        "mechanisms_reference:cli_laplace_half",
        "--dataset",
        dataset,
        "--neighbour",
        neighbour,
        "--epsilon",
        "1",
        *SMALL,
    ]
    code, _, _ = run_cli([*argv, "--output", tmp_path / "run"])
    assert code == 1
    code, _, stderr = run_cli(["report", tmp_path / "run", "--output", tmp_path / "report.html"])
    assert code == 0, stderr
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert (
        "claim rejected at confidence 0.95" in page and "D plus the record (1.0,)" in page and "trade-off against the claim" not in page
    )  # captions, not titles
    assert "Empirical trade-off curve of the best statistic" in page and "held-out samples of D and D" in page
    assert not CONSOLE.search(render(chromium(), tmp_path / "report.html", tmp_path / "report.png"))
