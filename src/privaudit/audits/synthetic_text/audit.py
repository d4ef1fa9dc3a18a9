"""Audit of released synthetic text: the canaries' echoes in text a fine-tuned LM generated (Meeus et al., "The Canary's Echo", ICML 2025).

Two phases, as for ``lm-one-run``: :func:`privaudit.canaries.lm_provenance.prepare_lm_canaries`
draws the canaries (``prefix-suffix``, an in-distribution prefix and a
high-perplexity suffix, is the design made for this) and the fair coins;
the user fine-tunes on the data with the included canaries, generates the
synthetic text and releases it. ``privaudit audit synthetic-text
--synthetic FILE --provenance FILE`` scores each canary against the text
alone (:func:`~privaudit.canaries.lm_synthetic.canary_echo_scores`: the
n-gram likelihood or the best Jaccard match) and reports the AUC, the TPR
at 1% FPR and the one-run ε lower bound of the generation pipeline
(fine-tuning and sampling together), beside ``claimed_epsilon``.
``privaudit audit lm-one-run --synthetic`` runs the same scoring.

Without files, the embedded default runs end to end on CPU in seconds
(:func:`tiny_synthetic_text`): a tiny GPT-2 and BPE tokenizer with an EOS
token trained on privaudit's corpus (lines cut to ``line_words`` words), canaries of ``design`` repeated
``canary_repeats`` times, a fine-tune, and ``num_synthetic`` records
sampled from it, each prompted with the first ``prompt_words`` words of a
line of the data (:func:`~privaudit.canaries.lm_sampling.sample_synthetic_texts`).
The sampled text and the provenance come back as the run's files.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence

import numpy as np

from ..._core.seeding import child_seeds
from ..._core.validation import check_choice, check_count, check_positive, check_probability
from ...canaries.lm import DESIGNS, data_prefixes
from ...canaries.lm_provenance import LMProvenance, prepare_lm_canaries
from ...canaries.lm_sampling import sample_synthetic_texts
from ...canaries.lm_synthetic import SIGNALS
from ...data.corpus import load_default_corpus
from ...models.loading import check_import_path, import_callable
from ..base import Audit, AuditRun, Progress, no_progress
from ..family_test import check_family_fields, family_plan, inert_family_fields
from ..lm.result import CanaryOneRunResult, canary_copies, canary_result_fields, check_family_copies, with_family
from ..lm.scores import span_convention
from ..lm.synthetic import EOS, MODEL_SIGNAL, canary_signals, score_synthetic_files
from ..lm.tiny import bpe_tokenizer, fine_tune, tiny_gpt2
from ..verdicts import check_claim_fields

__all__ = ["AUDIT", "SyntheticTextAudit", "SyntheticTextConfig", "SyntheticTextResult", "tiny_synthetic_text"]

THREAT_MODEL = "released synthetic text only: the auditor compares each canary with the synthetic corpus (Meeus et al. 2025)"


@dataclasses.dataclass(frozen=True)
class SyntheticTextConfig:
    """The signal and the bound's settings; the rest drives the embedded default only (a provenance fixes the canaries, a file the text).

    >>> SyntheticTextConfig(synthetic_signal="cosine")
    Traceback (most recent call last):
    ...
    ValueError: `synthetic_signal` must be one of 'ngram', 'jaccard', 'model', got 'cosine'
    """

    synthetic_signal: str = "ngram"
    ngram_order: int = 2
    synthetic_train: str | None = None  # with synthetic_signal "model": package.module:fn, fn(texts, *, seed) -> (model, tokenizer)
    claimed_epsilon: float | None = None  # the DP guarantee claimed for the generation pipeline, end to end, per record (None: no claim)
    claimed_delta: float | None = None  # its δ; None: `delta`
    delta: float = 1e-5
    confidence: float = 0.95
    design: str = "prefix-suffix"
    num_canaries: int = 64
    secret_length: int = 2
    canary_repeats: int = 8  # the embedded default's copies of each included canary in its fine-tuning data
    canary_copies: int | None = None  # copies in your fine-tuning data; None: read from the provenance `privaudit canaries lm` wrote
    corpus_chars: int = 3000
    line_words: int = 12  # the corpus's lines cut to their first words: short records, and fast steps
    vocab_size: int = 384
    base_steps: int = 10
    steps: int = 120
    learning_rate: float = 3e-3
    num_synthetic: int = 800
    prompt_words: int = 2
    max_new_tokens: int = 24
    temperature: float = 1.0
    top_k: int | None = None
    seed: int = 0
    # the claim's own family (privaudit.audits.family_test), tested by order statistics beside the generic bound
    family: str | None = None
    family_claim: float | None = None
    family_sampling_rate: float | None = None
    family_steps: int | None = None

    def __post_init__(self) -> None:
        check_choice(self.synthetic_signal, "synthetic_signal", (*SIGNALS, MODEL_SIGNAL))
        if (self.synthetic_signal == MODEL_SIGNAL) != (self.synthetic_train is not None):
            raise ValueError("`synthetic_train` (--synthetic-train) must be given with `synthetic_signal` 'model', and only with it")
        if self.synthetic_train is not None:
            check_import_path(self.synthetic_train, "synthetic_train")
        check_count(self.ngram_order, "ngram_order", minimum=1, maximum=8)
        check_claim_fields(self.claimed_epsilon, self.claimed_delta)
        check_probability(self.delta, "delta")
        check_probability(self.confidence, "confidence")
        check_choice(self.design, "design", DESIGNS)
        check_count(self.num_canaries, "num_canaries", minimum=4)
        check_count(self.secret_length, "secret_length", minimum=1)
        check_count(self.canary_repeats, "canary_repeats", minimum=1)
        if self.canary_copies is not None:
            check_count(self.canary_copies, "canary_copies", minimum=1)
        check_count(self.corpus_chars, "corpus_chars", minimum=1000)
        check_count(self.line_words, "line_words", minimum=4)
        check_count(self.vocab_size, "vocab_size", minimum=260)
        check_count(self.base_steps, "base_steps", minimum=1)
        check_count(self.steps, "steps", minimum=1)
        check_positive(self.learning_rate, "learning_rate")
        check_count(self.num_synthetic, "num_synthetic", minimum=1)
        check_count(self.prompt_words, "prompt_words", minimum=1, maximum=8)
        check_count(self.max_new_tokens, "max_new_tokens", minimum=1, maximum=48)
        check_positive(self.temperature, "temperature")
        if self.top_k is not None:
            check_count(self.top_k, "top_k", minimum=1)
        check_family_fields(self)


@dataclasses.dataclass(frozen=True)
class SyntheticTextResult(CanaryOneRunResult):
    """The one-run audit of the canaries' echoes in released synthetic text."""

    config: SyntheticTextConfig
    synthetic: str | None  # the --synthetic file (None: the embedded default's sampled text)
    provenance: str | None
    source: str
    num_records: int
    threat_model: str = dataclasses.field(default=THREAT_MODEL, kw_only=True)

    def scored_from(self, copies: str) -> str:
        return f"from released synthetic text ({self.design} canaries, {self.config.synthetic_signal} signal{copies})"

    def inert_config_fields(self) -> frozenset[str]:
        """With the user's synthetic text and provenance, the settings that build and sample the embedded default did not apply."""
        family = inert_family_fields(self.config)  # no family named: its keys stay out, as before they existed
        if self.synthetic is None and self.provenance is None:
            return family
        return family | frozenset(
            {"design", "num_canaries", "secret_length", "canary_repeats", "corpus_chars", "line_words", "vocab_size", "base_steps", "steps", "learning_rate"}
            | {"num_synthetic", "prompt_words", "max_new_tokens", "temperature", "top_k"}
        )


