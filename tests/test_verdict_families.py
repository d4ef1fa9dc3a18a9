"""Verdicts, ceilings, sanity warnings and the config record, through the families and the command line.

Independent oracles: the ceiling is the core bound function run on a perfect
attack's scores; the per-step claim is checked by running the accountant
forward at the noise it implies; the inclusion draw by numpy.
"""

from __future__ import annotations

import dataclasses
import json
import types

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli
from verdict_helpers import assert_like_for_like

from privaudit.audits.family_test import FAMILY_FIELDS
from privaudit.audits.registry import get_audit, names
from privaudit.canaries.lm_provenance import LMProvenance
from privaudit.stats.conversions import gaussian_epsilon, gdp_epsilon
from privaudit.stats.one_run_group import per_record_one_run_lower_bound

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
M = 60


def _provenance(folder, *, inclusion_seed: int = 5):
    """A provenance of M word canaries whose flags are the draw its inclusion seed and probability record; one prefix for all."""
    included = np.random.default_rng(inclusion_seed).random(M) < 0.5
    record = LMProvenance(
        design="prefix-suffix",
        span="secret",
        prefixes=("alpha beta ",) * M,
        secrets=tuple(f"w{i} x{i}" for i in range(M)),
        included=tuple(bool(value) for value in included),
        seed=0,
        inclusion_seed=inclusion_seed,
        tokenizer={"vocab_size": 1, "vocab_sha256": "0" * 64},
        settings={"inclusion_prob": 0.5, "copies": 1},
    )
    record.write(folder / "provenance.json")
    return record


def _corpus(rng, count):
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 7)))) for _ in range(count)]


