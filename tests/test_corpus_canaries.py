"""Two-phase Secret Sharer: canaries written into the user's corpus with provenance, then measured from it."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import string
from types import SimpleNamespace

import numpy as np
import pytest

from privaudit.canaries import CanaryFormat
from privaudit.canaries.corpus import (
    insert_into_corpus,
    read_provenance,
    reference_secrets,
)

FMT = CanaryFormat("pin {digits:2}")
ORIGINAL = [f"line {i} of text" for i in range(20)]


def drop(items, provenance):
    positions = {p for record in provenance.canaries for p in record["lines"]}
    return [item for index, item in enumerate(items) if index not in positions], [items[p] for p in sorted(positions)]


def test_lines_corpus_keeps_originals_in_order_and_records_provenance(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in ORIGINAL))
    record = insert_into_corpus(source, FMT, output_dir=tmp_path / "out", schedule=(1, 3), seed=4)
    lines = (tmp_path / "out" / "corpus.txt").read_text().split("\n")[:-1]
    kept, canaries = drop(lines, record.provenance)
    assert kept == ORIGINAL and len(lines) == 24
    assert sorted(canaries.count(r["text"]) for r in record.provenance.canaries) == [1, 3]
    assert record.corpus_sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert record.output_sha256 == hashlib.sha256((tmp_path / "out" / "corpus.txt").read_bytes()).hexdigest()
    again = read_provenance(tmp_path / "out")
    assert again.to_dict() == record.to_dict() and again.canary_format == FMT and again.provenance.seed == 4
    assert {"privaudit", "numpy", "python"} <= set(again.versions)


def test_jsonl_and_csv_corpora_get_canary_records_in_the_named_column(tmp_path):
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(ORIGINAL)))
    record = insert_into_corpus(tmp_path / "in.jsonl", FMT, output_dir=tmp_path / "j", schedule=(2,), text_format="jsonl", column="text")
    rows = [json.loads(line) for line in (tmp_path / "j" / "corpus.jsonl").read_text().splitlines()]
    kept, canaries = drop(rows, record.provenance)
    assert kept == [{"id": i, "text": t} for i, t in enumerate(ORIGINAL)] and canaries == [{"text": record.provenance.canaries[0]["text"]}] * 2
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([["id", "text"]] + [[str(i), f'{t}, "quoted"\nsecond line'] for i, t in enumerate(ORIGINAL)])
    (tmp_path / "in.csv").write_text(buffer.getvalue())
    record = insert_into_corpus(tmp_path / "in.csv", FMT, output_dir=tmp_path / "c", schedule=(1, 2), text_format="csv", column="text")
    rows = list(csv.reader(io.StringIO((tmp_path / "c" / "corpus.csv").read_text(), newline="")))
    kept, canaries = drop(rows[1:], record.provenance)
    assert rows[0] == ["id", "text"] and kept == [[str(i), f'{t}, "quoted"\nsecond line'] for i, t in enumerate(ORIGINAL)]
    assert all(row[0] == "" for row in canaries) and len(canaries) == 3


def test_bad_corpora_are_refused_and_leave_nothing_behind(tmp_path):
    (tmp_path / "in.jsonl").write_text('{"text": "a"}\n{"body": "b"}\n')
    with pytest.raises(ValueError, match="line 2 must be a JSON object with a string field 'text'"):
        insert_into_corpus(tmp_path / "in.jsonl", FMT, output_dir=tmp_path / "out", text_format="jsonl", column="text")
    (tmp_path / "in.csv").write_text("id,body\n1,a\n")
    with pytest.raises(ValueError, match="`column` must be one of the CSV header's columns"):
        insert_into_corpus(tmp_path / "in.csv", FMT, output_dir=tmp_path / "out", text_format="csv", column="text")
    with pytest.raises(ValueError, match="`text_format` must be one of"):
        insert_into_corpus(["a"], FMT, output_dir=tmp_path / "out", text_format="parquet")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="not a provenance file"):
        read_provenance(tmp_path / "in.csv")


def test_reference_secrets_are_distinct_uniform_draws_outside_the_canaries():
    refs = reference_secrets(FMT, 98, exclude=[(1, 1), (2, 2)], seed=3)
    assert len(set(refs)) == 98 and not {(1, 1), (2, 2)} & set(refs)
    with pytest.raises(ValueError, match="`count` must be <= |R| - excluded = 98, got 99"):
        reference_secrets(FMT, 99, exclude=[(1, 1), (2, 2)])
    # uniform: first digits of many draws from a large space pass a chi-square test at 1e-4
    from scipy import stats

    first = np.array([s[0] for s in reference_secrets(CanaryFormat("{digits:5}"), 5000, seed=0)])
    assert stats.chisquare(np.bincount(first, minlength=10)).pvalue > 1e-4


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    symbols = ["[UNK]"] + list(string.printable[:95])
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel({s: i for i, s in enumerate(symbols)}, unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Split("", behavior="isolated")
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=len(symbols), n_positions=32, n_embd=16, n_layer=1, n_head=2))
    directory = tmp_path_factory.mktemp("hf")
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def oracle_bits(model, tokenizer, texts):
    """Each full text's next-token cross-entropy, summed, in bits (one forward pass per text)."""
    import torch

    out = []
    for text in texts:
        ids = torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"])
        with torch.no_grad():
            logits = model(input_ids=ids[None]).logits[0].double()
        out.append(float(torch.nn.functional.cross_entropy(logits[:-1], ids[1:], reduction="sum")) / np.log(2))
    return np.array(out)


