"""White-box (and, with ``--black-box``, black-box) verdicts on a user's own DP fine-tuning loop of a causal LM: ``python benchmarks/opacus_verdict_lm.py [--seeds 3] [--epsilon 4] [--black-box] [--output FILE]``.

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

``--black-box`` adds privaudit's canaries to the same run: ``--canaries``
canaries of ``--canary-length`` tokens drawn uniformly from the tokenizer's
ordinary vocabulary (:func:`~privaudit.canaries.lm_provenance.prepare_lm_canaries`,
design ``random-tokens``, no prefix, the whole text scored), each included by
a fair coin, ``--copies`` times, in the user's training texts. The loop
trains as without them (same LoRA, Opacus, batch size, learning rate and
epochs: the data set is larger, so Opacus' sampling rate 16 / texts is
lower and its steps more), the in-loop white-box auditor stays attached,
and the final model is scored black-box: each canary's log-likelihood under
the fine-tuned model less the base model's
(:func:`~privaudit.audits.lm.scores.calibrated_scores`,
:class:`~privaudit.models.hf.HFCausalLMScorer`), then Steinke et al.'s
one-run bound at δ = 1e-5, 95%
(:func:`~privaudit.audits.lm.result.audit_lm_scores`; with ``--copies`` k > 1,
the group's bound converted to one record's ε by group privacy). The claim
is the user's target ε at δ = 1e-5 per text, so ``bound_over_claimed`` is
the black box's; the white box's is under ``white_box``, and ``design_ceiling`` is the most
the design could show (every canary guessed right). The defaults (1,000
canaries of 2 tokens, 2 copies; 150 of 8 tokens with 12 copies before) were
the best of the designs tried on pilot seeds 10-12 (docs/tightness.md): a
short canary's mean token loss has the longer gradient, so its own steps
move its score further against the run-to-run spread
(``benchmarks/lm_userloop_memorisation.py --length``), and fewer copies cost
the group conversion less. A canary that merges into one token when its text
is tokenised again (nothing to score) is replaced by the next drawn that
does not, before the coins are drawn. The loop seeds torch's global generator, as
a user's script would, for the two draws that come from it: peft's LoRA
initialisation and Opacus' Poisson batches. One seed per command on a busy
machine::

    python benchmarks/opacus_verdict_lm.py --black-box --epsilon 4 --seeds 1 --start 0 --append \\
        --output benchmarks/results/lm_userloop_blackbox_eps4.json   # then --start 1, --start 2

``--append`` adds the seeds to ``--output`` when it holds the same config.

``--hidden M`` attaches :class:`privaudit.integrations.opacus_hidden.OpacusHiddenStateAuditor`
instead of the in-loop auditor: M gradient canaries, each in every step by a
fair coin, the bound read from their final sums alone (the hidden state)::

    python benchmarks/opacus_verdict_lm.py --hidden 4000 --epsilon 4 --seeds 3 --output benchmarks/results/lm_userloop_hidden_eps4.json

``--full`` trains every weight instead of LoRA adapters (the same Adam,
Opacus settings, batches and epochs; one position row per text, as Opacus
needs once the position embeddings train), and ``--design new-tokens``
(with ``--full`` only: LoRA leaves the new embedding rows frozen) makes the
canaries as ``prepare_lm_canaries("new-tokens")`` does: a new token of the
canary's own, then a new secret token, the secret scored given it; the
user trains the resized model and tokenizer it returns. 500 canaries with
2 copies were the best on pilot seeds 10-12 at ε = 4 (docs/tightness.md)::

    python benchmarks/opacus_verdict_lm.py --black-box --full --design new-tokens --canaries 500 --copies 2 \
        --epsilon 4 --seeds 1 --start 0 --append --output benchmarks/results/lm_userloop_full_blackbox_eps4.json

Each black-box row also holds ``user_text_loss``: the user's own texts'
mean token loss under the base and the fine-tuned model, how much the loop
learned.

``--pool P`` chooses the canaries for this loop instead of drawing them: of
P drawn canaries, the ``--canaries`` that two shadow runs of the loop (seeds
of the auditor's own, complementary random halves of the P trained)
memorise most (:func:`memorisation`), their coins drawn afterwards. The
choice reads the base model, the user's texts and the shadow runs, never the
coins, so the canaries are fixed before the coins are drawn and the bound
stays valid. It did not raise the bound (docs/tightness.md;
``benchmarks/lm_userloop_memorisation.py`` measures why).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from opacus_verdict import write_json  # the sibling benchmark's writer (benchmarks/ is on the path when run as a script)

EPSILON, DELTA, EPOCHS, BATCH, TEXTS = 4.0, 1e-5, 3, 16, 320


@dataclasses.dataclass(frozen=True)
class BlackBox:
    """The black-box canaries put in the user's texts: how many, their tokens, the copies of each included one."""

    canaries: int = 1000
    length: int = 2  # tokens drawn from the ordinary vocabulary (the text is tokenised whole when trained and scored)
    copies: int = 2  # 1000 × 2 of 2 tokens: the best on pilot seeds 10-12 at ε = 4 of the designs docs/tightness.md lists; seeds 0-2 are reported
    confidence: float = 0.95
    pool: int = 0  # > 0: the canaries are the ones of this many drawn that two shadow runs of the loop memorise most (_shadow_selected)
    design: str = "random-tokens"  # or "new-tokens" (with --full only: LoRA leaves the new rows frozen)
    new_rows: str = "mean"  # new-tokens: where the new output rows start (prepare_lm_canaries' new_rows)


