"""``--family NAME --family-claim VALUE`` on the one-run audits whose canaries share one model: mia --mode canary, synthetic-data, lm-one-run, synthetic-text and PANORAMIA's O(1).

With a family the headline is the order-statistics test against it; each
run's number is recomputed here by an independent call of
:func:`privaudit.stats.one_run_combined.one_run_lower_bound` with ``null``
and ``claim`` on the scores the command recorded, and those scores are
checked against the attack's scores recomputed from the stored model
signals (mia) or the canary coins redrawn from the recorded seed
(synthetic-data). The same run without a family gives exactly the generic
bound recorded beside the family's, and its results.json has neither the
family block nor the family keys. Bad input is refused in one line before
any work.
"""

from __future__ import annotations

import html
import json
import shutil

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

from privaudit.stats.families import EpsilonDelta, GaussianDP
from privaudit.stats.one_run_combined import one_run_lower_bound
from privaudit.stats.one_run_nulls import LaplaceDP, SubsampledGaussianDP

pytest.importorskip("sklearn")

FAMILY_KEYS = {"family", "family_claim", "family_sampling_rate", "family_steps"}


def _mia_pool(tmp_path):
    from privaudit.audits.mia.training import load_pool

    pool = load_pool("digits", None, None)
    np.savez(tmp_path / "pool.npz", x=pool.x[:400], y=pool.y[:400])
    config = {"mode": "canary", "num_canaries": 100, "num_references": 4, "epochs": 60, "data": str(tmp_path / "pool.npz"), "seed": 3}
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path / "config.json", config


def test_mia_canary_family_is_the_order_statistics_test_on_the_recorded_scores_and_the_default_is_unchanged(tmp_path):
    from test_mia_bounds_audit import recomputed

    from privaudit.audits.mia.config import MIAConfig

    config_path, values = _mia_pool(tmp_path)
    output = tmp_path / "out"
    argv = ["audit", "mia", "--config", config_path, "--no-history", "--workers", "1", "--output", output]
    code, stdout, stderr = run_cli([*argv, "--family", "subsampled-gaussian", "--family-claim", 1.0, "--family-sampling-rate", 0.5])
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text())
    block = data["family_test"]
    scores, member = np.array(block["scores"]), np.array(block["member"], dtype=bool)
    # the recorded scores are the chosen attack's, recomputed from the stored signals, and the coins are the design's
    every, coins, _, _ = recomputed(output / "runs", MIAConfig(**values))
    attack = data["bound_design"]["attack"]
    np.testing.assert_allclose(scores, every[attack].ravel(), rtol=1e-9, atol=1e-12)
    assert np.array_equal(member, coins.ravel())
    null = SubsampledGaussianDP(0.5, 1e-5)
    expected = one_run_lower_bound(scores, member, delta=1e-5, confidence=0.95, null=null, claim=1.0)
    assert block["bound"]["epsilon"] == expected.epsilon and block["refuted"] == expected.refuted and block["ceiling"] == expected.ceiling
    assert block["bound"]["method"] == "order-statistics" and block["refuted"].startswith(("not a subsampled Gaussian with sigma >= ", "nothing refuted"))
    assert block["ceiling"] > 1.0 and block["bound"]["candidates"][0][1] == 75  # the claim's design: 75 guesses of 100, a test with power
    # like for like: the family bound against the claim in its family, ε(δ) of the null at σ = 1
    claim_epsilon = null.epsilon(1.0)
    assert block["claim_epsilon"] == claim_epsilon and data["claim_verdict"]["claim"]["epsilon"] == claim_epsilon
    assert data["claim_verdict"]["bound"] == expected.epsilon and data["claim_verdict"]["flagged"] == (expected.epsilon > claim_epsilon)
    assert "transmission dominance" in block["validity"] and "not proven here" in block["validity"]
    assert "refuted: " + block["refuted"] in stdout and "transmission dominance" in stdout
    report = (output / "report.html").read_text()
    assert html.escape(block["refuted"]) in report and "transmission dominance" in report
    assert data["config"]["family"] == "subsampled-gaussian" and data["config"]["family_claim"] == 1.0

    # the same run without a family: the models are reused, the headline is the generic bound recorded beside the family's
    default = tmp_path / "default"
    shutil.copytree(output / "runs", default / "runs")
    code, stdout, stderr = run_cli(["audit", "mia", "--config", config_path, "--no-history", "--workers", "1", "--output", default])
    assert code == 0, stderr
    plain = json.loads((default / "results.json").read_text())
    assert plain["bound"]["epsilon"] == block["generic_epsilon"] == data["bound"]["epsilon"]
    assert plain["bound"]["method"] == "steinke" and "family_test" not in plain and not FAMILY_KEYS & set(plain["config"])
    assert "transmission dominance" not in stdout and "one-run test of Steinke et al." in stdout