def _audit(folder, synthetic_lines, *extra, family="synthetic-text"):
    (folder / "synthetic.txt").write_text("\n".join(synthetic_lines) + "\n")
    out = folder / "run"
    argv = [
        "audit",
        family,
        "--synthetic",
        folder / "synthetic.txt",
        "--provenance",
        folder / "provenance.json",
        "--output",
        out,
        "--no-history",
        *extra,
    ]
    code, stdout, stderr = run_cli(argv)
    assert code == 0, stderr
    return json.loads((out / "results.json").read_text()), stdout, (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("family", ["synthetic-text", "lm-one-run"])
def test_every_echo_found_puts_the_bound_at_its_ceiling_and_says_so(tmp_path, family):
    rng = np.random.default_rng()
    record = _provenance(tmp_path)
    echoes = [p + s for p, s, keep in zip(record.prefixes, record.secrets, record.included, strict=True) if keep]
    data, stdout, page = _audit(tmp_path, _corpus(rng, 100) + echoes, family=family)
    # the ceiling is the core bound on a perfect attack's scores: every included canary above every other
    member = np.asarray(record.included)
    perfect = per_record_one_run_lower_bound(member + np.linspace(0.0, 0.5, M), member, copies=1, delta=1e-5, methods=("steinke",))
    assert data["auc"] == 1.0 and data["ceiling"]["value"] == pytest.approx(perfect.epsilon, rel=1e-12)
    assert data["bound"]["epsilon"] == pytest.approx(perfect.epsilon, rel=1e-12)  # all guesses right: exactly the ceiling
    assert data["ceiling"]["at_ceiling"] is True
    note = "the truth may be much higher (more canaries would raise the ceiling)"
    assert note in stdout and note in page
    assert data["claim_verdict"] is None and "no claim given" in page
    # the record holds what ran: none of the embedded default's canary, corpus or training settings
    assert not {"num_canaries", "secret_length", "vocab_size", "corpus_chars", "steps", "design"} & set(data["config"])


def test_no_echo_and_no_claim_warns_no_signal_and_a_claim_silences_it(tmp_path):
    rng = np.random.default_rng()
    _provenance(tmp_path)
    corpus = _corpus(rng, 100)  # text of a model trained without the canaries: every canary scores the same
    data, stdout, page = _audit(tmp_path, corpus)
    assert data["auc"] == 0.5 and data["bound"]["epsilon"] == 0.0
    (warning,) = data["sanity_warnings"]
    assert warning.startswith("no signal: check that the model was trained on the corpus with the canaries")
    assert stdout.count("warning: no signal") == 1 and "no signal: check that the model" in page
    assert "the truth may be much higher" not in stdout  # 0 is far from its ceiling
    claimed, stdout, _ = _audit(tmp_path, corpus, "--claimed-epsilon", "4", "--claimed-delta", "1e-5")
    assert claimed["sanity_warnings"] == [] and "warning" not in stdout
    verdict = claimed["claim_verdict"]
    assert verdict["flagged"] is False and verdict["quantity"] == verdict["claim"]["quantity"] == "end-to-end" and verdict["claim"]["source"] == "user"


def test_inverted_inclusion_flags_are_refused_in_one_line(tmp_path):
    record = _provenance(tmp_path)
    raw = json.loads((tmp_path / "provenance.json").read_text())
    assert raw["included"] == (np.random.default_rng(record.inclusion_seed).random(M) < 0.5).tolist()  # the writer's draw
    raw["included"] = [not value for value in raw["included"]]
    (tmp_path / "provenance.json").write_text(json.dumps(raw))
    (tmp_path / "synthetic.txt").write_text("alpha beta\n")
    argv = ["audit", "synthetic-text", "--synthetic", tmp_path / "synthetic.txt", "--provenance", tmp_path / "provenance.json"]
    line = assert_refused([*argv, "--output", tmp_path / "run", "--no-history"], tmp_path / "run", "inclusion flags are not the draw of its inclusion_seed")
    assert "all inverted" in line


def test_a_claim_delta_without_epsilon_is_refused(tmp_path):
    _provenance(tmp_path)
    (tmp_path / "synthetic.txt").write_text("alpha beta\n")
    argv = ["audit", "synthetic-text", "--synthetic", tmp_path / "synthetic.txt", "--provenance", tmp_path / "provenance.json", "--claimed-delta", "1e-5"]
    assert_refused([*argv, "--output", tmp_path / "run", "--no-history"], tmp_path / "run", "`--claimed-delta` needs `--claimed-epsilon`")


def test_dpsgd_converts_an_end_to_end_claim_to_the_per_step_claim_it_implies():
    audit = get_audit("dpsgd")
    pytest.importorskip("torch")
    config = dataclasses.replace(audit.tiny_config(), claimed_epsilon=2.0)
    result = audit.run(config).result
    assert_like_for_like(result)
    verdict = result.claim_verdict
    assert verdict.quantity == "per-step" and verdict.claim.source == "user" and "q = 0.05 and T = 3" in verdict.conversion
    # oracle: the noise at which one step (canary rate 1) is the per-step claim reproduces the end-to-end claim through the accountant
    sigma = 1.0 / float(np.interp(verdict.claim.epsilon, gdp_epsilon(np.linspace(0.01, 3.0, 30000), 1e-5), np.linspace(0.01, 3.0, 30000)))
    assert gaussian_epsilon(sigma, 1e-5, sampling_prob=config.sampling_rate, num_steps=config.num_steps, pessimistic=False) == pytest.approx(2.0, rel=2e-3)
    unclaimed = dataclasses.replace(result, claim_verdict=None)
    assert unclaimed.headline().flag is None
    # the page calls the user's converted value the claim; the accountant's per-step ε is evidence beside it
    from privaudit.report.dpsgd import section

    details = dict(section(result.to_dict(), None).details)
    assert details["your claim, per step (converted)"] == verdict.claim.epsilon and "claimed per-step ε" not in details
    assert details["accountant's per-step ε for the config's σ (evidence)"] == result.claimed_step_epsilon != verdict.claim.epsilon
    assert dict(section(unclaimed.to_dict(), None).details)["claimed per-step ε"] == result.claimed_step_epsilon


# families with a user data, model or training path, the config fields that belong to the embedded default there, and a stand-in result of that path
_USER_PATHS = {
    "mia": (lambda c: types.SimpleNamespace(config=dataclasses.replace(c, data="pool.csv", train="m:train")), {"dataset", "epochs"}),
    "blackbox": (lambda c: types.SimpleNamespace(config=dataclasses.replace(c, data="d.csv", train="m:train")), {"dataset", "architecture", "learning_rate"}),
    "one-run": (
        lambda c: types.SimpleNamespace(config=dataclasses.replace(c, threat_model="black-box", train="m:train")),
        {"architecture", "learning_rate", "clip_norm"},
    ),
    "lm-one-run": (
        lambda c: types.SimpleNamespace(config=c, model="tuned", provenance="p.json", synthetic=None),
        {"num_canaries", "secret_length", "vocab_size", "corpus_chars", "steps"},
    ),
    "synthetic-text": (lambda c: types.SimpleNamespace(config=c, synthetic="s.txt", provenance="p.json"), {"num_canaries", "num_synthetic", "steps"}),
    "synthetic-data": (
        lambda c: types.SimpleNamespace(config=dataclasses.replace(c, train="t.csv", holdout="h.csv", synthetic="s.csv", generator=None, num_canaries=0)),
        {"num_synthetic", "num_shadows", "num_shadow_targets"},
    ),
}
# families whose user path replaces the value itself (a path where the embedded name was) or records its own inputs field by field
_RECORDED_AS_GIVEN = {
    "secret-sharer": "with --model the config is the own-model settings, written field by field (secret_sharer_own)",
    "dpsgd": "--data and --model replace `dataset` and `architecture` by the user's path and factory",
    "fl": "no user path: privaudit's own simulator on its embedded data",
    "panoramia": "with --model the config is the user's inputs, written field by field",
    "mechanism": "--mechanism and --dataset replace the embedded example's values",
}


@pytest.mark.parametrize("name", names())
def test_a_run_on_user_data_records_no_embedded_default_field(name):
    assert (name in _USER_PATHS) != (name in _RECORDED_AS_GIVEN), f"family {name!r} must say how its user path is recorded"
    if name in _RECORDED_AS_GIVEN:
        return
    audit = get_audit(name)
    make, embedded_only = _USER_PATHS[name]
    stand_in = make(audit.default_config())
    assert embedded_only <= audit.result_type.inert_config_fields(stand_in)
    embedded = make(audit.default_config())
    for attribute in ("model", "provenance", "synthetic"):
        if hasattr(embedded, attribute):
            setattr(embedded, attribute, None)
    if name in ("lm-one-run", "synthetic-text"):  # the embedded default's own run keeps every field that ran: all but the family keys, none named
        assert audit.result_type.inert_config_fields(embedded) == frozenset(FAMILY_FIELDS)