def lm_run(seed: int, *, canaries_per_step: int = 20, epsilon: float = EPSILON, black_box: BlackBox | None = None, full: bool = False, hidden: int = 0):
    """Fine-tune LoRA adapters (``full``: every weight) of a tiny GPT-2 with Opacus at ``epsilon`` in the user's own loop, audited in it: (the in-loop result, the black box's or None)."""
    run = user_loop(seed, canaries_per_step=canaries_per_step, epsilon=epsilon, black_box=black_box, full=full, hidden=hidden)
    if black_box is None:
        return run.result, None
    return run.result, _black_box(run, black_box, epsilon)


@dataclasses.dataclass(frozen=True)
class UserRun:
    """What one run of the user's loop leaves: the in-loop result, the fine-tuned and base models, the tokenizer, the canaries and the texts trained on."""

    result: object
    tuned: object
    reference: object
    tokenizer: object
    provenance: object
    texts: list


def user_loop(
    seed: int, *, canaries_per_step: int = 20, epsilon: float = EPSILON, black_box: BlackBox | None = None, full: bool = False, hidden: int = 0
) -> UserRun:
    """The user's loop, with the in-loop auditor attached (``hidden`` > 0: the hidden-state auditor, that many canaries) and, with ``black_box``, the included canaries among its texts."""
    from privaudit._core.seeding import child_seeds
    from privaudit.audits.lm.tiny import bpe_tokenizer, tiny_gpt2
    from privaudit.canaries.lm_provenance import prepare_lm_canaries
    from privaudit.data.corpus import load_default_corpus

    texts = [line for line in load_default_corpus() if line.strip()][:TEXTS]
    tokenizer = bpe_tokenizer(texts, vocab_size=384)
    base = tiny_gpt2(tokenizer, seed=seed)
    provenance, reference = None, None
    if black_box is not None:
        if black_box.design == "new-tokens":
            # each canary a new token of its own, then a new secret token, the secret scored given it; the user trains the resized model and tokenizer
            provenance, base, tokenizer = prepare_lm_canaries(
                "new-tokens",
                tokenizer,
                count=black_box.canaries,
                seed=child_seeds(seed, ["canaries"])["canaries"],
                length=1,
                model=base,
                new_rows=black_box.new_rows,
            )
        else:
            provenance = _random_token_canaries(tokenizer, black_box, seed)
            if black_box.pool:
                provenance = _shadow_selected(provenance, base, tokenizer, texts, black_box, epsilon, child_seeds(seed, ["shadow"])["shadow"])
        texts = texts + provenance.included_texts() * black_box.copies
        reference = copy.deepcopy(base)  # the base model, before peft puts its adapters into ``base``
    tuned, result = _train(base, tokenizer, texts, seed, epsilon, canaries_per_step=canaries_per_step, full=full, hidden=hidden)
    return UserRun(result, tuned, reference, tokenizer, provenance, texts)


