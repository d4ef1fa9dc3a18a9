"""One-run audit of a causal LM's fine-tuning from canaries included by fair coins (Panda et al. 2025; Steinke et al. 2023).

Two phases where the training is the user's: :func:`privaudit.canaries.lm_provenance.prepare_lm_canaries`
draws the canaries and the coins and writes the provenance; the user adds
the included canaries' texts to the fine-tuning data and fine-tunes (full or
LoRA, with or without DP); ``privaudit audit lm-one-run --model DIR
--provenance FILE [--base-model DIR]`` scores every canary
(:mod:`.lm_one_run_scores`) and reports the AUC, the TPR at 1% FPR, and
:func:`~privaudit.stats.one_run_combined.one_run_lower_bound` at ``delta``
beside ``claimed_epsilon``. The bound is a lower bound: membership was
drawn by fair coins, so the guessing bounds hold for any score.

Without ``--model``, the embedded default runs end to end on CPU in
seconds (:mod:`.lm_one_run_tiny`): a tiny GPT-2 and BPE tokenizer trained on
privaudit's corpus, canaries of ``design``, a short fine-tune.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from ..._core.seeding import child_seeds
from ...canaries.lm_corpus import insertion_convention
from ...canaries.lm_provenance import LMProvenance, check_tokenizer, prepare_lm_canaries, read_lm_provenance
from ...data.corpus import load_default_corpus
from ...models.hf import HFCausalLMScorer, quiet_loading
from ...models.hf_directory import load_hf_directory
from ...models.lora import is_adapter_directory, load_lora_adapter
from ..base import Audit, AuditRun, Progress, no_progress
from ..family_test import family_plan
from .result import (
    SYNTHETIC_THREAT_MODEL,
    THREAT_MODEL,
    LMOneRunConfig,
    LMOneRunResult,
    canary_copies,
    canary_result_fields,
    check_family_copies,
    with_family,
)
from .scores import calibrated_scores, span_convention
from .synthetic import score_synthetic_files
from .tiny import bpe_tokenizer, fine_tune, tiny_gpt2

__all__ = ["AUDIT", "LMOneRunAudit"]


def _scorer(model, tokenizer, config: LMOneRunConfig):
    return HFCausalLMScorer(model, tokenizer, bos=config.bos, seed=config.seed)


def _load(directory, provenance: LMProvenance, option: str):
    if directory is None or not Path(directory).is_dir():
        raise ValueError(f"`{option}` must be a Hugging Face model directory (save_pretrained), got {str(directory)!r}")
    with quiet_loading():
        loaded = load_hf_directory(directory, option)  # on the GPU when there is one
    embeddings = loaded.model.get_input_embeddings().num_embeddings if hasattr(loaded.model, "get_input_embeddings") else None
    check_tokenizer(provenance, loaded.tokenizer, option, embeddings)
    return loaded


def _own_model(config: LMOneRunConfig, model, provenance_file, base_model, report: Progress):
    """Scorers of the user's saved model (and base model) for the provenance's canaries; every input checked before any scoring."""
    if model is None or provenance_file is None:
        raise ValueError("`--model` and `--provenance` must be given together (or neither, to run the embedded tiny GPT-2)")
    provenance = read_lm_provenance(provenance_file)
    report("loading the model", detail=str(model))
    loaded, base, loading = _load_tuned_and_base(model, base_model, provenance)
    scorer = _scorer(loaded.model, loaded.tokenizer, config)
    base_scorer = _scorer(base.model, base.tokenizer, config) if base is not None else None
    return provenance, scorer, base_scorer, loaded.source, loading


def _load_tuned_and_base(model, base_model, provenance: LMProvenance):
    """(fine-tuned, base or None, conventions): a LoRA adapter directory as ``--model`` is applied to ``--base-model``, which it then requires."""
    if is_adapter_directory(base_model):
        raise ValueError("`--base-model` must be a full model directory (save_pretrained), got a LoRA adapter directory (adapter_config.json)")
    if not is_adapter_directory(model):
        tuned = _load(model, provenance, "--model")
        return tuned, (_load(base_model, provenance, "--base-model") if base_model is not None else None), ()
    if base_model is None:
        raise ValueError("`--model` is a LoRA adapter directory (adapter_config.json): give `--base-model`, the model the adapter was trained on")
    base = _load(base_model, provenance, "--base-model")
    tuned, convention = load_lora_adapter(model, base)
    return tuned, base, (convention,)


def _tiny(config: LMOneRunConfig, report: Progress):
    """The embedded default: tokenizer, base model, canaries, fine-tune, and scorers of the fine-tuned and base models."""
    seeds = child_seeds(config.seed, ["model", "base", "canaries", "fine-tune"])
    corpus = load_default_corpus(max_chars=config.corpus_chars)
    report("training the tiny GPT-2 base model", detail=f"{config.base_steps} steps on {len(corpus)} lines")
    tokenizer = bpe_tokenizer(corpus, vocab_size=config.vocab_size)
    base = fine_tune(
        tiny_gpt2(tokenizer, seed=seeds["model"]), tokenizer, corpus, steps=config.base_steps, seed=seeds["base"], learning_rate=config.learning_rate
    )
    provenance, base, tokenizer = prepare_lm_canaries(
        config.design, tokenizer, count=config.num_canaries, seed=seeds["canaries"], length=config.secret_length, span=config.span, model=base, texts=corpus
    )
    provenance = dataclasses.replace(provenance, settings={**provenance.settings, "copies": config.canary_repeats})
    report("fine-tuning with the included canaries", detail=f"{config.steps} steps")
    data = list(corpus) + provenance.included_texts() * config.canary_repeats
    tuned = fine_tune(base, tokenizer, data, steps=config.steps, seed=seeds["fine-tune"], learning_rate=config.learning_rate)
    return provenance, _scorer(tuned, tokenizer, config), _scorer(base, tokenizer, config), "embedded tiny GPT-2 fine-tuned on privaudit's corpus"


def _synthetic_scores(config: LMOneRunConfig, provenance_file, synthetic, model, report: Progress):
    """The canaries' membership signals against the synthetic corpus; every input checked before any scoring."""
    if model is not None:
        raise ValueError("`--synthetic` audits the released text alone: give it with --provenance and without --model or --base-model")
    record, _, scores, (signal,), copies = score_synthetic_files(
        provenance_file, synthetic, signal=config.synthetic_signal, n=config.ngram_order, copies=config.canary_copies, report=report
    )
    return record, scores, signal, copies


