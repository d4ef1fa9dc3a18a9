"""``privaudit audit lm-one-run`` on a GPT-2-style model privaudit did not build: scores, AUC, TPR at 1% FPR and the bound from results.json; refused input."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

from cli_helpers import assert_refused, run_cli  # noqa: E402
from test_lm_canaries import TEXTS, span_log_likelihoods  # noqa: E402

from privaudit.audits.lm import scores as lm_one_run_scores  # noqa: E402
from privaudit.audits.lm.tiny import bpe_tokenizer, fine_tune, tiny_gpt2  # noqa: E402
from privaudit.canaries.lm_provenance import prepare_lm_canaries  # noqa: E402
from privaudit.stats.one_run_combined import one_run_lower_bound  # noqa: E402


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Directories of a user's fine-tune: the resized base model, the fine-tuned model, the un-resized model, another tokenizer's model; the provenance."""
    root = tmp_path_factory.mktemp("lm")
    tokenizer = bpe_tokenizer(TEXTS, vocab_size=320)
    base = fine_tune(tiny_gpt2(tokenizer, seed=1, n_embd=32), tokenizer, TEXTS, steps=10, seed=2, learning_rate=1e-2)
    provenance, resized, new_tokenizer = prepare_lm_canaries("new-tokens", tokenizer, count=40, seed=7, length=2, model=base, save_to=root / "base")
    provenance.write(root / "provenance.json")
    tuned = fine_tune(resized, new_tokenizer, TEXTS + provenance.included_texts() * 4, steps=20, seed=3, learning_rate=1e-2)
    tuned.save_pretrained(root / "tuned")
    new_tokenizer.save_pretrained(root / "tuned")
    base.save_pretrained(root / "plain")  # the vocabulary not resized
    tokenizer.save_pretrained(root / "plain")
    (root / "weightless").mkdir()
    for item in (root / "tuned").iterdir():  # the config and tokenizer, without the weights
        if item.suffix != ".safetensors" and item.is_file():
            (root / "weightless" / item.name).write_bytes(item.read_bytes())
    tuned.save_pretrained(root / "declared-bos")
    declared = transformers.AutoTokenizer.from_pretrained(root / "tuned")
    declared.bos_token = sorted(declared.get_vocab())[0]  # declared, never added by the tokenizer: how the model was trained is unknown
    declared.save_pretrained(root / "declared-bos")
    tuned.save_pretrained(root / "wrong-tokenizer")
    tokenizer.save_pretrained(root / "wrong-tokenizer")  # the resized model beside the tokenizer from before the canaries
    plain, _, _ = prepare_lm_canaries("random-tokens", bpe_tokenizer(TEXTS, vocab_size=300), count=8, seed=1)
    plain.write(root / "other-tokenizer.json")
    return root, provenance


def _loaded(directory):
    return transformers.AutoModelForCausalLM.from_pretrained(directory).eval(), transformers.AutoTokenizer.from_pretrained(directory)


def test_the_command_reports_the_calibrated_scores_their_auc_tpr_and_one_run_bound(saved, tmp_path):
    root, provenance = saved
    out = tmp_path / "run"
    argv = ["audit", "lm-one-run", "--model", root / "tuned", "--provenance", root / "provenance.json", "--base-model", root / "base"]
    code, _, err = run_cli(argv + ["--canary-copies", "4", "--claimed-epsilon", "4", "--output", out, "--no-history"])
    assert code == 0, err
    data = json.loads((out / "results.json").read_text())
    scores, included = np.array(data["scores"]), np.array(data["included"])
    assert included.tolist() == list(provenance.included) and data["calibrated"] and data["claimed_epsilon"] == 4.0
    (tuned, tokenizer), (base, _) = _loaded(root / "tuned"), _loaded(root / "base")
    args = (tokenizer, provenance.prefixes, provenance.secrets, "secret")
    np.testing.assert_allclose(scores, span_log_likelihoods(tuned, *args) - span_log_likelihoods(base, *args), rtol=0, atol=1e-5)
    assert data["auc"] == pytest.approx(sklearn_metrics.roc_auc_score(included, scores), abs=1e-12)
    inside, outside = scores[included], scores[~included]
    best = max(np.mean(inside >= t) for t in np.r_[np.inf, scores] if np.mean(outside >= t) <= 0.01)  # brute force over thresholds
    assert data["tpr_at_1pct_fpr"] == pytest.approx(best)
    # the fine-tune saw each included canary 4 times: a group's bound at δ' = δ (1 + e^{ε₀/4} + ... ), read as a record's by group privacy
    group = one_run_lower_bound(scores, included, delta=4e-5, confidence=0.95, methods=("steinke",)).epsilon
    step = 1e-5 * sum(np.exp(i * group / 4) for i in range(4))
    bound = one_run_lower_bound(scores, included, delta=step, confidence=0.95, methods=("steinke",)).epsilon / 4
    assert data["bound"]["epsilon"] == pytest.approx(bound) and data["flagged"] == (bound > 4.0) and data["canary_copies"] == 4
    assert {item["name"] for item in data["conventions"]} == {"special tokens", "scored span", "canary copies"}