def _random_token_canaries(tokenizer, black_box: BlackBox, seed: int):
    """``black_box.pool or black_box.canaries`` random-token canaries, each with at least 2 tokens when its text is tokenised again (nothing to score else)."""
    from privaudit._core.seeding import child_seeds
    from privaudit.canaries.lm_provenance import prepare_lm_canaries

    def draw(count: int):
        provenance, _, _ = prepare_lm_canaries(
            "random-tokens", tokenizer, count=count, seed=child_seeds(seed, ["canaries"])["canaries"], length=black_box.length, prefix="", span="text"
        )
        return provenance

    wanted = black_box.pool or black_box.canaries
    provenance = draw(wanted)
    scored = [len(tokenizer(text, add_special_tokens=False)["input_ids"]) >= 2 for text in provenance.texts]
    if all(scored):
        return provenance
    # short canaries whose tokens merge into one: keep the first that have two, drawn from twice as many
    provenance = draw(2 * wanted)
    two = [index for index, text in enumerate(provenance.texts) if len(tokenizer(text, add_special_tokens=False)["input_ids"]) >= 2]
    return _kept(provenance, np.array(two[:wanted]))


def _train(base, tokenizer, texts: list, seed: int, epsilon: float, *, canaries_per_step: int | None, full: bool = False, hidden: int = 0):
    """The user's training of ``base`` (changed in place by peft, or trained whole with ``full``) on ``texts``: (the fine-tuned model, the in-loop auditor's result, or None with ``canaries_per_step`` None)."""
    import contextlib

    import opacus
    import peft
    import torch

    from privaudit.integrations.opacus_hidden import OpacusHiddenStateAuditor
    from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor

    if full:
        model = base.train()
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)  # peft draws LoRA's A matrices from torch's global generator: the user seeds the run
            model = peft.get_peft_model(base, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], fan_in_fan_out=True, lora_dropout=0.0))
    rows = [tokenizer(text, add_special_tokens=False)["input_ids"][:32] for text in texts]
    width = max(len(row) for row in rows)
    tokens = torch.tensor([row + [0] * (width - len(row)) for row in rows])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
    generator = torch.Generator().manual_seed(seed)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens, mask), batch_size=BATCH, generator=generator)
    engine = opacus.PrivacyEngine(accountant="prv")
    with warnings.catch_warnings(), torch.random.fork_rng(devices=[]):
        warnings.simplefilter("ignore")  # Opacus' secure-RNG note, peft's and functorch's notes
        torch.manual_seed(seed + 2)  # Opacus' Poisson batches draw from torch's global generator (no secure RNG)
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
        auditor: Any = contextlib.nullcontext()
        if hidden:  # gradient canaries in every step, only their final sums read
            auditor = OpacusHiddenStateAuditor(model, optimizer, num_canaries=hidden, seed=seed, accountant=engine.accountant)
        elif canaries_per_step is not None:
            auditor = OpacusInLoopAuditor(model, optimizer, canaries_per_step=canaries_per_step, seed=seed, accountant=engine.accountant)
        with auditor:
            for _ in range(EPOCHS):
                for batch, batch_mask in loader:
                    optimizer.zero_grad()
                    if not len(batch):  # an empty Poisson batch: the step still runs (noise alone)
                        batch, batch_mask = tokens[:1], torch.zeros_like(mask[:1])
                    # one position row per text: Opacus reads a shared (1, T) row as a batch of one when the position embeddings train
                    positions = torch.arange(batch.shape[1]).expand_as(batch)
                    logits = model(input_ids=batch, attention_mask=batch_mask, position_ids=positions).logits[:, :-1]
                    weights = batch_mask[:, 1:].float()
                    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none")
                    ((losses * weights).sum(1) / weights.sum(1).clamp(min=1.0)).mean().backward()
                    optimizer.step()
    tuned = model._module.eval()
    if canaries_per_step is None:
        return tuned, None
    return tuned, auditor.result(delta=DELTA, claimed_epsilon=epsilon, claimed_delta=DELTA)