def test_synthetic_data_canary_family_is_the_order_statistics_test_on_the_recorded_scores_and_the_default_is_unchanged(tmp_path):
    from privaudit._core.seeding import child_seeds

    output = tmp_path / "out"
    argv = ["audit", "synthetic-data", "--canaries", 40, "--shadows", 0, "--no-sdmetrics", "--no-history", "--workers", "1"]
    code, stdout, stderr = run_cli([*argv, "--output", output, "--family", "laplace", "--family-claim", 2.0, "--claimed-epsilon", 3.0])
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text())
    block = data["family_test"]
    scores, member = np.array(block["scores"]), np.array(block["member"], dtype=bool)
    coins = (
        np.random.default_rng(child_seeds(0, ["release", "split", "dcr", "shadows", "canaries", "coins", "bound-release", "probe"])["coins"]).random(40) < 0.5
    )
    assert np.array_equal(member, coins) and scores.size == 40
    expected = one_run_lower_bound(scores, member, delta=1e-5, confidence=0.95, null=LaplaceDP(1e-5), claim=2.0)
    assert block["bound"]["epsilon"] == expected.epsilon and block["refuted"] == expected.refuted and block["ceiling"] == expected.ceiling
    # the generic claim is held against the generic bound, the family claim against the family bound
    assert block["generic_verdict"]["claim"]["epsilon"] == 3.0 and block["generic_verdict"]["bound"] == data["bound"]["bound"]["epsilon"]
    assert block["ceiling"] > 1.0  # the claim's design has power: all 40 guesses right would refute ε >= 1
    assert block["verdict"]["claim"]["epsilon"] == LaplaceDP(1e-5).epsilon(2.0) and block["verdict"]["claim"]["quantity"] == "per-release"
    assert "refuted: " + block["refuted"] in stdout and "transmission dominance" in stdout
    assert html.escape(block["refuted"]) in (output / "report.html").read_text()

    default = tmp_path / "default"
    code, stdout, stderr = run_cli([*argv, "--output", default, "--claimed-epsilon", 3.0])
    assert code == 0, stderr
    plain = json.loads((default / "results.json").read_text())
    assert plain["bound"]["bound"]["epsilon"] == block["generic_epsilon"] == data["bound"]["bound"]["epsilon"]
    assert plain["bound"]["bound"]["candidates"] == data["bound"]["bound"]["candidates"]
    assert "family_test" not in plain and not FAMILY_KEYS & set(plain["config"]) and "transmission dominance" not in stdout


MIA = ["audit", "mia", "--mode", "canary"]
SYNTHETIC = ["audit", "synthetic-data", "--canaries", "20"]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (
            [*MIA, "--family", "gauss", "--family-claim", "1"],
            "`--family` must be one of 'gdp', 'subsampled-gaussian', 'dpsgd', 'laplace', 'generic', got 'gauss'",
        ),
        ([*MIA, "--family", "gdp"], "`--family-claim` must be given with `--family` 'gdp'"),
        ([*MIA, "--family", "gdp", "--family-claim", "0"], "`--family-claim` must be in (0, inf), got 0.0"),
        ([*MIA, "--family-claim", "1"], "`--family-claim` needs `--family`"),
        ([*MIA, "--family-steps", "10"], "`--family-steps` needs `--family`"),
        (["audit", "mia", "--family", "gdp", "--family-claim", "1"], "`--family` 'gdp' needs `--mode` 'canary'"),
        ([*MIA, "--family", "dpsgd", "--family-claim", "1", "--family-sampling-rate", "0.1"], "`--family-steps` must be given with `--family` 'dpsgd'"),
        ([*MIA, "--family", "dpsgd", "--family-claim", "1", "--family-steps", "5"], "`--family-sampling-rate` must be given with `--family` 'dpsgd'"),
        ([*MIA, "--family", "subsampled-gaussian", "--family-claim", "1", "--family-sampling-rate", "1.5"], "`--family-sampling-rate` must be in (0, 1]"),
        ([*MIA, "--family", "gdp", "--family-claim", "1", "--family-steps", "5"], "`--family-steps` applies only to `--family` dpsgd"),
        ([*MIA, "--family", "generic", "--family-claim", "1", "--claimed-epsilon", "2"], "`--family-claim` 1 and `--claimed-epsilon` 2 are two ε claims"),
        ([*MIA, "--family", "gdp", "--family-claim", "1e-9"], "`--family-claim` 1e-09 states ε = 0"),
        ([*SYNTHETIC, "--family", "laplace"], "`--family-claim` must be given with `--family` 'laplace'"),
        (["audit", "synthetic-data", "--family", "gdp", "--family-claim", "1"], "`--family` 'gdp' needs canaries"),
        ([*SYNTHETIC, "--family", "gdp", "--family-claim", "1e-9"], "`--family-claim` 1e-09 states ε = 0"),
    ],
)
def test_bad_family_input_is_refused_in_one_line_before_any_work(tmp_path, argv, match):
    output = tmp_path / "out"
    assert_refused([*argv, "--output", output, "--no-history"], output, match)


