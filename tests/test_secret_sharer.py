"""The Secret Sharer audit end to end through the command line (a tiny, fast configuration)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from privaudit.audits.secret_sharer.audit import SecretSharerConfig  # noqa: E402
from privaudit.cli import main  # noqa: E402


def run(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    output = tmp_path_factory.mktemp("runs") / "audit"
    argv = [
        "audit",
        "secret-sharer",
        "--output",
        str(output),
        "--template",
        "pin {digits:3}",
        "--schedule",
        "1,8",
        "--epochs",
        "2",
        "--max-corpus-chars",
        "12000",
        "--hidden",
        "32",
        "--seed",
        "5",
        "--compare-dp",
        "8",
    ]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    return output


def test_audit_writes_results_model_and_plots(audited):
    for name in ("results.json", "model.pt", "provenance.json", "exposure_vs_insertions.png", "perplexity_histogram.png", "dp_comparison.png"):
        assert (audited / name).is_file()
    results = json.loads((audited / "results.json").read_text())
    assert results["space_size"] == 1000 and results["num_references"] == 998  # all other candidates
    canaries = results["canaries"]
    assert sorted(c["repetitions"] for c in canaries) == [1, 8]
    for canary in canaries:
        # exact exposure over R agrees with its definition from the reported rank
        assert canary["exposure_exact"] == pytest.approx(np.log2(1000) - np.log2(canary["rank_exact"]))
        assert 0 <= canary["exposure_sampled"] <= np.log2(998) + 1e-9
        assert isinstance(canary["extracted"], bool) and canary["extraction_queries"] > 0
    assert results["config"]["seed"] == 5
    dp = results["dp_comparison"]
    assert dp["target_epsilon"] == 8 and 0 < dp["epsilon"] <= 8 * 1.01
    assert [c["text"] for c in dp["canaries"]] == [c["text"] for c in canaries]
    provenance = json.loads((audited / "provenance.json").read_text())
    assert [c["text"] for c in provenance["canaries"]] == [c["text"] for c in canaries]


def test_extract_command_reads_the_run(audited, capsys):
    code, out, _ = run(["extract", "--run", str(audited), "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["space_size"] == 1000 and data["queries"] > 0
    assert data["extracted_text"].startswith("pin ")
    assert json.loads((audited / "extraction" / "results.json").read_text()) == data
    assert (audited / "extraction" / "queries.png").is_file()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--template", "no hole"], "at least one hole"),
        (["--template", "pin {hex:3}"], "hole type"),
        (["--schedule", "1,0"], "`--schedule`"),
        (["--schedule", "1,x"], "`--schedule`"),
    ],
)
def test_bad_audit_input_exits_2_without_output(tmp_path, capsys, flags, message):
    output = tmp_path / "never"
    code, out, err = run(["audit", "secret-sharer", "--output", str(output), *flags], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
    assert not output.exists() and list(tmp_path.iterdir()) == []


def test_extract_needs_a_run(tmp_path, capsys):
    code, _, err = run(["extract", "--run", str(tmp_path)], capsys)
    assert code == 2 and "has no model.pt" in err


def test_config_file_round_trip(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"template": "id {letters:2}", "schedule": [2, 4], "epochs": 3}))
    config = SecretSharerConfig.from_json(path)
    assert config.schedule == (2, 4) and config.epochs == 3
    path.write_text(json.dumps({"epoch": 3}))
    with pytest.raises(ValueError, match="unknown keys"):
        SecretSharerConfig.from_json(path)


def test_enumeration_index_matches_enumerate():
    from privaudit.audits.secret_sharer.measure import enumeration_index
    from privaudit.canaries import CanaryFormat

    fmt = CanaryFormat("x {digits:2}{letters:1}")
    for position, canary in enumerate(fmt.enumerate()):
        assert enumeration_index(fmt, canary.secret) == position


def test_guessing_upper_range_holds_by_enumeration():
    from privaudit.audits.secret_sharer.measure import guessing_upper

    space, canaries, alpha = 1000, 5, 0.05
    upper = guessing_upper(space, canaries, alpha)
    exposures = np.log2(space) - np.log2(np.arange(1, space + 1))  # every rank equally likely
    assert np.mean(exposures >= upper - 1e-12) <= alpha / canaries
    assert np.mean(exposures >= upper - 1e-12 - np.log2(11 / 10)) > alpha / canaries  # and it is the tightest