def run_lm_one_run(config: LMOneRunConfig, *, model=None, provenance=None, base_model=None, synthetic=None, progress: Progress | None = None) -> LMOneRunResult:
    """Score the canaries under the fine-tuned model (the user's with ``model``), or against ``synthetic`` text, and bound ε from one run."""
    started = time.perf_counter()
    report = progress or no_progress
    conventions: tuple = ()
    loading: tuple = ()  # conventions of how the user's model was loaded (a LoRA adapter)
    base_scorer = None
    claimed_family = family_plan(config)  # the claim's own family, built before any training or scoring
    if claimed_family is not None and config.canary_copies is not None:
        check_family_copies(config, config.canary_copies)
    if claimed_family is not None and synthetic is None and model is None and provenance is None and base_model is None:
        check_family_copies(config, config.canary_repeats)  # the embedded default inserts each included canary this many times
    if synthetic is not None:
        record, scores, signal, (copies, copies_convention) = _synthetic_scores(config, provenance, synthetic, model or base_model, report)
        source, conventions = f"synthetic corpus {synthetic}", (signal,)
    else:
        embedded = model is None and provenance is None and base_model is None
        if embedded:
            record, scorer, base_scorer, source = _tiny(config, report)
        else:
            record, scorer, base_scorer, source, loading = _own_model(config, model, provenance, base_model, report)
        copies, copies_convention = canary_copies(record, given=config.canary_copies)  # before any scoring
        check_family_copies(config, copies)
        report("scoring the canaries", detail=f"{len(record.included)} canaries")
        scores = calibrated_scores(scorer, record, base_scorer)
        conventions = (*loading, scorer.special_tokens.convention)
    check_family_copies(config, copies)
    fields = canary_result_fields(
        record, scores, delta=config.delta, confidence=config.confidence, copies=copies, claimed=config.claimed_epsilon, claimed_delta=config.claimed_delta
    )
    fields = with_family(fields, claimed_family, config)
    return LMOneRunResult(
        **fields,
        config=config,
        model=None if model is None else str(model),
        provenance=None if provenance is None else str(provenance),
        base_model=None if base_model is None else str(base_model),
        synthetic=None if synthetic is None else str(synthetic),
        calibrated=base_scorer is not None,
        model_source=source,
        seconds=time.perf_counter() - started,
        conventions=(*conventions, span_convention(record), copies_convention, *insertion_convention(record)),
        threat_model=THREAT_MODEL if synthetic is None else SYNTHETIC_THREAT_MODEL,
    )


class LMOneRunAudit(Audit):
    """One-run audit of a causal LM's fine-tuning: strong canaries, fair coins, one ε lower bound."""

    name = "lm-one-run"
    title = "LM fine-tuning in one run (strong canaries, one-run ε)"
    description = "One-run audit of causal-LM fine-tuning: canaries included by fair coins, AUC, TPR at 1% FPR and the one-run ε lower bound."
    config_type = LMOneRunConfig
    result_type = LMOneRunResult
    default_resource = "lm-one-run.json"
    requires = ("torch", "transformers", "tokenizers")
    tiny_overrides = {"num_canaries": 40, "base_steps": 5, "steps": 5, "corpus_chars": 5000, "vocab_size": 300}

    def run(self, config: LMOneRunConfig, *, progress: Progress | None = None, model=None, provenance=None, base_model=None, synthetic=None) -> AuditRun:
        result = run_lm_one_run(config, model=model, provenance=provenance, base_model=base_model, synthetic=synthetic, progress=progress)
        return AuditRun(self.name, config, result)


AUDIT = LMOneRunAudit()