def tiny_synthetic_text(
    config: SyntheticTextConfig, designs: Sequence[str] | None = None, report: Progress = no_progress
) -> tuple[dict[str, LMProvenance], list[str]]:
    """The embedded default's provenances (one per design, ``config.design`` alone by default) and the synthetic text of one fine-tuned tiny GPT-2.

    Every design's included canaries go into the same fine-tuning data, each
    by its own fair coins, so the designs are compared on one model and one
    synthetic corpus. Training lines end with an EOS token, so sampled
    records end where the model learnt that lines end.
    """
    designs = tuple(designs or (config.design,))
    seeds = child_seeds(config.seed, ["model", "base", "canaries", "fine-tune", "prompts", "sampling"])
    design_seeds = child_seeds(seeds["canaries"], DESIGNS)  # by the design's place in DESIGNS: one design's canaries do not depend on the others run
    corpus = [" ".join(line.split()[: config.line_words]) for line in load_default_corpus(max_chars=config.corpus_chars)]
    tokenizer = bpe_tokenizer(corpus, vocab_size=config.vocab_size)
    tokenizer.add_special_tokens({"eos_token": EOS})
    report("training the tiny GPT-2 base model", detail=f"{config.base_steps} steps on {len(corpus)} lines")
    model = tiny_gpt2(tokenizer, seed=seeds["model"])
    model = fine_tune(model, tokenizer, [text + EOS for text in corpus], steps=config.base_steps, seed=seeds["base"], learning_rate=config.learning_rate)
    provenances: dict[str, LMProvenance] = {}
    for design in designs:
        provenances[design], model, tokenizer = prepare_lm_canaries(
            design, tokenizer, count=config.num_canaries, seed=design_seeds[design], length=config.secret_length, model=model, texts=corpus
        )
    provenances = {design: dataclasses.replace(record, settings={**record.settings, "copies": config.canary_repeats}) for design, record in provenances.items()}
    canaries = [text for record in provenances.values() for text in record.included_texts()] * config.canary_repeats
    report("fine-tuning with the included canaries", detail=f"{config.steps} steps")
    data = [text + EOS for text in list(corpus) + canaries]
    tuned = fine_tune(model, tokenizer, data, steps=config.steps, seed=seeds["fine-tune"], learning_rate=config.learning_rate)
    report("sampling the synthetic text", detail=f"{config.num_synthetic} records")
    prompts = [prefix.rstrip() for prefix in data_prefixes(corpus, config.num_synthetic, config.prompt_words, np.random.default_rng(seeds["prompts"]))]
    synthetic = sample_synthetic_texts(
        tuned, tokenizer, prompts, max_new_tokens=config.max_new_tokens, temperature=config.temperature, top_k=config.top_k, seed=seeds["sampling"]
    )
    return provenances, synthetic