def _shadow_selected(pool, base, tokenizer, texts: list, black_box: BlackBox, epsilon: float, shadow_seed: int):
    """The ``black_box.canaries`` of the pool this loop memorises most in two shadow runs of its own; the coins are drawn afterwards.

    The auditor runs the user's loop twice on copies of the base model, with
    seeds of its own: once with a random half of the pool among the user's
    texts (``black_box.copies`` copies each), once with the other half. A
    candidate's memorisation is its log-likelihood under the run that trained
    on it less that under the run that did not (the base model's cancels).
    The top ``canaries`` are kept; their coins are then drawn from the pool's
    inclusion seed, as prepare_lm_canaries draws them. The selection reads the
    base model, the user's texts and the shadow runs, never those coins, so
    the canaries are fixed before the coins are drawn and Steinke et al.'s
    test holds as for drawn canaries.
    """
    memorised = memorisation(pool, base, tokenizer, texts, copies=black_box.copies, epsilon=epsilon, shadow_seed=shadow_seed)
    return _kept(pool, np.sort(np.argsort(-memorised, kind="stable")[: black_box.canaries]), shadow_seed=shadow_seed)


def _kept(pool, chosen: np.ndarray, **settings):
    """The provenance of the pool's ``chosen`` canaries, their coins drawn from the pool's inclusion seed as prepare_lm_canaries draws them (nothing before read them)."""
    included = np.random.default_rng(pool.inclusion_seed).random(len(chosen)) < pool.settings["inclusion_prob"]
    return dataclasses.replace(
        pool,
        prefixes=tuple(pool.prefixes[index] for index in chosen),
        secrets=tuple(pool.secrets[index] for index in chosen),
        included=tuple(bool(value) for value in included),
        settings=pool.settings | {"selected_from": len(pool.texts)} | settings,
    )


def memorisation(pool, base, tokenizer, texts: list, *, copies: int, epsilon: float, shadow_seed: int) -> np.ndarray:
    """Each pool canary's log-likelihood under a shadow run of the loop that trained on it less under one that did not (two runs, complementary random halves)."""
    from privaudit.audits.lm.scores import calibrated_scores
    from privaudit.models.hf import HFCausalLMScorer

    half = np.random.default_rng(shadow_seed).random(len(pool.texts)) < 0.5
    reference = HFCausalLMScorer(base, tokenizer, bos="none")
    memorised = np.zeros(len(pool.texts))
    for run, side in enumerate((half, ~half)):
        trained = [text for text, keep in zip(pool.texts, side, strict=True) if keep]
        seed = (shadow_seed + 10 * run) % 2**31
        tuned, _ = _train(copy.deepcopy(base), tokenizer, texts + trained * copies, seed, epsilon, canaries_per_step=None)
        scores = np.asarray(calibrated_scores(HFCausalLMScorer(tuned, tokenizer, bos="none"), pool, reference))
        memorised += np.where(side, scores, -scores)  # the base model's log-likelihood cancels
    return memorised


