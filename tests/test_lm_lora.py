"""``privaudit audit lm-one-run`` on a peft LoRA adapter directory: applied to ``--base-model``, scored as the merged model; refused input."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
peft = pytest.importorskip("peft")
safetensors_torch = pytest.importorskip("safetensors.torch")

from cli_helpers import assert_refused, run_cli  # noqa: E402
from test_lm_canaries import TEXTS, span_log_likelihoods  # noqa: E402
from test_lm_one_run import no_scoring  # noqa: E402, F401 (a fixture: refusals come before any scoring)

from privaudit.audits.lm.tiny import bpe_tokenizer, fine_tune, tiny_gpt2  # noqa: E402
from privaudit.canaries.lm_provenance import prepare_lm_canaries  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def saved(tmp_path_factory, one_torch_thread):
    """A user's LoRA fine-tune on new-token canaries: the resized base saved by prepare_lm_canaries, the adapter, the merged model in memory."""
    root = tmp_path_factory.mktemp("lora")
    plain_tokenizer = bpe_tokenizer(TEXTS, vocab_size=320)
    base = fine_tune(tiny_gpt2(plain_tokenizer, seed=1, n_embd=32), plain_tokenizer, TEXTS, steps=10, seed=2, learning_rate=1e-2)
    provenance, resized, tokenizer = prepare_lm_canaries("new-tokens", plain_tokenizer, count=16, seed=7, length=2, model=base, save_to=root / "base")
    provenance.write(root / "provenance.json")
    new_ids = tokenizer.convert_tokens_to_ids(list(provenance.new_tokens))
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], fan_in_fan_out=True, trainable_token_indices={"wte": new_ids})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        adapted = peft.get_peft_model(resized, config)
    adapted = fine_tune(adapted, tokenizer, TEXTS + provenance.included_texts() * 4, steps=15, seed=3, learning_rate=1e-2)
    adapted.save_pretrained(root / "adapter")
    merged = adapted.merge_and_unload().eval()
    base.save_pretrained(root / "plain")  # the base before prepare_lm_canaries resized it: no new tokens
    plain_tokenizer.save_pretrained(root / "plain")
    other = tiny_gpt2(tokenizer, seed=5, n_embd=16)  # the same tokenizer, another architecture
    other.save_pretrained(root / "other")
    tokenizer.save_pretrained(root / "other")
    return root, provenance, merged, resized.eval(), tokenizer


def test_the_adapter_is_scored_as_the_merged_model_calibrated_by_the_base(saved, tmp_path):
    root, provenance, merged, base, tokenizer = saved
    argv = ["audit", "lm-one-run", "--model", root / "adapter", "--base-model", root / "base", "--provenance", root / "provenance.json"]
    code, _, err = run_cli(argv + ["--canary-copies", "4", "--output", tmp_path / "run", "--no-history"])
    assert code == 0, err
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    args = (tokenizer, provenance.prefixes, provenance.secrets, "secret")
    tuned_ll, base_ll = span_log_likelihoods(merged, *args), span_log_likelihoods(base, *args)
    assert np.max(np.abs(tuned_ll - base_ll)) > 0.1  # the adapter moved the canaries: a loader that ignored it would fail below
    np.testing.assert_allclose(data["scores"], tuned_ll - base_ll, rtol=0, atol=1e-5)
    assert data["calibrated"] and data["included"] == list(provenance.included)
    loading = [item for item in data["conventions"] if item["name"] == "fine-tuned model"]
    assert len(loading) == 1 and loading[0]["decided"] == "checked" and "LoRA adapter (r=4" in loading[0]["value"]


def _copy_with_config(root, tmp_path, change):
    target = tmp_path / "adapter"
    shutil.copytree(root / "adapter", target)
    config = json.loads((target / "adapter_config.json").read_text())
    (target / "adapter_config.json").write_text(json.dumps(change(config)))
    return target


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("no base", "`--model` is a LoRA adapter directory (adapter_config.json): give `--base-model`"),
        ("adapter as base", "`--base-model` must be a full model directory (save_pretrained), got a LoRA adapter directory"),
        ("other architecture", "`--model` is a LoRA adapter that does not load onto `--base-model`"),
        ("base without the new tokens", "`--base-model` lacks 48 of the canaries' 48 new tokens"),
        ("not LoRA", "`--model` must be a LoRA adapter (peft_type LORA in adapter_config.json), got peft_type 'IA3'"),
        ("renamed tensor", "`--model`'s adapter weights do not fit `--base-model`: 1 of"),
    ],
)
def test_adapters_that_cannot_be_scored_are_refused_in_one_line_before_any_scoring(saved, tmp_path, no_scoring, case, match):  # noqa: F811
    root = saved[0]
    model, base = root / "adapter", root / "base"
    if case == "no base":
        base = None
    elif case == "adapter as base":
        base = root / "adapter"
    elif case == "other architecture":
        base = root / "other"
    elif case == "base without the new tokens":
        base = root / "plain"
    elif case == "not LoRA":
        model = _copy_with_config(root, tmp_path, lambda config: config | {"peft_type": "IA3"})
    else:  # a tensor the base has no module for: peft only warns that it could not place it
        model = _copy_with_config(root, tmp_path, lambda config: config)
        weights = safetensors_torch.load_file(model / "adapter_model.safetensors")
        name = next(key for key in sorted(weights) if ".h.0." in key)
        weights[name.replace(".h.0.", ".h.7.")] = weights.pop(name)
        safetensors_torch.save_file(weights, model / "adapter_model.safetensors")
    argv = ["audit", "lm-one-run", "--model", model, "--provenance", root / "provenance.json", "--output", tmp_path / "out", "--no-history"]
    assert_refused(argv + (["--base-model", base] if base is not None else []), tmp_path / "out", match)