def test_measured_exact_exposure_matches_a_brute_force_ranking(tmp_path, hf_dir):
    from privaudit.integrations.transformers import measure_canaries
    from privaudit.models.loading import load_model

    insert_into_corpus(ORIGINAL, FMT, output_dir=tmp_path / "prep", schedule=(1, 4), seed=2)
    result = measure_canaries(hf_dir, tmp_path / "prep", num_references=50, extract=True, device="cpu")
    loaded = load_model(hf_dir, kind="huggingface", device="cpu")
    everything = oracle_bits(loaded.model, loaded.tokenizer, [c.text for c in FMT.enumerate()])
    for canary in result.canaries:
        mine = everything[int(canary["text"][-2:])]
        rank = int(np.sum(everything <= mine + 1e-9))
        assert canary["exposure_exact"] == pytest.approx(np.log2(100) - np.log2(rank))
    assert result.num_references == 50 and result.space_size == 100
    assert result.extraction["text"] == FMT.fill(divmod(int(np.argmin(everything)), 10))  # shortest path finds the best of R here
    assert result.epsilon_bound["duplicates"] == 4 and result.epsilon_bound["kind"] == "lower bound"


def test_the_trainer_callback_logs_exposure_without_changing_the_model(tmp_path, hf_dir):
    transformers = pytest.importorskip("transformers")
    from privaudit.integrations.transformers import (
        CanaryExposureCallback,
        measure_canaries,
    )
    from privaudit.models.loading import load_model

    insert_into_corpus(ORIGINAL, FMT, output_dir=tmp_path / "prep", schedule=(1, 2), seed=5)
    loaded = load_model(hf_dir, kind="huggingface", device="cpu")
    callback = CanaryExposureCallback(tmp_path / "prep", loaded.tokenizer, every_steps=2, num_references=40, seed=9)
    assert isinstance(callback, transformers.TrainerCallback)
    model = loaded.model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    control = object()
    for step in (1, 2, 3):
        assert callback.on_step_end(None, SimpleNamespace(global_step=step), control, model=model) is control
    assert [entry["step"] for entry in callback.history] == [2] and model.training
    assert all((before[k] == v).all() for k, v in model.state_dict().items())
    expected = measure_canaries(loaded, tmp_path / "prep", num_references=40, seed=9)
    np.testing.assert_allclose(callback.history[0]["exposures"], [c["exposure_sampled"] for c in expected.canaries])
    logs = {}
    callback.on_log(None, None, control, logs=logs)
    assert logs["canary_exposure_max"] == max(callback.history[0]["exposures"])
