"""Score direction of `privaudit bound`: losses must say lower = member, the default is recorded, and a run that separates the other way warns.

Every number is checked against an independent computation: scikit-learn's
AUC of the negated losses and privaudit.epsilon_lower_bound called on the
negated scores by the test itself, with the same seed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

import privaudit
from privaudit.audits.scores.audit import audit_scores, direction_warning, names_a_loss

metrics = pytest.importorskip("sklearn.metrics")
OPTIONS = ("--higher-is-member", "--lower-is-member")


def write_losses(path, seed, *, column="loss", n=600):
    """Members' losses are smaller (exponential, half the scale): a loss attack separates them, lower = member."""
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    member[:2], member[2:4] = True, False  # both classes present
    loss = rng.exponential(1.0, n) * np.where(member, 0.4, 1.0)
    rows = "".join(f"{value!r},{int(flag)}\n" for value, flag in zip(loss.tolist(), member))
    path.write_text(f"{column},member\n{rows}")
    return loss, member


@pytest.mark.parametrize("seed", [0, 1])
def test_a_loss_column_or_file_is_refused_without_a_direction(tmp_path, seed):
    write_losses(tmp_path / "attack.csv", seed)
    output = tmp_path / "out"
    line = assert_refused(["bound", "--scores", tmp_path / "attack.csv", "--score-col", "loss", "--output", output], output, "`--score-col` 'loss'")
    assert all(option in line for option in OPTIONS)
    np.savetxt(tmp_path / "member_nll.txt", [0.1, 0.2, 0.3])
    np.savetxt(tmp_path / "other.txt", [0.4, 0.5, 0.6])
    line = assert_refused(["bound", "--in", tmp_path / "member_nll.txt", "--out", tmp_path / "other.txt", "--output", output], output, "`--in`")
    assert all(option in line for option in OPTIONS)
    both = ["bound", "--scores", tmp_path / "attack.csv", "--score-col", "loss", *OPTIONS, "--output", output]
    assert_refused(both, output, "not both")


def test_loss_words_in_any_spelling():
    for name in (
        "loss",
        "val_loss",
        "train-losses.csv",
        "NLL",
        "perplexity",
        "ppl",
        "log-perplexity",
        "logPerplexity",
        "cross-entropy",
        "CrossEntropy",
        "xent",
    ):
        assert names_a_loss(name), name
    for name in ("score", "confidence", "logit", "likelihood", "member_score", "glossary", "close"):
        assert not names_a_loss(name), name


@pytest.mark.parametrize("seed", [0, 7])
def test_lower_is_member_equals_the_bound_on_negated_scores(tmp_path, seed):
    loss, member = write_losses(tmp_path / "attack.csv", seed)
    base = ["bound", "--scores", tmp_path / "attack.csv", "--score-col", "loss", "--lower-is-member", "--seed", seed, "--json"]
    code, stdout, stderr = run_cli(base)
    assert code == 0 and stderr == "", stderr
    data = json.loads(stdout)
    assert data["auc"] == pytest.approx(metrics.roc_auc_score(member, -loss), abs=1e-12)
    expected = privaudit.epsilon_lower_bound(-loss[member], -loss[~member], delta=1e-5, seed=seed)
    assert data["epsilon"] == expected.epsilon and data["threshold"] == expected.threshold and data["epsilon"] > 0
    assert data["conventions"] == [{"name": "score direction", "value": "lower is member", "decided": "explicit", "evidence": "--lower-is-member"}]
    # a threshold fixed in advance is on the losses' own scale: members are those at or below it
    code, stdout, _ = run_cli(base + ["--threshold", "0.3", "--method", "eps-delta"])
    fixed = privaudit.epsilon_lower_bound(-loss[member], -loss[~member], delta=1e-5, method="eps-delta", threshold=-0.3)
    brute_fp, brute_fn = int((loss[~member] <= 0.3).sum()), int((loss[member] > 0.3).sum())
    assert json.loads(stdout)["epsilon"] == fixed.epsilon and (fixed.false_positives, fixed.false_negatives) == (brute_fp, brute_fn)


def test_the_default_is_recorded_and_scores_against_it_warn_once(tmp_path):
    loss, member = write_losses(tmp_path / "attack.csv", 3, column="s")  # nothing in the names says loss
    output = tmp_path / "run"
    code, stdout, stderr = run_cli(["bound", "--scores", tmp_path / "attack.csv", "--score-col", "s", "--output", output])
    lines = stderr.strip().splitlines()
    assert code == 0 and len(lines) == 1 and lines[0].startswith("warning: ") and "--lower-is-member" in lines[0], stderr
    results = json.loads((output / "results.json").read_text())
    (convention,) = results["conventions"]
    assert (convention["name"], convention["value"], convention["decided"]) == ("score direction", "higher is member", "default")
    assert "higher is member (default)" in stdout
    assert results["auc"] == pytest.approx(metrics.roc_auc_score(member, loss), abs=1e-12) and results["auc_upper"] < 0.5
    # the same scores the right way round: no warning; and --higher-is-member is recorded as given
    assert run_cli(["bound", "--scores", tmp_path / "attack.csv", "--score-col", "s", "--lower-is-member"])[2] == ""
    code, stdout, stderr = run_cli(["bound", "--scores", tmp_path / "attack.csv", "--score-col", "s", "--higher-is-member", "--json"])
    assert json.loads(stdout)["conventions"][0]["decided"] == "explicit" and "--lower-is-member" in stderr
    # members' scores higher, but declared lower = member: the warning names the other option
    (tmp_path / "negated.csv").write_text("s,member\n" + "".join(f"{-value!r},{int(flag)}\n" for value, flag in zip(loss.tolist(), member)))
    stderr = run_cli(["bound", "--scores", tmp_path / "negated.csv", "--score-col", "s", "--lower-is-member"])[2]
    assert stderr.count("\n") == 1 and "rerun with --higher-is-member" in stderr


def test_the_direction_warning_fires_at_most_at_its_level_under_no_separation():
    # scores with no signal: the warning's upper confidence limit of the AUC is below 1/2 in at most ~5% of runs
    rng = np.random.default_rng(12)
    runs = 200
    warned = sum(direction_warning(audit_scores(rng.normal(size=60), rng.normal(size=60), delta=1e-5).result) is not None for _ in range(runs))
    assert warned <= 22  # Binomial(200, 0.05) exceeds 22 with probability < 1e-3