def test_bound_one_run_and_the_audits_share_one_check():
    from privaudit.stats.families import check_null_request

    with pytest.raises(ValueError, match="`family_claim` must be in"):
        check_null_request("gdp", float("nan"), claim_required=False)
    check_null_request("gdp", None, claim_required=False)  # bound --one-run: a claim is optional there
    assert GaussianDP(1e-5).name == "gdp"


LM_TINY = {"num_canaries": 40, "base_steps": 5, "steps": 5, "corpus_chars": 5000, "vocab_size": 300, "canary_repeats": 1}
TEXT_TINY = {"num_canaries": 16, "base_steps": 3, "steps": 5, "num_synthetic": 40, "max_new_tokens": 8, "corpus_chars": 1500, "vocab_size": 300}


@pytest.mark.parametrize(
    ("audit", "tiny", "family", "claim", "null", "powered"),
    [
        ("lm-one-run", LM_TINY, "gdp", 2.0, GaussianDP(1e-5), True),
        # the tiny run's echo scores are mostly tied, and guesses never split ties: 2 guesses are left, as in the generic test beside it
        ("synthetic-text", {**TEXT_TINY, "canary_repeats": 1}, "generic", 8.0, EpsilonDelta(1e-5), False),
    ],
)
def test_lm_families_test_the_claim_on_the_recorded_scores_with_the_generic_bound_unchanged_beside_it(tmp_path, audit, tiny, family, claim, null, powered):
    pytest.importorskip("transformers")
    from privaudit.stats.one_run_group import per_record_one_run_lower_bound

    (tmp_path / "tiny.json").write_text(json.dumps(tiny))
    output = tmp_path / "out"
    argv = ["audit", audit, "--config", tmp_path / "tiny.json", "--no-history", "--output", output, "--family", family, "--family-claim", claim]
    code, stdout, stderr = run_cli(argv)
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text())
    block = data["family_test"]
    # the scores and coins the command recorded for every one-run reading, and the family block's own copy of them
    scores, member = np.array(data["scores"]), np.array(data["included"], dtype=bool)
    assert block["scores"] == data["scores"] and block["member"] == data["included"] and data["canary_copies"] == 1
    expected = one_run_lower_bound(scores, member, delta=1e-5, confidence=0.95, null=null, claim=claim)
    assert block["bound"]["epsilon"] == expected.epsilon and block["refuted"] == expected.refuted and block["ceiling"] == expected.ceiling
    assert block["bound"]["candidates"] == [list(candidate) for candidate in expected.candidates]
    assert expected.ceiling > 1.0 if powered else expected.candidates[0][1] < len(scores)
    assert data["claim_verdict"]["claim"]["epsilon"] == null.epsilon(claim) and data["claim_verdict"]["bound"] == expected.epsilon
    # the generic bound beside it is the one the command reports without a family (Steinke et al.'s test, per record)
    generic = per_record_one_run_lower_bound(scores, member, copies=1, delta=1e-5, confidence=0.95, methods=("steinke",))
    assert data["bound"]["epsilon"] == generic.epsilon == block["generic_epsilon"] and data["bound"]["candidates"] == [list(c) for c in generic.candidates]
    assert "refuted: " + block["refuted"] in stdout and "transmission dominance" in stdout
    assert html.escape(block["refuted"]) in (output / "report.html").read_text()


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["audit", "lm-one-run", "--family", "gdp", "--family-claim", "1"], "`--family` 'gdp' needs one copy of each included canary, got 4"),
        (["audit", "lm-one-run", "--family", "gdp", "--family-claim", "1", "--canary-copies", "2"], "needs one copy of each included canary, got 2"),
        (["audit", "lm-one-run", "--family", "laplace"], "`--family-claim` must be given with `--family` 'laplace'"),
        (["audit", "synthetic-text", "--family", "gdp", "--family-claim", "1"], "`--family` 'gdp' needs one copy of each included canary, got 8"),
        (["audit", "synthetic-text", "--family-sampling-rate", "0.1"], "`--family-sampling-rate` needs `--family`"),
    ],
)
def test_bad_lm_family_input_is_refused_in_one_line_before_any_work(tmp_path, argv, match):
    pytest.importorskip("transformers")
    output = tmp_path / "out"
    assert_refused([*argv, "--output", output, "--no-history"], output, match)


