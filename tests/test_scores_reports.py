"""Scores in, report out (issue 17 §5): ``bound`` and ``exposure`` with ``--output`` write a schema-valid results.json and report.html.

The numbers they print are checked against independent computations
(scikit-learn's AUC, a brute-force threshold loop for TPR at fixed FPR, a
brute-force rank count for exposure); equal input gives equal output; bad
input is one ``error:`` line, exit code 2 and no output folder.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from privaudit.schemas import load_schema

jsonschema = pytest.importorskip("jsonschema")
metrics = pytest.importorskip("sklearn.metrics")

FPRS = (0.001, 0.01, 0.1)
VOLATILE = ("created_at", "machine")  # the only fields allowed to differ between two runs on equal input


def validate(data):
    jsonschema.Draft202012Validator(load_schema()).validate(data)


def refused(cli, argv, output, match):
    code, stdout, stderr = cli(argv)
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and match in lines[0], (code, stderr)
    assert stdout == "" and not output.exists()


def table_value(stdout, quantity):
    """The value printed in the table row whose first cell is ``quantity``."""
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in re.split(r"[│┃]", line) if cell.strip()]
        if len(cells) == 2 and cells[0] == quantity:
            return float(cells[1])
    raise AssertionError(f"no row {quantity!r} in\n{stdout}")


def brute_tpr_at_fpr(scores, member, target):
    """Highest TPR over every threshold t (attack: member iff score >= t) whose FPR is at most ``target``."""
    best = 0.0
    for threshold in [math.inf, *sorted(set(scores.tolist()))]:
        predicted = scores >= threshold
        fpr = predicted[~member].mean()
        if fpr <= target:
            best = max(best, predicted[member].mean())
    return best


def without_volatile(data):
    return {key: value for key, value in data.items() if key not in VOLATILE}


@pytest.fixture(scope="module")
def score_csv(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scores")
    rng = np.random.default_rng(17)
    member = rng.random(1200) < 0.5  # independent fair coins: the one-run bound applies
    scores = rng.normal(0.0, 1.0, member.size) + 1.5 * member
    path = folder / "attack.csv"
    lines = ["id,s,m"] + [f"ex{i},{float(s)!r},{int(m)}" for i, (s, m) in enumerate(zip(scores, member, strict=True))]
    path.write_text("\n".join(lines) + "\n")
    return path, scores, member


def test_bound_output_prints_the_metrics_and_writes_a_valid_report(cli, score_csv, tmp_path):
    from privaudit.audits.scores.audit import ScoresResult

    path, scores, member = score_csv
    output = tmp_path / "run"
    code, stdout, stderr = cli(["bound", "--scores", path, "--score-col", "s", "--member-col", "m", "--output", output])
    assert code == 0, stderr
    auc = metrics.roc_auc_score(member, scores)
    assert table_value(stdout, "AUC (in-sample statistic)") == pytest.approx(auc, rel=1e-5)
    for level in FPRS:
        assert table_value(stdout, f"TPR at FPR {level:g}") == pytest.approx(brute_tpr_at_fpr(scores, member, level), rel=1e-5, abs=1e-12)

    code, printed, _ = cli(["bound", "--scores", path, "--score-col", "s", "--member-col", "m", "--json"])
    printed = json.loads(printed)
    assert printed["auc"] == pytest.approx(auc, abs=1e-12)
    assert printed["tpr_at_fpr"] == {f"{level:g}": pytest.approx(brute_tpr_at_fpr(scores, member, level), abs=1e-12) for level in FPRS}

    assert sorted(p.name for p in output.iterdir()) == ["report.html", "results.json", "roc.png", "scores.png", "tradeoff.png"]
    data = json.loads((output / "results.json").read_text())
    validate(data)
    assert data["audit"] == "scores" and data["auc"] == pytest.approx(auc, abs=1e-12)
    assert data["tradeoff"]["against"] == "lower bound" and data["tradeoff"]["epsilon"] == data["bound"]["epsilon"]
    assert ScoresResult.from_dict(data).headline().value == data["bound"]["epsilon"]  # the typed result reads the file back
    page = (output / "report.html").read_text(encoding="utf-8")
    headline = f"ε lower bound (gdp, clopper-pearson, δ = 1e-05): {data['bound']['epsilon']:.4g}"
    assert headline in page and "<script" not in page and page.count('src="data:image/png;base64,') == 3
    assert "Trade-off curve against the curve of the bound&#x27;s own ε" in page

    # the same page `privaudit report` builds from the folder, apart from the time it was generated
    code, _, stderr = cli(["report", output, "--output", tmp_path / "again.html"])
    assert code == 0, stderr
    stamp = re.compile(r"Generated [^.]*\.")
    assert stamp.sub("", page) == stamp.sub("", (tmp_path / "again.html").read_text(encoding="utf-8"))


def test_a_claimed_epsilon_is_the_reference_of_the_tradeoff(cli, score_csv, tmp_path):
    path, _, _ = score_csv
    output = tmp_path / "claim"
    argv = ["bound", "--scores", path, "--score-col", "s", "--member-col", "m", "--claimed-epsilon", "0.5", "--quantity", "end-to-end", "--output", output]
    code, stdout, stderr = cli(argv)
    assert code == 0, stderr
    assert "flagged (bound exceeds the claim)" in stdout
    data = json.loads((output / "results.json").read_text())
    assert data["tradeoff"]["against"] == "claimed epsilon" and data["tradeoff"]["epsilon"] == 0.5
    verdict = data["claim_verdict"]
    assert verdict["quantity"] == verdict["claim"]["quantity"] == "end-to-end" and verdict["flagged"] == (data["bound"]["epsilon"] > 0.5)
    assert "Trade-off curve against the claimed ε" in (output / "report.html").read_text(encoding="utf-8")


def test_bound_is_repeatable(cli, score_csv, tmp_path):
    path, _, _ = score_csv
    output = tmp_path / "run"
    argv = ["bound", "--scores", path, "--score-col", "s", "--member-col", "m", "--one-run", "--output", output]
    first = cli(argv)
    first_results = json.loads((output / "results.json").read_text())
    second = cli(argv)
    second_results = json.loads((output / "results.json").read_text())
    assert first[0] == second[0] == 0
    assert first[1].encode() == second[1].encode()  # byte-identical stdout
    assert without_volatile(first_results) == without_volatile(second_results)
    assert first_results["seed"] == 0 and first_results["one_run"]["epsilon"] == second_results["one_run"]["epsilon"]


def test_one_run_bound_on_randomised_membership(cli, score_csv, tmp_path):
    from privaudit import one_run_lower_bound

    path, scores, member = score_csv
    code, stdout, stderr = cli(["bound", "--scores", path, "--score-col", "s", "--member-col", "m", "--one-run", "--delta", "1e-5"])
    assert code == 0, stderr
    ordered = np.concatenate([scores[member], scores[~member]])  # the audit's order: members first
    expected = one_run_lower_bound(ordered, np.r_[np.ones(member.sum(), bool), np.zeros((~member).sum(), bool)], delta=1e-5, confidence=0.95)
    row = next(line for line in stdout.splitlines() if "one-run lower bound" in line)
    value = float([cell.strip() for cell in row.split("│") if cell.strip()][-1])
    assert value == pytest.approx(expected.epsilon, rel=1e-5) and expected.epsilon > 0
    code, stdout, _ = cli(["bound", "--scores", path, "--score-col", "s", "--member-col", "m"])
    assert "one-run" not in stdout


@pytest.fixture()
def canary_files(tmp_path):
    rng = np.random.default_rng(3)
    references = rng.normal(0.0, 1.0, 500)
    references[:5] = [-1.0, -1.0, 0.25, 0.25, 0.25]  # ties with canaries: they count against the canary
    insertions = np.array([1, 2, 4, 8, 16, 1])
    losses = np.r_[-0.3 * insertions[:5] + rng.normal(0.0, 0.5, 5), 0.25]
    losses[1] = -1.0
    texts = ["my pin is 0042", 'the code, "quoted"', "<b>html</b>", "id-3", "id-4", "id-5"]
    canaries = tmp_path / "canaries.csv"
    rows = ["text,insertions,loss"] + [f'"{t.replace(chr(34), chr(34) * 2)}",{k},{float(v)!r}' for t, k, v in zip(texts, insertions, losses, strict=True)]
    canaries.write_text("\n".join(rows) + "\n")
    reference_file = tmp_path / "references.txt"
    reference_file.write_text("\n".join(repr(float(v)) for v in references) + "\n")
    return canaries, reference_file, losses, references, texts, insertions


def test_exposure_output_matches_a_brute_force_rank(cli, canary_files, tmp_path):
    from privaudit.audits.exposure.audit import ExposureAuditResult
    from privaudit.stats.exposure import epsilon_from_exposure, random_guessing_exposure

    canaries, references_file, losses, references, texts, insertions = canary_files
    output = tmp_path / "exposure"
    argv = ["exposure", "--canaries", canaries, "--references", references_file, "--text-col", "text", "--insertions-col", "insertions"]
    code, stdout, stderr = cli([*argv, "--output", output])
    assert code == 0, stderr
    assert sorted(p.name for p in output.iterdir()) == ["exposure.png", "report.html", "results.json"]
    data = json.loads((output / "results.json").read_text())
    validate(data)
    n = references.size
    brute_ranks = [1 + sum(1 for r in references if r <= loss) for loss in losses]
    assert [c["rank"] for c in data["canaries"]] == brute_ranks
    assert [c["exposure"] for c in data["canaries"]] == pytest.approx([math.log2(n) - math.log2(r) for r in brute_ranks], abs=1e-12)
    assert [c["text"] for c in data["canaries"]] == texts and [c["insertions"] for c in data["canaries"]] == insertions.tolist()
    baseline = random_guessing_exposure(n)
    assert data["baselines"]["mean"] == pytest.approx(baseline.mean) and data["baselines"]["median"] == pytest.approx(baseline.median)
    bound = epsilon_from_exposure(losses, references, duplicates=16)
    assert data["epsilon_bound"]["epsilon"] == pytest.approx(bound.epsilon, abs=1e-12) and data["epsilon_bound"]["duplicates"] == 16
    page = (output / "report.html").read_text(encoding="utf-8")
    top = max(math.log2(n) - math.log2(r) for r in brute_ranks)
    # the brute force's math.log2 and privaudit's np.log2 may differ in the last bits: compare the number, then the page against results.json
    recorded = max(c["exposure"] for c in data["canaries"])
    assert recorded == pytest.approx(top, abs=1e-12)
    assert f"largest canary exposure (sampled, bits): {recorded:.4g}" in page
    assert "&lt;b&gt;html&lt;/b&gt;" in page and "<b>html</b>" not in page and "group of 16" in page
    for text in texts[:2]:
        assert text in stdout or text[:20] in stdout
    assert ExposureAuditResult.from_dict(data).headline().value == pytest.approx(top)
    code, _, stderr = cli(["report", output, "--output", tmp_path / "again.html"])  # `privaudit report` reads the folder too
    assert code == 0 and "Canary exposure" in (tmp_path / "again.html").read_text(encoding="utf-8"), stderr

    # without insertions: exposures and baselines, and no ε (a canary inserted k times bounds kε)
    code, stdout, _ = cli(["exposure", "--canaries", canaries, "--references", references_file, "--loss-col", "loss", "--output", tmp_path / "plain"])
    plain = json.loads((tmp_path / "plain" / "results.json").read_text())
    assert code == 0 and plain["epsilon_bound"] is None and "not computed" in stdout
    assert [c["exposure"] for c in plain["canaries"]] == [c["exposure"] for c in data["canaries"]]
    validate(plain)


def test_exposure_is_repeatable(cli, canary_files, tmp_path):
    canaries, references, *_ = canary_files
    argv = ["exposure", "--canaries", canaries, "--references", references, "--loss-col", "loss", "--insertions", "3", "--output", tmp_path / "e"]
    first = cli(argv)
    first_results = json.loads((tmp_path / "e" / "results.json").read_text())
    second = cli(argv)
    assert first[0] == second[0] == 0 and first[1].encode() == second[1].encode()
    assert without_volatile(first_results) == without_volatile(json.loads((tmp_path / "e" / "results.json").read_text()))
    assert first_results["epsilon_bound"]["duplicates"] == 3


@pytest.mark.parametrize(
    ("content", "extra", "match"),
    [
        ("s,x\n1.0,1\n0.5,0\n", [], "`--member-col`"),
        ("id,m\na,1\nb,0\n", [], "`--score-col`"),
        ("s,m\n1.0,1\nhigh,0\n", [], "column `s` must be a number"),
        ("s,m\n1.0,1\nnan,0\n", [], "must be finite"),
        ("s,m\n1.0,maybe\n0.5,0\n", [], "column `m` must be 1/0"),
        ("s,m\n1.0,1\n0.5,1\n", [], "must have members and non-members"),
        ("s,m\n1.0,1\n0.5,0\n", ["--claimed-epsilon", "-1"], "`--claimed-epsilon` must be in (0, inf), got -1"),
        ("s,m\n1.0,1\n0.5,0\n", ["--claimed-epsilon", "1"], "`--quantity` must be given with `--claimed-epsilon`"),
        ("s,m\n1.0,1\n0.5,0\n", ["--claimed-epsilon", "1", "--quantity", "per-step"], "give `--claim-sampling-rate` and `--claim-steps`"),
    ],
)
def test_bad_score_files_are_refused(cli, tmp_path, content, extra, match):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    output = tmp_path / "out"
    refused(cli, ["bound", "--scores", path, "--score-col", "s", "--member-col", "m", *extra, "--output", output], output, match)


@pytest.mark.parametrize(
    ("content", "extra", "match"),
    [
        ("text,loss\na,1.0\n", ["--loss-col", "nll"], "`--loss-col`"),
        ("text,loss\na,1.0\n", ["--text-col", "secret"], "`--text-col`"),
        ("text,loss\na,one\n", ["--text-col", "text"], "column `loss` must be a number"),
        ("text,insertions,loss\na,0,1.0\n", ["--insertions-col", "insertions"], "must be an integer >= 1"),
        ("text,insertions,loss\na,2.5,1.0\n", ["--insertions-col", "insertions"], "must be an integer >= 1"),
        ("text,insertions,loss\na,2,1.0\n", ["--insertions-col", "insertions", "--insertions", "2"], "not both"),
        ("1.0\n", ["--insertions", "0"], "`--insertions` must be an integer >= 1"),
        ("1.0\n", ["--confidence", "1.5"], "`--confidence` must be in (0, 1)"),
    ],
)
def test_bad_canary_files_are_refused(cli, tmp_path, content, extra, match):
    canaries = tmp_path / "canaries.csv"
    canaries.write_text(content)
    references = tmp_path / "references.txt"
    references.write_text("0.5\n1.5\n2.5\n")
    output = tmp_path / "out"
    refused(cli, ["exposure", "--canaries", canaries, "--references", references, *extra, "--output", output], output, match)


def test_a_failing_report_leaves_no_output(cli, score_csv, tmp_path, monkeypatch):
    import privaudit.report.html as html

    def broken(*args, **kwargs):
        raise ValueError("the report could not be written")

    monkeypatch.setattr(html, "write_report", broken)
    path, _, _ = score_csv
    output = tmp_path / "run"
    refused(cli, ["bound", "--scores", path, "--score-col", "s", "--member-col", "m", "--output", output], output, "the report could not be written")
    assert [p.name for p in tmp_path.iterdir()] == []
