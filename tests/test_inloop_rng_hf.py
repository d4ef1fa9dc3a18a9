"""The Trainer callback touches no global RNG state and leaves the user's training unchanged: proven bit for bit.

The user's training (a tiny GPT-2 with dropout, shuffled batches) draws from
torch's global RNG at every step, so one extra draw by the callback, while it
is built or while it measures, would change the weights. Two loops: the
user's own loop calling the callback as ``transformers.Trainer`` does
(``on_step_end`` with the model in train mode after each optimizer step, then
``on_log``), and ``transformers.Trainer`` itself, which needs ``accelerate``.
"""

from __future__ import annotations

import string
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from rng_helpers import assert_same_rng_states, global_rng_states, seed_everything  # noqa: E402

from privaudit.canaries import CanaryFormat  # noqa: E402
from privaudit.canaries.corpus import insert_into_corpus  # noqa: E402
from privaudit.integrations.transformers import CanaryExposureCallback  # noqa: E402

FMT = CanaryFormat("pin {digits:2}")
SYMBOLS = ["[UNK]", "[PAD]"] + list(string.printable[:95])
LENGTH, STEPS = 12, 4


def char_tokenizer():
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel({s: i for i, s in enumerate(SYMBOLS)}, unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Split("", behavior="isolated")
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]")


def user_setup(provenance, *, callback: bool, seed: int):
    """The user's tokenizer, rows and model; the callback, when wanted, is built before the model draws its weights."""
    tokenizer = char_tokenizer()
    seed_everything(seed)
    callbacks = [CanaryExposureCallback(provenance, tokenizer, every_steps=2, num_references=10, seed=seed)] if callback else []
    model = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=len(SYMBOLS), n_positions=LENGTH, n_embd=16, n_layer=1, n_head=2, resid_pdrop=0.2, embd_pdrop=0.2, attn_pdrop=0.2)
    )  # initialised from torch's global RNG
    texts = (provenance / "corpus.txt").read_text().splitlines()
    encoded = tokenizer(texts, padding="max_length", truncation=True, max_length=LENGTH, return_tensors="pt")
    rows = [{"input_ids": ids, "attention_mask": mask, "labels": ids} for ids, mask in zip(encoded["input_ids"], encoded["attention_mask"])]
    return model, rows, callbacks


def outcome(model, optimizer, losses, callbacks) -> dict:
    parameters = list(model.parameters())
    return {
        "weights": [p.detach().clone() for p in parameters],
        "state": [{k: v.clone() for k, v in optimizer.state[p].items()} for p in parameters],
        "losses": losses,
        "rng": global_rng_states(),
        "callback": callbacks[0] if callbacks else None,
    }


def assert_same_run(plain: dict, audited: dict) -> None:
    assert all(torch.equal(a, b) for a, b in zip(plain["weights"], audited["weights"], strict=True))
    assert len(plain["state"]) == len(audited["state"]) and all(plain["state"])
    for a, b in zip(plain["state"], audited["state"], strict=True):
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert len(plain["losses"]) == STEPS and plain["losses"] == audited["losses"]
    assert_same_rng_states(plain["rng"], audited["rng"])
    assert [entry["step"] for entry in audited["callback"].history] == [2, 4]  # it did measure, twice, inside the loop


def own_loop_run(provenance, *, callback: bool, seed: int) -> dict:
    """The user's loop: shuffled batches, dropout, AdamW; the callback called where Trainer calls it."""
    model, rows, callbacks = user_setup(provenance, callback=callback, seed=seed)
    loader = torch.utils.data.DataLoader(rows, batch_size=4, shuffle=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    state, control, losses = SimpleNamespace(global_step=0), SimpleNamespace(), []
    model.train()
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        state.global_step += 1
        for handler in callbacks:
            handler.on_step_end(None, state, control, model=model)
            handler.on_log(None, state, control, logs={"loss": loss.item()})
        losses.append(loss.item())
        if state.global_step == STEPS:
            break
    return outcome(model, optimizer, losses, callbacks)


def test_trainer_callback_leaves_the_users_own_loop_bit_for_bit(tmp_path):
    seed = int(np.random.default_rng().integers(2**31))
    insert_into_corpus([f"line {i} of text" for i in range(24)], FMT, output_dir=tmp_path / "prep", schedule=(1, 2), seed=seed)
    plain = own_loop_run(tmp_path / "prep", callback=False, seed=seed)
    audited = own_loop_run(tmp_path / "prep", callback=True, seed=seed)
    assert_same_run(plain, audited)


def trainer_run(tmp_path, provenance, *, callback: bool, seed: int) -> dict:
    model, rows, callbacks = user_setup(provenance, callback=callback, seed=seed)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / f"out-{callback}"),
        max_steps=STEPS,
        per_device_train_batch_size=4,
        learning_rate=5e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        seed=seed,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=rows, callbacks=callbacks)
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return outcome(model, trainer.optimizer, losses, callbacks)


def test_trainer_callback_leaves_the_users_trainer_run_bit_for_bit(tmp_path):
    pytest.importorskip("accelerate")  # transformers.Trainer needs it
    seed = int(np.random.default_rng().integers(2**31))
    insert_into_corpus([f"line {i} of text" for i in range(24)], FMT, output_dir=tmp_path / "prep", schedule=(1, 2), seed=seed)
    plain = trainer_run(tmp_path, tmp_path / "prep", callback=False, seed=seed)
    audited = trainer_run(tmp_path, tmp_path / "prep", callback=True, seed=seed)
    assert_same_run(plain, audited)