def _black_box(run: UserRun, black_box: BlackBox, epsilon: float) -> dict:
    """The final model's canaries scored black-box (log-likelihood less the base model's) and the one-run bound on a record's ε."""
    from privaudit.audits.lm.result import audit_lm_scores
    from privaudit.audits.lm.scores import calibrated_scores
    from privaudit.models.hf import HFCausalLMScorer
    from privaudit.stats.ceiling import one_run_record_ceiling

    started = time.perf_counter()
    # the user's loop puts no special token before a text (the BPE tokenizer has none)
    tuned, reference, tokenizer, provenance = run.tuned, run.reference, run.tokenizer, run.provenance
    scores = calibrated_scores(HFCausalLMScorer(tuned, tokenizer, bos="none"), provenance, HFCausalLMScorer(reference, tokenizer, bos="none"))
    auc, tpr, bound = audit_lm_scores(scores, provenance.included, delta=DELTA, confidence=black_box.confidence, copies=black_box.copies)
    learned = {name: _nats_per_token(model, tokenizer, run.texts[:TEXTS]) for name, model in (("base", reference), ("tuned", tuned))}
    num_in = int(sum(provenance.included))
    # the most this design can show: every canary guessed right, the same m, members, copies and test
    ceiling = one_run_record_ceiling(
        len(provenance.included), num_in=num_in, copies=black_box.copies, delta=DELTA, confidence=black_box.confidence, methods=bound.methods
    )
    return {
        "auc": auc,
        "tpr_at_1pct_fpr": tpr,
        "epsilon_lower_bound": bound.epsilon,
        "claimed_epsilon": epsilon,  # the user's target ε at δ = 1e-5, per text
        "bound_over_claimed": bound.epsilon / epsilon,
        "design_ceiling": ceiling,
        "bound_over_design_ceiling": bound.epsilon / ceiling if ceiling > 0 else None,
        "num_canaries": len(provenance.included),
        "num_in": num_in,
        "training_texts": len(run.texts),
        # how much the loop learned: the user's own texts' mean token loss (nats, as trained: at most 32 tokens) before and after
        "user_text_loss": learned,
        "score_seconds": time.perf_counter() - started,
    }


def _nats_per_token(model, tokenizer, texts: list) -> float:
    """The mean next-token cross-entropy of ``texts`` under ``model`` (nats per predicted token, each text cut to 32 tokens as the loop trains it)."""
    import torch

    total, count = 0.0, 0
    model.eval()
    with torch.no_grad():
        for text in texts:
            ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"][:32]])
            if ids.shape[1] >= 2:
                logits = model(input_ids=ids).logits[0, :-1]
                total += float(torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="sum"))
                count += ids.shape[1] - 1
    return total / count


def _white_box(result) -> dict:
    verdict = result.verdict
    return {
        "flagged": verdict.flagged,
        "end_to_end_bound": verdict.end_to_end.bound,
        "end_to_end_ratio": verdict.end_to_end.ratio,
        "per_step_bound": result.bound.epsilon,
        "per_step_ratio": verdict.per_step.ratio,
        "sigma_read": list(result.evidence.noise_multipliers),
        "sample_rate": result.evidence.sample_rate,
        "steps": result.evidence.run_steps,
    } | (
        {"composed_bound": result.composed_epsilon, "heuristic": result.heuristic.epsilon, "bound_over_heuristic": result.bound_over_heuristic}
        if hasattr(result, "composed_epsilon")
        else {}
    )


