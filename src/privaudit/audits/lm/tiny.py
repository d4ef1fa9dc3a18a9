"""The embedded default of the LM one-run audit: a tiny GPT-2 and a BPE tokenizer trained here, on privaudit's corpus.

Everything runs on CPU in seconds: a byte-level BPE tokenizer trained with
``tokenizers`` on lines of the default corpus (:mod:`privaudit.data.corpus`),
a GPT-2 from ``transformers.GPT2Config`` (well under 5M parameters, dropout
off), trained briefly on the corpus (the "base model") and then fine-tuned
on the corpus with the included canaries. Every random step draws from a
private ``torch.Generator`` or inside ``torch.random.fork_rng``, so the
global RNG state is left as it was.

:func:`fine_tune_dp` fine-tunes on Poisson-sampled batches, with Opacus
(DP-Adam at a target ε, the noise calibrated by Opacus' accountant) or, with
``epsilon=None``, the same batches without clipping or noise: the non-DP
run at the same budget.

>>> tokenizer = bpe_tokenizer(["the cat sat on the mat"] * 20, vocab_size=300)
>>> tokenizer("the cat", add_special_tokens=False)["input_ids"] == tokenizer("the cat", add_special_tokens=False)["input_ids"]
True
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

from ..._core.seeding import child_seeds
from ..._core.validation import check_count, check_positive, check_probability
from ...integrations.opacus import opacus_claims, read_opacus_settings
from ...models.device import pad_rows

__all__ = ["PoissonFineTuning", "bpe_tokenizer", "fine_tune", "fine_tune_dp", "tiny_gpt2"]


def bpe_tokenizer(texts: Sequence[str], *, vocab_size: int = 512):
    """A byte-level BPE tokenizer trained on ``texts``, as a transformers fast tokenizer (no special tokens are added to texts)."""
    import tokenizers
    import transformers

    backend = tokenizers.Tokenizer(tokenizers.models.BPE())
    backend.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(list(texts), trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend)


def tiny_gpt2(tokenizer, *, seed: int, n_embd: int = 64, n_layer: int = 2, n_positions: int = 64):
    """A GPT-2 with random weights drawn under ``seed`` (global RNG state restored), dropout off."""
    import torch
    import transformers

    config = transformers.GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=None,
        eos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return transformers.GPT2LMHeadModel(config).eval()


def _token_rows(model, tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """Each text tokenised whole (no special tokens), cut to the model's context; texts of fewer than 2 tokens teach nothing and are dropped."""
    limit = model.config.n_positions
    rows = [tokenizer(text, add_special_tokens=False)["input_ids"][:limit] for text in texts]
    return [row for row in rows if len(row) >= 2]


