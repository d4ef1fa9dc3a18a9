"""The in-loop Opacus auditor, unchanged, in a user's causal-LM fine-tuning loop: a tiny GPT-2 (Conv1D) with LoRA through peft.

The user's LoRA weights after the loop are bit for bit those of the same loop
without the auditor, every step is observed, and the verdict on an
end-to-end claim comes out (``benchmarks/opacus_verdict_lm.py`` measures the
bound ÷ the claim at ε = 4: 0.85).
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")
peft = pytest.importorskip("peft")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

STEPS = 4


def lora_loop(audit: bool, tokenizer, seed: int = 3):
    from rng_helpers import seed_everything

    from privaudit.audits.lm.tiny import tiny_gpt2
    from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor

    seed_everything(seed)  # the user's own loop: peft draws LoRA's initial weights from torch's global RNG
    model = peft.get_peft_model(tiny_gpt2(tokenizer, seed=seed), peft.LoraConfig(r=2, target_modules=["c_attn"], fan_in_fan_out=True, lora_dropout=0.0))
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, len(tokenizer), (40, 12), generator=generator)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens), batch_size=8, generator=generator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, optimizer, loader = opacus.PrivacyEngine(accountant="rdp").make_private(
            module=model, optimizer=torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1), data_loader=loader,
            noise_multiplier=1.0, max_grad_norm=1.0, noise_generator=torch.Generator().manual_seed(seed + 1),
        )  # fmt: skip
        auditor = OpacusInLoopAuditor(model, optimizer, canaries_per_step=5, seed=seed, data_loader=loader) if audit else None
        if auditor is not None:
            auditor.__enter__()
        done = 0
        while done < STEPS:
            for (batch,) in loader:
                if not len(batch):
                    continue
                optimizer.zero_grad()
                logits = model(input_ids=batch).logits[:, :-1]
                torch.nn.functional.cross_entropy(logits.transpose(1, 2), batch[:, 1:]).backward()
                optimizer.step()
                done += 1
                if done == STEPS:
                    break
        if auditor is not None:
            auditor.__exit__(None, None, None)
    return [p.detach().clone() for p in model.parameters() if p.requires_grad], auditor


def test_the_auditor_runs_unchanged_in_a_lora_gpt2_loop():
    from privaudit.audits.lm.tiny import bpe_tokenizer

    tokenizer = bpe_tokenizer(["the cat sat on the mat", "a dog ran in the park"] * 20, vocab_size=300)
    plain, _ = lora_loop(False, tokenizer)
    audited, auditor = lora_loop(True, tokenizer)
    assert plain and all(torch.equal(a, b) for a, b in zip(plain, audited, strict=True))  # the user's LoRA training, bit for bit
    result = auditor.result(delta=1e-5, claimed_epsilon=8.0, claimed_delta=1e-5)
    assert result.num_steps == STEPS and result.bound.num_in == 5 * STEPS
    assert result.evidence.sample_rate == pytest.approx(0.2) and result.evidence.sample_rate_source == "data loader"
    assert result.verdict.end_to_end.quantity == "end-to-end" and not result.verdict.findings
