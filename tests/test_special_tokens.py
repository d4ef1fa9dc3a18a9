"""The special tokens before each text: what the post-processor adds is used, what follows a text is never scored, bad options are refused."""

from __future__ import annotations

import string

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from privaudit.canaries import CanaryFormat  # noqa: E402
from privaudit.models.hf import HFCausalLMScorer  # noqa: E402
from privaudit.models.special_tokens import MIN_CHECK_LINES, decide_special_tokens  # noqa: E402

SYMBOLS = ["[UNK]", "<s>", "</s>"] + list(string.printable[:95])


def char_tokenizer(template: str | None = None, **special):
    """One token per character; ``template`` is the post-processor's single-text template (e.g. '<s> $A'), None for none."""
    vocab = {symbol: index for index, symbol in enumerate(SYMBOLS)}
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Split("", behavior="isolated")
    if template is not None:
        backend.post_processor = tokenizers.processors.TemplateProcessing(single=template, special_tokens=[("<s>", 1), ("</s>", 2)])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", **special)


@pytest.fixture(scope="module")
def model():
    config = transformers.GPT2Config(vocab_size=len(SYMBOLS), n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=1, eos_token_id=2)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return transformers.GPT2LMHeadModel(config).eval()


def hand_bits(model, ids, start):
    with torch.no_grad():
        log_probs = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), dim=-1)
    return -sum(float(log_probs[i - 1, ids[i]]) for i in range(start, len(ids))) / np.log(2)


def test_the_bos_the_post_processor_adds_is_scored_before_each_text(model):
    scorer = HFCausalLMScorer(model, char_tokenizer("<s> $A", bos_token="<s>"))
    assert scorer.special_tokens.leading == (1,) and scorer.special_tokens.convention.decided == "checked"
    text = "my pin is 42"
    ids = [1] + [SYMBOLS.index(c) for c in text]
    # float32 forward passes of different batch shapes agree to ~1e-7 relative; a wrong BOS moves the bits by whole units
    assert scorer.log_perplexity([text])[0] == pytest.approx(hand_bits(model, ids, 1), abs=1e-6)  # every character, given <s>
    fmt = CanaryFormat("pin {digits:2}")
    # secret given the prefix: "pin " is 4 characters after <s>
    assert scorer.format_log_perplexities(fmt, secrets=[(4, 2)])[0] == pytest.approx(hand_bits(model, [1] + [SYMBOLS.index(c) for c in "pin 42"], 5), abs=1e-6)


def test_an_eos_after_the_text_changes_no_score(model):
    plain = HFCausalLMScorer(model, char_tokenizer())
    with_eos = HFCausalLMScorer(model, char_tokenizer("$A </s>", eos_token="</s>"))
    assert with_eos.special_tokens.leading == () and "[2], never scored" in with_eos.special_tokens.convention.evidence
    fmt = CanaryFormat("pin {digits:2}")
    np.testing.assert_array_equal(with_eos.format_log_perplexities(fmt), plain.format_log_perplexities(fmt))
    # and the EOS would have mattered if it were scored: its probability differs between candidates
    eos_bits = [hand_bits(model, [SYMBOLS.index(c) for c in f"pin {i:02d}"] + [2], 6) for i in (0, 1)]
    assert abs(eos_bits[0] - eos_bits[1]) > 1e-6


def test_explicit_bos_overrides_and_is_recorded_as_explicit(model):
    tokenizer = char_tokenizer(bos_token="<s>")
    prepend = HFCausalLMScorer(model, tokenizer, bos="prepend")
    assert prepend.special_tokens.leading == (1,) and prepend.special_tokens.convention.evidence == "--bos prepend"
    none = HFCausalLMScorer(model, char_tokenizer("<s> $A", bos_token="<s>"), bos="none")
    assert none.special_tokens.leading == () and none.special_tokens.convention.decided == "explicit"


def test_a_declared_bos_without_lines_or_with_too_few_is_refused(model):
    tokenizer = char_tokenizer(bos_token="<s>")
    with pytest.raises(ValueError, match=r"pass --bos prepend \(trained with '<s>' before each text\) or --bos none \(trained without\)$"):
        HFCausalLMScorer(model, tokenizer)  # no corpus lines to offer (lm-one-run): no --bos-corpus in the advice
    with pytest.raises(ValueError, match=r"or --bos none \(trained without\), or --bos-corpus FILE"):
        HFCausalLMScorer(model, tokenizer, bos_lines=[])  # a command that reads corpus lines offers its option
    with pytest.raises(ValueError, match=f"at least {MIN_CHECK_LINES}"):
        HFCausalLMScorer(model, tokenizer, bos_lines=["ab"] * (MIN_CHECK_LINES - 1) + ["a"])
    with pytest.raises(ValueError, match="`bos` must be one of 'auto', 'prepend', 'none', got 'yes'"):
        decide_special_tokens(tokenizer, bos="yes")