def run_synthetic_text(config: SyntheticTextConfig, *, synthetic=None, provenance=None, progress: Progress | None = None) -> AuditRun:
    """Score the canaries against the synthetic text (the user's files, or the embedded default's) and bound ε from one run."""
    started = time.perf_counter()
    report = progress or no_progress
    artifacts: dict[str, bytes] = {}
    claimed_family = family_plan(config)  # the claim's own family, built before any training or scoring
    if claimed_family is not None:
        check_family_copies(config, config.canary_copies if config.canary_copies is not None else 1)
        if synthetic is None and provenance is None:
            check_family_copies(config, config.canary_repeats)  # the embedded default inserts each included canary this many times
    if synthetic is None and provenance is None:
        if config.synthetic_train is not None:
            import_callable(config.synthetic_train, "--synthetic-train")  # refused before the embedded default trains anything
        provenances, corpus = tiny_synthetic_text(config, report=report)
        record = provenances[config.design]
        copies = canary_copies(record, given=config.canary_copies)
        scores, signals = canary_signals(
            record, corpus, signal=config.synthetic_signal, n=config.ngram_order, train=config.synthetic_train, seed=config.seed, report=report
        )
        source = "synthetic text sampled from the embedded tiny GPT-2 fine-tuned on privaudit's corpus"
        artifacts = {"synthetic.txt": ("\n".join(corpus) + "\n").encode("utf-8"), "provenance.json": json.dumps(record.to_dict(), indent=2).encode("utf-8")}
    elif synthetic is None:
        raise ValueError("`--synthetic` and `--provenance` must be given together (or neither, to run the embedded default)")
    else:
        record, corpus, scores, signals, copies = score_synthetic_files(
            provenance,
            synthetic,
            signal=config.synthetic_signal,
            n=config.ngram_order,
            copies=config.canary_copies,
            train=config.synthetic_train,
            seed=config.seed,
            report=report,
        )
        source = f"synthetic corpus {synthetic}"
    check_family_copies(config, copies[0])
    fields = canary_result_fields(
        record, scores, delta=config.delta, confidence=config.confidence, copies=copies[0], claimed=config.claimed_epsilon, claimed_delta=config.claimed_delta
    )
    fields = with_family(fields, claimed_family, config)
    result = SyntheticTextResult(
        **fields,
        config=config,
        synthetic=None if synthetic is None else str(synthetic),
        provenance=None if provenance is None else str(provenance),
        source=source,
        num_records=len(corpus),
        seconds=time.perf_counter() - started,
        conventions=(*signals, span_convention(record), copies[1]),
    )
    return AuditRun("synthetic-text", config, result, artifacts=artifacts)


class SyntheticTextAudit(Audit):
    """Audit of released synthetic text: the canaries' echoes in it, fair coins, one ε lower bound."""

    name = "synthetic-text"
    title = "Released synthetic text (the canaries' echoes, one-run ε)"
    description = "Audit of synthetic text a fine-tuned LM generated: canaries included by fair coins, their n-gram or Jaccard echoes in the text, AUC, TPR at 1% FPR and the one-run ε lower bound."
    config_type = SyntheticTextConfig
    result_type = SyntheticTextResult
    default_resource = "synthetic-text.json"
    requires = ("torch", "transformers", "tokenizers")
    tiny_overrides = {"num_canaries": 16, "base_steps": 3, "steps": 5, "num_synthetic": 40, "max_new_tokens": 8, "corpus_chars": 1500, "vocab_size": 300}

    def run(self, config: SyntheticTextConfig, *, progress: Progress | None = None, synthetic=None, provenance=None) -> AuditRun:
        return run_synthetic_text(config, synthetic=synthetic, provenance=provenance, progress=progress)


AUDIT = SyntheticTextAudit()
