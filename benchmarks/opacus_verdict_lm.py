"""White-box verdict on a user's own DP fine-tuning loop of a causal LM: ``python benchmarks/opacus_verdict_lm.py [--seeds 3] [--epsilon 4] [--output FILE]``.

A tiny GPT-2 built locally from a ``GPT2Config`` (Conv1D layers; a BPE
tokenizer trained on privaudit's embedded corpus, nothing downloaded), LoRA
adapters on its attention's ``c_attn`` through peft, trained by the user's
own loop with Opacus' ``make_private_with_epsilon(target_epsilon=--epsilon
(default 4), target_delta=1e-5)``, Poisson sampling, with
:class:`privaudit.integrations.opacus_inloop.OpacusInLoopAuditor` attached
unchanged. The JSON holds, per seed, the verdict on the claim (ε, 1e-5): the
end-to-end white-box bound ÷ the claimed ε (``bound_over_claimed``; issue
32's target at ε = 4: >= 0.5), the per-step bound and whether anything was
flagged; ``config.epsilon`` is the claim, as ``benchmarks/tightness.py``
reads it (``--output benchmarks/results/opacus_verdict_lm_eps4.json``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from opacus_verdict import write_json  # the sibling benchmark's writer (benchmarks/ is on the path when run as a script)

EPSILON, DELTA, EPOCHS, BATCH, TEXTS = 4.0, 1e-5, 3, 16, 320


def lm_run(seed: int, *, canaries_per_step: int = 20, epsilon: float = EPSILON):
    """Fine-tune LoRA adapters of a tiny GPT-2 with Opacus at ``epsilon`` in the user's own loop, audited in it; the in-loop result."""
    import opacus
    import peft
    import torch

    from privaudit.audits.lm.tiny import bpe_tokenizer, tiny_gpt2
    from privaudit.data.corpus import load_default_corpus
    from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor

    texts = [line for line in load_default_corpus() if line.strip()][:TEXTS]
    tokenizer = bpe_tokenizer(texts, vocab_size=384)
    base = tiny_gpt2(tokenizer, seed=seed)
    model = peft.get_peft_model(base, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], fan_in_fan_out=True, lora_dropout=0.0))
    rows = [tokenizer(text, add_special_tokens=False)["input_ids"][:32] for text in texts]
    width = max(len(row) for row in rows)
    tokens = torch.tensor([row + [0] * (width - len(row)) for row in rows])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
    generator = torch.Generator().manual_seed(seed)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens, mask), batch_size=BATCH, generator=generator)
    engine = opacus.PrivacyEngine(accountant="prv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus' secure-RNG note, peft's and functorch's notes
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model,
            optimizer=torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3),
            data_loader=loader,
            target_epsilon=epsilon,
            target_delta=DELTA,
            epochs=EPOCHS,
            max_grad_norm=1.0,
            noise_generator=torch.Generator().manual_seed(seed + 1),
        )
        with OpacusInLoopAuditor(model, optimizer, canaries_per_step=canaries_per_step, seed=seed, accountant=engine.accountant) as auditor:
            for _ in range(EPOCHS):
                for batch, batch_mask in loader:
                    optimizer.zero_grad()
                    if not len(batch):  # an empty Poisson batch: the step still runs (noise alone)
                        batch, batch_mask = tokens[:1], torch.zeros_like(mask[:1])
                    logits = model(input_ids=batch, attention_mask=batch_mask).logits[:, :-1]
                    weights = batch_mask[:, 1:].float()
                    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none")
                    ((losses * weights).sum(1) / weights.sum(1).clamp(min=1.0)).mean().backward()
                    optimizer.step()
    return auditor.result(delta=DELTA, claimed_epsilon=epsilon, claimed_delta=DELTA)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=EPSILON, help="the target ε of make_private_with_epsilon, the claim audited")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    from privaudit._core.results import library_versions

    rows = []
    for seed in range(args.seeds):
        start = time.perf_counter()
        result = lm_run(seed, epsilon=args.epsilon)
        verdict = result.verdict
        rows.append(
            {
                "seed": seed,
                "flagged": verdict.flagged,
                "end_to_end_bound": verdict.end_to_end.bound,
                "end_to_end_ratio": verdict.end_to_end.ratio,
                "bound_over_claimed": verdict.end_to_end.ratio,
                "per_step_bound": result.bound.epsilon,
                "per_step_ratio": verdict.per_step.ratio,
                "sigma_read": list(result.evidence.noise_multipliers),
                "sample_rate": result.evidence.sample_rate,
                "steps": result.evidence.run_steps,
                "seconds": time.perf_counter() - start,
            }
        )
        print(f"seed {seed}: end-to-end bound / claimed ε = {verdict.end_to_end.ratio:.3f}, flagged {verdict.flagged}")
    ratios = np.array([row["end_to_end_ratio"] for row in rows])
    out = {
        "benchmark": "opacus_verdict_lm",
        "model": "tiny GPT-2 (2 layers, 64 wide) with LoRA r=4 on c_attn (peft), Opacus, user's own loop",
        "epsilon": args.epsilon,
        "delta": DELTA,
        "config": {"epsilon": args.epsilon, "delta": DELTA, "epochs": EPOCHS, "batch_size": BATCH, "texts": TEXTS, "seeds": args.seeds},
        "end_to_end_ratio_mean": float(ratios.mean()),
        "end_to_end_ratio_min": float(ratios.min()),
        "flagged": sum(row["flagged"] for row in rows),
        "runs": rows,
        "versions": library_versions(),
    }
    write_json(out, args.output)


if __name__ == "__main__":
    main()