def test_a_model_that_ignores_its_context_cannot_settle_the_check():
    # every next-token distribution the same: with and without BOS score alike, to the bit
    config = transformers.GPT2Config(vocab_size=len(SYMBOLS), n_positions=64, n_embd=8, n_layer=1, n_head=2)
    flat = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for parameter in flat.parameters():
            parameter.zero_()
    lines = ["the cat sat", "on a mat"] * MIN_CHECK_LINES
    with pytest.raises(ValueError, match=r"about as likely with BOS '<s>' as without \(mean bits per line (\S+) with BOS, \1 without, over 16"):
        HFCausalLMScorer(flat, char_tokenizer(bos_token="<s>"), bos_lines=lines)


def test_bad_bos_options_on_the_command_line(tmp_path):
    assert_refused(["audit", "secret-sharer", "--bos", "maybe", "--output", tmp_path / "out"], tmp_path / "out", "`--bos` must be one of")
    line = assert_refused(["audit", "secret-sharer", "--bos", "prepend", "--output", tmp_path / "out"], tmp_path / "out", "--bos")
    assert "go with `--model`" in line
    # with --model: checked before the model is loaded (there is none here)
    (tmp_path / "corpus.txt").write_text("a b\n")
    code, _, stderr = run_cli(["canaries", "insert", "--corpus", tmp_path / "corpus.txt", "--template", "pin {digits:2}", "--output", tmp_path / "phase1"])
    assert code == 0, stderr
    own = ["audit", "secret-sharer", "--model", tmp_path / "no-model", "--provenance", tmp_path / "phase1", "--output", tmp_path / "out"]
    assert_refused([*own, "--bos-corpus", tmp_path / "missing.txt"], tmp_path / "out", "`--bos-corpus` must be an existing file")
    assert_refused([*own, "--bos", "none", "--bos-corpus", tmp_path / "corpus.txt"], tmp_path / "out", "with `--bos none` nothing is checked")


def test_the_scored_span_is_the_whole_text_less_the_recorded_bits_of_the_prefix(model):
    scorer = HFCausalLMScorer(model, char_tokenizer("<s> $A", bos_token="<s>"))
    fmt = CanaryFormat("my pin is {digits:1}")
    span = scorer.scored_span(fmt)
    assert span.decided == "default" and "first 11 tokens" in span.value  # <s> and "my pin is " (one token per character)
    prefix_bits = float(span.evidence.split("bits(P) = ")[1].split(",")[0])
    assert prefix_bits == pytest.approx(hand_bits(model, [1] + [SYMBOLS.index(c) for c in "my pin is "], 1), rel=1e-5)
    whole = [hand_bits(model, [1] + [SYMBOLS.index(c) for c in canary.text], 1) for canary in fmt.enumerate()]
    np.testing.assert_allclose(scorer.format_log_perplexities(fmt) + prefix_bits, whole, rtol=1e-5)


def test_the_trainer_callback_needs_the_bos_said_when_only_a_trained_model_could_tell(model, tmp_path):
    from privaudit.canaries.corpus import insert_into_corpus
    from privaudit.integrations.transformers import CanaryExposureCallback

    record = insert_into_corpus([f"line {i}" for i in range(20)], CanaryFormat("pin {digits:2}"), output_dir=tmp_path, schedule=(1, 2))
    declared = char_tokenizer(bos_token="<s>")  # names a BOS, adds none: GPT-2's case
    with pytest.raises(ValueError, match=r"`bos` must be 'prepend' or 'none' for this tokenizer: it declares BOS '<s>'"):
        CanaryExposureCallback(record, declared, num_references=20)
    from privaudit.stats.exposure import exposure

    fmt, secrets = record.canary_format, [tuple(entry["secret"]) for entry in record.provenance.canaries]
    for bos, leading in (("prepend", (1,)), ("none", ())):
        callback = CanaryExposureCallback(record, declared, num_references=20, bos=bos)
        scorer = HFCausalLMScorer(model, declared, bos=bos)  # what the callback must score with
        assert scorer.special_tokens.leading == leading
        expected = exposure(scorer.format_log_perplexities(fmt, secrets=secrets), scorer.format_log_perplexities(fmt, secrets=callback.references)).exposures
        np.testing.assert_allclose(callback.measure(model, step=1)["exposures"], expected, atol=1e-9)
    # a tokenizer whose post-processor adds its BOS settles it by check, with no option
    assert CanaryExposureCallback(record, char_tokenizer("<s> $A", bos_token="<s>"), num_references=20).bos == "auto"