def main() -> None:
    from privaudit.canaries.lm import NEW_ROWS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds, from --start")
    parser.add_argument("--start", type=int, default=0, help="the first seed")
    parser.add_argument("--epsilon", type=float, default=EPSILON, help="the target ε of make_private_with_epsilon, the claim audited")
    parser.add_argument("--black-box", action="store_true", help="put privaudit's canaries in the user's texts and bound ε from the final model too")
    parser.add_argument("--canaries", type=int, default=BlackBox.canaries, help="with --black-box: canaries, each included by a fair coin")
    parser.add_argument("--canary-length", type=int, default=BlackBox.length, help="with --black-box: ordinary-vocabulary tokens per canary")
    parser.add_argument("--copies", type=int, default=BlackBox.copies, help="with --black-box: copies of each included canary in the texts")
    parser.add_argument(
        "--pool", type=int, default=BlackBox.pool, help="with --black-box: keep the --canaries of this many drawn that shadow runs memorise most (0: no choice)"
    )
    parser.add_argument("--full", action="store_true", help="the user fine-tunes every weight (no LoRA)")
    parser.add_argument(
        "--design", choices=("random-tokens", "new-tokens"), default=BlackBox.design, help="with --black-box: the canaries (new-tokens needs --full)"
    )
    parser.add_argument("--new-rows", choices=NEW_ROWS, default=BlackBox.new_rows, help="with --design new-tokens: the new rows' start")
    parser.add_argument("--hidden", type=int, default=0, help="audit from the final sums of this many gradient canaries (OpacusHiddenStateAuditor)")
    parser.add_argument("--append", action="store_true", help="add the runs to --output's when it holds the same config")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    from privaudit._core.results import library_versions

    if args.design == "new-tokens" and not args.full:
        parser.error("--design new-tokens needs --full: LoRA on c_attn leaves the new tokens' embedding rows frozen")
    if args.pool and (args.full or args.design != "random-tokens"):
        parser.error("--pool chooses random-token canaries with shadow runs of the LoRA loop: it takes neither --full nor --design new-tokens")
    if args.new_rows != "mean" and args.design != "new-tokens":
        parser.error("--new-rows starts the rows of new tokens: it needs --design new-tokens")
    black_box = BlackBox(args.canaries, args.canary_length, args.copies, pool=args.pool, design=args.design, new_rows=args.new_rows) if args.black_box else None
    config = {"epsilon": args.epsilon, "delta": DELTA, "epochs": EPOCHS, "batch_size": BATCH, "texts": TEXTS} | ({"full": True} if args.full else {})
    if args.hidden:
        config |= {"hidden_state_canaries": args.hidden}
    if black_box is not None:
        config |= {
            "black_box": dataclasses.asdict(black_box),
            "design": (
                "new tokens: a new token of its own, then a new secret token, scored given it"
                if black_box.design == "new-tokens"
                else "random-tokens from the ordinary vocabulary, no prefix, whole text scored, base-calibrated"
            )
            + (f"; the {black_box.canaries} of {black_box.pool} drawn that two shadow runs memorise most" if black_box.pool else ""),
        }
    earlier: list[dict] = []
    if args.append and args.output is not None and args.output.exists():
        previous = json.loads(args.output.read_text(encoding="utf-8"))
        if {key: value for key, value in previous["config"].items() if key != "seeds"} != config:
            raise SystemExit(f"--append: {args.output} holds another config; give another --output")
        earlier = previous["runs"]
    seeds = range(args.start, args.start + args.seeds)
    rows = [row for row in earlier if row["seed"] not in seeds]
    for seed in seeds:
        start = time.perf_counter()
        result, black = lm_run(seed, epsilon=args.epsilon, black_box=black_box, full=args.full, hidden=args.hidden)
        white = _white_box(result)
        if black is None:
            row = {"seed": seed, **white, "bound_over_claimed": white["end_to_end_ratio"]}
        else:
            row = {"seed": seed, **black, "white_box": white}
        rows.append(row | {"seconds": time.perf_counter() - start})
        black_text = (
            ""
            if black is None
            else f"; black box: bound {black['epsilon_lower_bound']:.3f}, ÷ claimed ε {black['bound_over_claimed']:.3f}, AUC {black['auc']:.3f}"
            f", user texts' loss {black['user_text_loss']['base']:.4f} -> {black['user_text_loss']['tuned']:.4f} nats/token"
        )
        print(f"seed {seed}: white box end-to-end bound / claimed ε = {white['end_to_end_ratio']:.3f}, flagged {white['flagged']}{black_text}", flush=True)
    rows.sort(key=lambda row: row["seed"])
    white_ratios = np.array([row.get("white_box", row)["end_to_end_ratio"] for row in rows])
    out = {
        "benchmark": "opacus_verdict_lm",
        "model": "tiny GPT-2 (2 layers, 64 wide) with LoRA r=4 on c_attn (peft), Opacus, user's own loop",
        "epsilon": args.epsilon,
        "delta": DELTA,
        "config": config | {"seeds": [row["seed"] for row in rows]},
        "end_to_end_ratio_mean": float(white_ratios.mean()),
        "end_to_end_ratio_min": float(white_ratios.min()),
        "flagged": sum(row.get("white_box", row)["flagged"] for row in rows),
        "runs": rows,
        "versions": library_versions(),
    }
    if black_box is not None:
        ratios = np.array([row["bound_over_claimed"] for row in rows])
        out |= {"black_box_ratio_mean": float(ratios.mean()), "black_box_ratio_min": float(ratios.min())}
    write_json(out, args.output)


if __name__ == "__main__":
    main()