@pytest.fixture()
def no_scoring(monkeypatch):
    """Scoring fails the test: refusals must come before it."""

    def fail(*_args, **_kwargs):
        raise AssertionError("a canary was scored before the input was refused")

    monkeypatch.setattr(lm_one_run_scores, "canary_log_likelihoods", fail)


@pytest.mark.parametrize(
    ("model", "provenance", "extra", "match"),
    [
        ("plain", "provenance.json", [], "`--model` lacks 120 of the canaries' 120 new tokens"),
        ("tuned", "provenance.json", ["--base-model", "plain"], "`--base-model` lacks 120 of the canaries' 120 new tokens"),
        ("tuned", "other-tokenizer.json", [], "`--model`'s tokenizer is not the provenance's"),
        ("wrong-tokenizer", "provenance.json", [], "`--model`: its tokenizer does not match its model: the model has"),
        ("weightless", "provenance.json", [], "holds a config.json but no weights"),
        ("declared-bos", "provenance.json", ["--canary-copies", "1"], "pass --bos prepend (trained with"),
        ("tuned", "missing.json", [], "`--provenance` must be an existing file"),
        ("tuned", None, [], "`--model` and `--provenance` must be given together"),
        ("tuned", "provenance.json", ["--delta", "1.5"], "`--delta` must be in (0, 1)"),
        ("tuned", "provenance.json", ["--bos", "maybe"], "`--bos` must be one of 'auto', 'prepend', 'none'"),
        ("tuned", "provenance.json", [], "`--canary-copies` must be given (an integer >= 1)"),
        ("tuned", "provenance.json", ["--canary-copies", "0"], "`--canary-copies` must be"),
    ],
)
def test_bad_input_is_refused_in_one_line_before_any_scoring(saved, tmp_path, no_scoring, model, provenance, extra, match):
    root, _ = saved
    argv = ["audit", "lm-one-run", "--model", root / model, "--output", tmp_path / "out", "--no-history"]
    argv += ["--provenance", root / provenance] if provenance else []
    argv += [root / item if item in ("plain", "tuned") else item for item in extra]
    line = assert_refused(argv, tmp_path / "out", match)
    assert "--bos-corpus" not in line  # lm-one-run has no such option: its advice names only its own
    assert line.startswith(("error: `--model`", "error: `--base-model`", "error: `--bos`")) or model == "tuned", line


def test_a_provenance_that_is_not_one_is_refused(saved, tmp_path, no_scoring):
    root, _ = saved
    (tmp_path / "p.json").write_text(json.dumps({"format": "something else"}))
    argv = ["audit", "lm-one-run", "--model", root / "tuned", "--provenance", tmp_path / "p.json", "--output", tmp_path / "out", "--no-history"]
    assert_refused(argv, tmp_path / "out", "must be a provenance of LM canaries")


def test_the_embedded_default_is_reproducible_from_its_seed_and_leaves_the_global_rngs():
    from rng_helpers import assert_same_rng_states, global_rng_states, seed_everything

    from privaudit.audits.config import with_overrides
    from privaudit.audits.lm.audit import AUDIT
    from privaudit.observation.one_run import draw_inclusion

    config = with_overrides(AUDIT.tiny_config(), {"num_canaries": 12, "base_steps": 2, "steps": 2, "design": "high-temperature"})
    seed_everything(5)
    before = global_rng_states()
    first = AUDIT.run(config).result
    assert_same_rng_states(before, global_rng_states())
    second = AUDIT.run(config).result
    assert first.scores == second.scores and first.included == second.included
    assert list(first.included) == draw_inclusion(12, 0.5, first.inclusion_seed).tolist()


def test_the_command_keeps_the_libraries_log_records_off_stderr_and_in_the_record(tmp_path):
    # a fresh process: transformers is first imported inside the audit, where it attaches its own stderr handler
    import dataclasses
    import os
    import subprocess
    import sys

    from privaudit.audits.lm.audit import AUDIT

    config = tmp_path / "tiny.json"
    config.write_text(json.dumps(dataclasses.asdict(AUDIT.tiny_config())))
    command = [sys.executable, "-m", "privaudit", "audit", "lm-one-run", "--config", config, "--output", tmp_path / "run", "--no-history"]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=600)
    assert done.returncode == 0, done.stderr
    assert all(line.startswith("stage: ") for line in done.stderr.splitlines()), done.stderr  # only a log's lines for long stages
    captured = json.loads((tmp_path / "run" / "results.json").read_text())["captured_warnings"]
    assert any(item["source"].startswith("transformers") for item in captured)  # resizing the embeddings for new tokens logs a warning