# the tiny embedded PANORAMIA case with one target that trains long enough to leak a little through its losses
PANORAMIA_TINY = {
    "targets": {"mlp": {"epochs": 60, "depth": 2}},
    "helper": {"epochs": 2},
    "hidden": 64,
    "num_candidates": 200,
    "generator_epochs": 5,
    "audit_size": 200,
    "classifier_iterations": 10,
    "num_recall_levels": 4,
}


def test_panoramia_o1_family_is_the_order_statistics_test_on_the_recorded_scores_and_the_default_is_unchanged(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("mbi")
    from privaudit.data.statsmodels_data import load_statsmodels_dataset

    (tmp_path / "tiny.json").write_text(json.dumps(PANORAMIA_TINY))
    argv = ["audit", "panoramia", "--config", tmp_path / "tiny.json", "--no-history"]
    output = tmp_path / "out"
    code, stdout, stderr = run_cli([*argv, "--output", output, "--family", "gdp", "--family-claim", 0.5])
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text())
    block = data["family_test"]
    scores, member = np.array(block["scores"]), np.array(block["member"], dtype=bool)
    # the recorded coins are the embedded default's fair coins, redrawn from its seed (0) as it draws them
    rng = np.random.default_rng(np.random.SeedSequence(0).spawn(1)[0])
    rng.permutation(len(load_statsmodels_dataset("fair").x))
    assert np.array_equal(member, rng.random(200) < 0.5) and scores.size == 200
    expected = one_run_lower_bound(scores, member, delta=1e-5, confidence=0.95, null=GaussianDP(1e-5), claim=0.5)
    assert block["bound"]["epsilon"] == expected.epsilon and block["refuted"] == expected.refuted and block["ceiling"] == expected.ceiling
    assert block["bound"]["method"] == "order-statistics" and block["ceiling"] > 1.0
    # the generic bound beside it is the O(1) bound the table reports, recomputed on the same scores
    one_run = data["targets"]["mlp"]["audit"]["one_run"]
    generic = one_run_lower_bound(scores, member, delta=1e-5, confidence=0.95)
    assert block["generic_epsilon"] == one_run["epsilon"] == generic.epsilon and block["generic_verdict"] is None
    # like for like: the family bound against the claim in its family, ε(δ) of 0.5-GDP
    claim_epsilon = GaussianDP(1e-5).epsilon(0.5)
    assert block["claim_epsilon"] == claim_epsilon and data["claim_verdict"]["claim"]["epsilon"] == claim_epsilon
    assert data["claim_verdict"]["bound"] == expected.epsilon and data["claim_verdict"]["flagged"] == (expected.epsilon > claim_epsilon)
    assert "transmission dominance" in block["validity"] and "refuted: " + block["refuted"] in stdout and "transmission dominance" in stdout
    assert html.escape(block["refuted"]) in (output / "report.html").read_text()

    default = tmp_path / "default"
    code, stdout, stderr = run_cli([*argv, "--output", default])
    assert code == 0, stderr
    plain = json.loads((default / "results.json").read_text())
    # float32 training on one CPU in two processes: the same model, so the same O(1) bound, now without the family block
    assert plain["targets"]["mlp"]["audit"]["one_run"] == one_run and plain["claim_verdict"] is None
    assert "family_test" not in plain and not FAMILY_KEYS & set(plain["config"]) and "transmission dominance" not in stdout


@pytest.mark.parametrize(
    ("tiny", "extra", "match"),
    [
        (False, ["--family", "gdp", "--family-claim", "1"], "`--family` 'gdp' needs one O(1) audit: `--model` with `--inclusion-randomised`"),
        (False, ["--model", "m.pt", "--members", "m.npz", "--family", "gdp", "--family-claim", "1"], "`--family` 'gdp' needs one O(1) audit"),
        (False, ["--family-claim", "1"], "`--family-claim` needs `--family`"),
        (True, ["--family", "gdp", "--family-claim", "1e-9"], "`--family-claim` 1e-09 states ε = 0"),
        (True, ["--family", "dpsgd", "--family-claim", "1", "--family-sampling-rate", "0.1"], "`--family-steps` must be given with `--family` 'dpsgd'"),
    ],
)
def test_bad_panoramia_family_input_is_refused_in_one_line_before_any_work(tmp_path, tiny, extra, match):
    if tiny:  # the tiny embedded case has one target: a family is refused there for its own values only
        (tmp_path / "tiny.json").write_text(json.dumps(PANORAMIA_TINY))
        extra = ["--config", tmp_path / "tiny.json", *extra]
    output = tmp_path / "out"
    assert_refused(["audit", "panoramia", *extra, "--output", output, "--no-history"], output, match)
