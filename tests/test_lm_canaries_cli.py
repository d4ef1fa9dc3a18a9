"""``privaudit canaries lm`` on a tiny GPT-2 saved here: the corpus, provenance and resized model it writes, the audit of a fine-tune of them; refused input."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from cli_helpers import assert_refused, run_cli  # noqa: E402
from rng_helpers import assert_same_rng_states, global_rng_states  # noqa: E402
from test_lm_canaries import TEXTS, span_log_likelihoods  # noqa: E402

from privaudit.audits.lm import scores as lm_one_run_scores  # noqa: E402
from privaudit.audits.lm.tiny import bpe_tokenizer, fine_tune, tiny_gpt2  # noqa: E402
from privaudit.canaries import lm_synthetic  # noqa: E402
from privaudit.canaries.corpus import read_corpus_texts  # noqa: E402
from privaudit.canaries.lm import DESIGNS  # noqa: E402
from privaudit.canaries.lm_corpus import CorpusRecords, corpus_with_canaries  # noqa: E402
from privaudit.canaries.lm_provenance import prepare_lm_canaries, read_lm_provenance, tokenizer_identity  # noqa: E402


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """The user's files: a base model directory, a tokenizer-only directory, another tokenizer's model, and the corpus in three formats."""
    root = tmp_path_factory.mktemp("user")
    tokenizer = bpe_tokenizer(TEXTS, vocab_size=320)
    base = fine_tune(tiny_gpt2(tokenizer, seed=1, n_embd=32), tokenizer, TEXTS, steps=10, seed=2, learning_rate=1e-2)
    base.save_pretrained(root / "base")
    tokenizer.save_pretrained(root / "base")
    tokenizer.save_pretrained(root / "tokenizer-only")
    other = bpe_tokenizer(TEXTS, vocab_size=300)
    tiny_gpt2(other, seed=1, n_embd=32).save_pretrained(root / "other")
    other.save_pretrained(root / "other")
    lines = sorted(set(TEXTS))
    (root / "corpus.txt").write_text("".join(line + "\n" for line in lines * 4), encoding="utf-8")
    (root / "corpus.jsonl").write_text("".join(json.dumps({"id": i, "text": line}) + "\n" for i, line in enumerate(lines * 4)), encoding="utf-8")
    (root / "corpus.csv").write_text("id,text\n" + "".join(f'{i},"{line}"\n' for i, line in enumerate(lines * 4)), encoding="utf-8")
    return root


def _loaded(directory):
    """The model and tokenizer as the command loads them (on the GPU when there is one: high-temperature draws depend on the device)."""
    from privaudit.models.loading import load_model

    loaded = load_model(directory, kind="huggingface")
    return loaded.model, loaded.tokenizer


def _digests(folder):
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.iterdir())}


def _canaries(user, out, *extra):
    code, stdout, stderr = run_cli(["canaries", "lm", "--base-model", user / "base", "--output", out, *extra])
    assert code == 0, stderr
    return stdout


def _check_corpus(original, written, provenance):
    """The written corpus is the original with each included canary once, at its recorded position, and no excluded canary."""
    positions = provenance.settings["positions"]
    included = provenance.included_texts()
    assert [written[position] for position in positions] == included
    assert [text for index, text in enumerate(written) if index not in set(positions)] == original
    # an excluded canary is nowhere (unless a tiny vocabulary drew an included canary's text twice)
    excluded = {text for text, keep in zip(provenance.texts, provenance.included, strict=True) if not keep} - set(included)
    assert not excluded & set(written)


def test_new_token_canaries_the_resized_model_and_the_audit_of_its_fine_tune(user, tmp_path):
    out = tmp_path / "phase1"
    before = _digests(user / "base")
    stdout = _canaries(user, out, "--corpus", user / "corpus.txt", "--count", 24, "--length", 2, "--seed", 3)
    assert _digests(user / "base") == before  # the user's model directory is left as it was
    provenance = read_lm_provenance(out / "provenance.json")
    # the same draw from the library, on the user's model and tokenizer loaded here (on the device the command uses)
    model, tokenizer = _loaded(user / "base")
    expected, _, _ = prepare_lm_canaries("new-tokens", tokenizer, count=24, seed=3, length=2, model=model)
    assert (provenance.design, provenance.span, provenance.secrets, provenance.included) == ("new-tokens", "secret", expected.secrets, expected.included)
    assert list(provenance.included) == (np.random.default_rng(provenance.inclusion_seed).random(24) < 0.5).tolist()
    original = (user / "corpus.txt").read_text(encoding="utf-8").splitlines()
    written = (out / "corpus.txt").read_text(encoding="utf-8").splitlines()
    _check_corpus(original, written, provenance)
    # the resized model is saved for the user's training, and stdout says to fine-tune it
    resized = transformers.AutoModelForCausalLM.from_pretrained(out / "model")
    new_tokenizer = transformers.AutoTokenizer.from_pretrained(out / "model")
    assert (
        tokenizer_identity(new_tokenizer) == provenance.tokenizer and resized.get_input_embeddings().num_embeddings == len(tokenizer) + 72
    )  # 24 canaries of 3 new tokens
    assert set(provenance.new_tokens) <= set(new_tokenizer.get_vocab()) and f"{out / 'model'} (fine-tune this one" in stdout
    assert "--bos prepend or --bos none" in stdout  # the next step names the BOS choice the audit will check (issue 34)
    # the user's fine-tune of the written corpus, then the audit from the saved directories
    tuned = fine_tune(resized, new_tokenizer, written, steps=15, seed=4, learning_rate=1e-2)
    tuned.save_pretrained(tmp_path / "tuned")
    new_tokenizer.save_pretrained(tmp_path / "tuned")
    argv = ["audit", "lm-one-run", "--model", tmp_path / "tuned", "--provenance", out / "provenance.json", "--base-model", out / "model"]
    code, stdout, stderr = run_cli([*argv, "--output", tmp_path / "run", "--no-history"])
    assert code == 0, stderr
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    for quantity, value in (("best of steinke)", data["bound"]["epsilon"]), ("AUC (statistic)", data["auc"]), ("TPR at 1% FPR", data["tpr_at_1pct_fpr"])):
        assert re.search(rf"{re.escape(quantity)}[^│]*│ {re.escape(f'{value:.6g}')} ", stdout), (quantity, value, stdout)  # the printed table
    assert data["included"] == list(provenance.included) and data["design"] == "new-tokens" and data["num_canaries"] == 24
    insertion = next(item for item in data["conventions"] if item["name"] == "canary insertion")
    seed = provenance.settings["positions_seed"]
    assert insertion["decided"] == "default" and insertion["value"] == f"each included canary once in corpus.txt, at record positions drawn from seed {seed}"
    args = (new_tokenizer, provenance.prefixes, provenance.secrets, "secret")
    expected_scores = span_log_likelihoods(tuned.eval(), *args) - span_log_likelihoods(resized.eval(), *args)
    np.testing.assert_allclose(data["scores"], expected_scores, rtol=0, atol=1e-5)


def test_new_rows_expected_saves_the_model_the_library_prepares_with_every_new_row_at_one_start(user, tmp_path):
    _canaries(user, tmp_path / "out", "--corpus", user / "corpus.txt", "--count", 8, "--length", 1, "--seed", 5, "--new-rows", "expected")
    provenance = read_lm_provenance(tmp_path / "out" / "provenance.json")
    model, tokenizer = _loaded(user / "base")
    _, prepared, _ = prepare_lm_canaries("new-tokens", tokenizer, count=8, seed=5, length=1, model=model, new_rows="expected")
    saved = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out" / "model")
    rows = saved.get_output_embeddings().weight.detach()[len(tokenizer) :]
    torch.testing.assert_close(rows, prepared.get_output_embeddings().weight.detach()[len(tokenizer) :].cpu(), rtol=0, atol=0)
    assert provenance.settings["new_rows"] == "expected" and len(rows) == 16 and torch.equal(rows, rows[:1].expand_as(rows))
    _, mean_start, _ = prepare_lm_canaries("new-tokens", tokenizer, count=8, seed=5, length=1, model=model)
    assert (rows[0] - mean_start.get_output_embeddings().weight.detach()[-1].cpu()).abs().max() > 1e-3  # moved from transformers' start


@pytest.mark.parametrize(("design", "text_format"), list(zip(DESIGNS, ["lines", "jsonl", "csv"] * 2, strict=True)))
def test_every_design_and_corpus_format_from_the_command_line(user, tmp_path, design, text_format):
    suffix = {"lines": "txt", "jsonl": "jsonl", "csv": "csv"}[text_format]
    corpus = user / f"corpus.{suffix}"
    column = [] if text_format == "lines" else ["--column", "text"]
    before = global_rng_states()
    stdout = _canaries(user, tmp_path / "out", "--design", design, "--corpus", corpus, "--format", text_format, *column, "--count", 8, "--length", 2)
    assert_same_rng_states(before, global_rng_states())
    provenance = read_lm_provenance(tmp_path / "out" / "provenance.json")
    assert ("canaries repeat another's text" in stdout) == (len(set(provenance.texts)) < 8)
    model, tokenizer = _loaded(user / "base")
    texts = read_corpus_texts(corpus, text_format=text_format, column=None if text_format == "lines" else "text")
    expected, _, _ = prepare_lm_canaries(design, tokenizer, count=8, seed=0, length=2, model=model, texts=texts)
    assert (provenance.prefixes, provenance.secrets, provenance.included) == (expected.prefixes, expected.secrets, expected.included)
    name = f"corpus.{suffix}"
    written = read_corpus_texts(tmp_path / "out" / name, text_format=text_format, column=None if text_format == "lines" else "text")
    _check_corpus(texts, written, provenance)
    assert (tmp_path / "out" / "model").is_dir() == (design == "new-tokens")


@pytest.mark.parametrize(("scored", "span", "decided"), [([], "secret", "default"), (["--scored", "whole"], "text", "explicit")])
def test_the_scored_span_defaults_to_the_secret_and_the_audit_records_it(user, tmp_path, scored, span, decided):
    _canaries(user, tmp_path / "out", "--design", "random-tokens", "--corpus", user / "corpus.txt", "--count", 8, *scored)
    assert read_lm_provenance(tmp_path / "out" / "provenance.json").span == span
    argv = ["audit", "lm-one-run", "--model", user / "base", "--provenance", tmp_path / "out" / "provenance.json"]
    code, _, stderr = run_cli([*argv, "--output", tmp_path / "run", "--no-history"])
    assert code == 0, stderr
    conventions = {item["name"]: item for item in json.loads((tmp_path / "run" / "results.json").read_text())["conventions"]}
    assert conventions["scored span"]["decided"] == decided and ("whole text" in conventions["scored span"]["value"]) == (span == "text")


def test_a_canary_with_a_line_break_is_refused_for_the_lines_format(user, tmp_path):
    lines = CorpusRecords(header=None, records=["a"], texts=["a"], text_format="lines", column=None)
    for broken in ("my secret is x\ny", "my secret is x\u2028y", "my secret is x\r"):
        with pytest.raises(ValueError, match="`--format` lines cannot hold 1 of the included canaries"):
            corpus_with_canaries(lines, ["fine", broken], seed=0)
    jsonl = CorpusRecords(header=None, records=[{"text": "a"}], texts=["a"], text_format="jsonl", column="text")
    text, positions = corpus_with_canaries(jsonl, ["my secret is x\ny"], seed=0)
    assert json.loads(text.splitlines()[positions[0]]) == {"text": "my secret is x\ny"}
    # the library draws secrets from printable tokens, so the CLI's draws never need the refusal: byte-level BPE has "\n" as a token, never drawn
    tokenizer = transformers.AutoTokenizer.from_pretrained(user / "base")
    assert "\n" in tokenizer.get_vocab() or "Ċ" in tokenizer.get_vocab()
    for seed in range(40):
        texts = prepare_lm_canaries("random-tokens", tokenizer, count=8, seed=seed)[0].texts
        assert all(len(text.splitlines()) == 1 and not text.endswith(("\n", "\r")) for text in texts), seed


@pytest.mark.parametrize(
    ("model", "corpus", "extra", "match"),
    [
        ("missing", "corpus.txt", [], "`--base-model` must be a Hugging Face model directory"),
        ("tokenizer-only", "corpus.txt", [], "`--base-model`: design 'new-tokens' draws from the base model's weights"),
        ("tokenizer-only", "corpus.txt", ["--design", "least-likely"], "`--base-model`: design 'least-likely' draws from the base model's weights"),
        ("tokenizer-only", "corpus.txt", ["--design", "high-temperature"], "design 'high-temperature' draws from the base model's weights"),
        ("empty", "corpus.txt", ["--design", "random-tokens"], "`--base-model`: "),
        ("base", "empty.txt", [], "`--corpus`: "),
        ("base", "blank.txt", [], "holds no text"),
        ("base", "binary.txt", [], "`--corpus`"),
        ("base", "missing.txt", [], "`--corpus` must be an existing file"),
        ("base", "short.txt", ["--design", "prefix-suffix"], "`--corpus` must hold lines of at least 4 words"),
        ("base", "corpus.txt", ["--count", "1"], "`--count` must be an integer in [4, inf), got 1"),
        ("base", "corpus.txt", ["--count", "3"], "`--count` must be an integer in [4, inf), got 3"),
        ("base", "corpus.txt", ["--length", "0"], "`--length` must be an integer in [1, inf)"),
        ("base", "corpus.txt", ["--design", "glitter"], "`--design` must be one of 'random-tokens', 'new-tokens'"),
        ("base", "corpus.txt", ["--scored", "all"], "`--scored` must be one of 'secret', 'whole'"),
        ("base", "corpus.txt", ["--new-rows", "zero"], "`--new-rows` must be one of 'mean', 'expected'"),
        ("base", "corpus.txt", ["--design", "bigram", "--new-rows", "expected"], "`--new-rows` 'expected' starts the rows of new tokens: it needs --design"),
        ("base", "corpus.jsonl", ["--format", "jsonl"], "`--column` must name the text field with --format jsonl"),
        ("base", "corpus.jsonl", ["--format", "jsonl", "--column", "body"], "`--corpus` line 1 must be a JSON object with a string field 'body'"),
        ("base", "corpus.csv", ["--format", "csv", "--column", "body"], "`--column` must be one of the CSV header's columns"),
    ],
)
def test_bad_input_is_refused_in_one_line_with_no_output(user, tmp_path, model, corpus, extra, match):
    (user / "empty").mkdir(exist_ok=True)
    (user / "empty.txt").write_bytes(b"")
    (user / "blank.txt").write_text("\n  \n\t\n")
    (user / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    (user / "short.txt").write_text("two words\nthree words here\n")
    argv = ["canaries", "lm", "--base-model", user / model, "--corpus", user / corpus, "--output", tmp_path / "out", *extra]
    assert_refused(argv, tmp_path / "out", match)


@pytest.fixture()
def no_scoring(monkeypatch):
    """Scoring fails the test: refusals must come before it."""

    def fail(*_args, **_kwargs):
        raise AssertionError("a canary was scored before the input was refused")

    monkeypatch.setattr(lm_one_run_scores, "canary_log_likelihoods", fail)
    monkeypatch.setattr(lm_synthetic, "ngram_log_likelihoods", fail)
    monkeypatch.setattr(lm_synthetic, "jaccard_similarities", fail)


@pytest.fixture(scope="module")
def phase1(user, tmp_path_factory):
    out = tmp_path_factory.mktemp("phase1") / "out"
    _canaries(user, out, "--corpus", user / "corpus.txt", "--count", 8, "--length", 1)
    return out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--model", "{user}/base"], "`--model` lacks 16 of the canaries' 16 new tokens (e.g. '<|pa0_"),  # the original model trained instead of out/model
        (["--model", "{out}/model", "--base-model", "{user}/base"], "`--base-model` lacks 16 of the canaries' 16 new tokens"),
        (["--model", "{user}/other"], "`--model` lacks 16 of the canaries' 16 new tokens"),
        (["--synthetic", "{user}/empty.txt"], "`--synthetic`: "),
        (["--synthetic", "{user}/blank.txt"], "is empty"),
        (["--synthetic", "{user}/binary.txt"], "is not UTF-8 text"),
    ],
)
def test_the_audit_refuses_a_model_without_the_new_tokens_and_an_empty_or_binary_synthetic_corpus_before_scoring(
    user, phase1, tmp_path, no_scoring, argv, match
):
    (user / "empty.txt").write_bytes(b"")
    (user / "blank.txt").write_text("\n  \n\t\n")
    (user / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    argv = [item.format(user=user, out=phase1) for item in argv]
    full = ["audit", "lm-one-run", *argv, "--provenance", phase1 / "provenance.json", "--output", tmp_path / "run", "--no-history"]
    assert_refused(full, tmp_path / "run", match)


def test_a_provenance_of_another_tokenizer_is_refused_before_scoring(user, tmp_path, no_scoring):
    _canaries(user, tmp_path / "out", "--design", "random-tokens", "--corpus", user / "corpus.txt", "--count", 8)
    full = ["audit", "lm-one-run", "--model", user / "other", "--provenance", tmp_path / "out" / "provenance.json", "--output", tmp_path / "run"]
    line = assert_refused([*full, "--no-history"], tmp_path / "run", "`--model`'s tokenizer is not the provenance's: 300 tokens")
    assert re.search(r"made with 320 tokens", line)