def fine_tune(model, tokenizer, texts: Sequence[str], *, steps: int, seed: int, learning_rate: float = 3e-3, batch_size: int = 32):
    """A copy of ``model`` trained ``steps`` Adam steps on batches of ``texts`` drawn by a private generator (texts tokenised whole, no special tokens)."""
    import torch

    model = copy.deepcopy(model).train()
    rows = _token_rows(model, tokenizer, texts)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    for _ in range(steps):
        chosen = torch.randint(len(rows), (min(batch_size, len(rows)),), generator=generator).tolist()
        width = max(len(rows[i]) for i in chosen)
        tokens = torch.zeros((len(chosen), width), dtype=torch.long)
        labels = torch.full((len(chosen), width), -100, dtype=torch.long)
        mask = torch.zeros((len(chosen), width), dtype=torch.long)
        for row, index in enumerate(chosen):
            ids = torch.as_tensor(rows[index])
            tokens[row, : len(ids)], labels[row, : len(ids)], mask[row, : len(ids)] = ids, ids, 1
        loss = model(input_ids=tokens, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


@dataclasses.dataclass(frozen=True)
class PoissonFineTuning:
    """A model fine-tuned on Poisson-sampled batches, and the mechanism that ran, read from Opacus' own objects after training.

    Without DP, ``noise_multiplier`` is 0, ``max_grad_norm``, ``epsilon`` and
    ``pld_epsilon`` are None. ``epsilon`` is what Opacus' accountant reports
    at ``delta`` after ``steps`` (the claim to audit); ``pld_epsilon`` is
    the same mechanism's ε from dp_accounting's PLD (pessimistic), a check.
    """

    model: Any
    noise_multiplier: float
    max_grad_norm: float | None
    sample_rate: float
    steps: int
    epsilon: float | None
    pld_epsilon: float | None
    delta: float
    accountant: str | None
    seed: int

    def mechanism(self) -> dict[str, Any]:
        """Everything but the model, for results files."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self) if field.name != "model"}


def _per_text_mean_loss(model, tokens, mask):
    """The mean over the batch of each text's mean next-token cross-entropy: a sum of per-text terms, as Opacus' per-sample gradients need."""
    import torch

    positions = torch.arange(tokens.shape[1], device=tokens.device).expand_as(tokens)  # one row per text: Opacus reads a shared (1, T) row as a batch of one
    logits = model(input_ids=tokens, attention_mask=mask, position_ids=positions).logits[:, :-1]
    targets, weights = tokens[:, 1:], mask[:, 1:].to(logits.dtype)
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    return ((losses * weights).sum(1) / weights.sum(1)).mean()


def fine_tune_dp(
    model,
    tokenizer,
    texts: Sequence[str],
    *,
    epsilon: float | None,
    delta: float = 1e-5,
    epochs: int,
    batch_size: int,
    max_grad_norm: float = 1.0,
    learning_rate: float = 1e-2,
    seed: int,
    accountant: str = "rdp",
    max_physical_batch_size: int | None = None,
) -> PoissonFineTuning:
    """A copy of ``model`` fine-tuned ``epochs`` passes of Poisson-sampled batches of ``texts``, with Opacus at ``epsilon`` (None: without DP).

    Each text is one record (tokenised whole, no special tokens, padded); its
    loss is its mean token cross-entropy. The sampling rate is Opacus' own,
    1 / the number of batches of ``batch_size``, so the expected batch is
    about ``batch_size``; there are ``epochs`` × that many steps. With
    ``epsilon``, Opacus' ``make_private_with_epsilon`` calibrates the noise
    multiplier so that its ``accountant`` ("rdp" or "prv") reports at most
    ``epsilon`` at ``delta`` after all steps, and wraps the model for
    per-sample gradients: its grad samplers for embeddings, layer norms and
    linear layers, functorch for GPT-2's ``Conv1D``; no layer is frozen.
    Adam runs on the clipped, noised gradients (DP-Adam). Batches and noise
    come from private generators seeded from ``seed``; the global RNG state
    and ``model`` are left as they were. Texts each count once, so ``epsilon``
    is per text: a canary repeated k times would be bounded by kε.

    ``max_physical_batch_size`` (DP only) splits each sampled batch into
    pieces of at most that many texts with Opacus' ``BatchMemoryManager``:
    the per-sample gradients of one piece at a time are held, clipped and
    summed, and the noise is added once per sampled batch, so the step is
    the one the whole batch would take (the mechanism and its ε are
    unchanged) in the memory of one piece. Full batches of thousands of
    new-token canaries need it: each text's gradient of the embedding
    matrix is a full copy of it.

    >>> fine_tune_dp(None, None, ["a b"], epsilon=0, epochs=1, batch_size=1, seed=0)
    Traceback (most recent call last):
    ...
    ValueError: `epsilon` must be > 0, got 0
    """
    if epsilon is not None:
        check_positive(epsilon, "epsilon")
    check_probability(delta, "delta")
    check_count(epochs, "epochs", minimum=1)
    check_count(batch_size, "batch_size", minimum=1)
    check_positive(max_grad_norm, "max_grad_norm")
    check_positive(learning_rate, "learning_rate")
    if max_physical_batch_size is not None:
        check_count(max_physical_batch_size, "max_physical_batch_size", minimum=1)
    import torch
    from opacus import PrivacyEngine
    from opacus.data_loader import DPDataLoader
    from opacus.utils.batch_memory_manager import wrap_data_loader

    seeds = child_seeds(seed, ["batches", "noise"])
    device = next(model.parameters()).device  # batches and noise go where the model is
    rows = _token_rows(model, tokenizer, texts)
    tokens, mask = pad_rows(rows, torch.device("cpu"))
    dataset = torch.utils.data.TensorDataset(tokens, mask.long())
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, generator=torch.Generator().manual_seed(seeds["batches"]))
    with torch.random.fork_rng(devices=[]):  # nothing here draws from the global generators; this keeps it so
        trained = copy.deepcopy(model).train()
        optimizer = torch.optim.Adam(trained.parameters(), lr=learning_rate)
        engine = PrivacyEngine(accountant=accountant) if epsilon is not None else None
        if engine is None:
            module, loader = trained, DPDataLoader.from_data_loader(loader, generator=loader.generator)
        else:
            module, optimizer, loader = engine.make_private_with_epsilon(
                module=trained,
                optimizer=optimizer,
                data_loader=loader,
                target_epsilon=epsilon,
                target_delta=delta,
                epochs=epochs,
                max_grad_norm=max_grad_norm,
                noise_generator=torch.Generator(device=device).manual_seed(seeds["noise"]),
            )
        pieces = loader  # what the loop reads; the settings are read from the sampling loader itself
        if engine is not None and max_physical_batch_size is not None:  # Opacus' BatchMemoryManager, whose context manager only wraps the loader
            pieces = wrap_data_loader(data_loader=loader, max_batch_size=max_physical_batch_size, optimizer=optimizer)
        for _ in range(epochs):
            for batch_tokens, batch_mask in pieces:
                optimizer.zero_grad()
                if len(batch_tokens):
                    loss = _per_text_mean_loss(module, batch_tokens.to(device), batch_mask.to(device))
                else:  # an empty Poisson batch still takes its step (noise alone, with DP): one row weighted 0 gives zero per-sample gradients
                    loss = 0.0 * _per_text_mean_loss(module, tokens[:1].to(device), mask[:1].long().to(device))
                loss.backward()
                optimizer.step()
    clean = copy.deepcopy(model)  # the trained weights in a module without Opacus' hooks
    clean.load_state_dict(trained.state_dict())
    clean.eval()
    if engine is None:
        return PoissonFineTuning(clean, 0.0, None, float(loader.sample_rate), epochs * len(loader), None, None, delta, None, seed)
    settings = read_opacus_settings(optimizer, data_loader=loader, accountant=engine.accountant)
    claims = opacus_claims(settings, delta=delta, accountant=engine.accountant)
    return PoissonFineTuning(
        clean,
        settings.noise_multiplier,
        settings.max_grad_norm,
        settings.sample_rate,
        settings.steps,
        claims.opacus_epsilon,
        claims.end_to_end_epsilon,
        delta,
        accountant,
        seed,
    )
