"""Phase two of the Secret Sharer on the user's own Hugging Face model: ``audit secret-sharer --model DIR --provenance FILE``.

Nothing is trained: the canaries were inserted by ``privaudit canaries
insert`` (:func:`privaudit.canaries.corpus.insert_into_corpus`), the user
trained on that corpus, and this run measures the canaries under the saved
model (:func:`.secret_sharer_measure.measure_canaries`): exposure exact over
R (when |R| is at most ``max_exact``), among sampled references and
extrapolated, the ε lower bound the exposures imply, the random-guessing
baselines, and optionally shortest-path extraction.

The result records the conventions the numbers rest on
(:class:`~privaudit._core.conventions.Convention`): the special tokens
before each text (``--bos``: checked on the training corpus unless given)
and the scored span (the secret given the prefix; whole texts rank alike).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from ...canaries.corpus import read_corpus_texts, read_provenance, reference_secrets
from ...models.hf import HFCausalLMScorer, quiet_loading
from ...models.loading import load_model
from ..base import AuditResult, AuditRun, Headline
from ..verdicts import exposure_verdict
from .measure import exposure_fields, exposure_headline, exposure_observations, measure_with

__all__ = ["MAX_EXACT", "OwnModelSecretSharerResult", "run_own_model"]

MAX_EXACT = 100_000  # score all of R for exact exposure up to this many candidates


@dataclasses.dataclass(frozen=True)
class OwnModelSecretSharerResult(AuditResult):
    """Exposure of the canaries inserted into the user's corpus, under the user's model; the ε bound; extraction.

    ``config`` records the model, the provenance file, the canaries' format
    and schedule (from the provenance) and the measurement settings.
    ``conventions`` records the special tokens and the scored span. Each
    canary's ``log_perplexity_bits`` is the bits of its tokens after ``P``
    (the secret given the prefix, :mod:`privaudit.models.hf`): its whole
    text's log-perplexity less ``bits(P)``, which the scored-span convention
    gives and which is the same for every candidate.
    """

    config: dict
    model_source: str
    corpus_sha256: str
    canaries: tuple[dict, ...]
    space_size: int
    num_references: int
    baselines: dict
    epsilon_bound: dict
    extraction: dict | None
    skewnorm_fit: dict
    seconds: float
    threat_model: str = "black-box, final model: the auditor scores texts by the user's model's log-perplexity"
    dp_comparison: None = None  # nothing is trained here, so there is no DP model to compare with

    def headline(self) -> Headline:
        return exposure_headline(self.canaries, self.baselines)


def _check_settings(config, default, record) -> None:
    """Refuse the options that only mean something when privaudit trains the model itself."""
    if config.target_epsilon is not None or config.compare_dp_epsilon is not None:
        raise ValueError("`--dp-epsilon` and `--compare-dp` train privaudit's own model; with `--model` your model is measured as it is")
    if config.template not in (default.template, record.canary_format.template):
        raise ValueError(
            f"`--template` comes from the provenance with `--model`: the canaries were inserted as {record.canary_format.template!r}, got {config.template!r}"
        )
    if tuple(config.schedule) not in (tuple(default.schedule), tuple(record.schedule)):
        raise ValueError(
            f"`--schedule` comes from the provenance with `--model`: the canaries were inserted {list(record.schedule)} times, got {list(config.schedule)}"
        )
    if config.bos_corpus is not None and config.bos != "auto":
        raise ValueError(f"`--bos-corpus` is read by the check of `--bos auto`; with `--bos {config.bos}` nothing is checked")
    if config.bos_corpus is not None and not Path(config.bos_corpus).is_file():
        raise ValueError(f"`--bos-corpus` must be an existing file, got {config.bos_corpus!r}")


def _corpus_lines(config, record, provenance):
    """A function that reads the lines the model was trained on, the canaries' lines left out, for the BOS check."""

    def read() -> list[str]:
        if config.bos_corpus is not None:
            path, option = Path(config.bos_corpus), "`--bos-corpus`"
        else:
            folder = Path(provenance) if Path(provenance).is_dir() else Path(provenance).parent
            path, option = folder / record.corpus_file, "the corpus beside the provenance"
        try:
            texts = read_corpus_texts(path, text_format=record.text_format, column=record.column)
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise ValueError(
                f"`--bos`: {option} {str(path)!r} cannot be read ({error}) to check whether the model was trained with a BOS token; "
                "pass --bos prepend or --bos none, or --bos-corpus FILE"
            ) from None
        canaries = {entry["text"] for entry in record.provenance.canaries}
        return [text for text in texts if text not in canaries]

    return read


def run_own_model(config, default, model, provenance, say, device=None) -> AuditRun:
    """Measure the canaries of ``provenance`` under the saved Hugging Face model in directory ``model``."""
    started = time.perf_counter()
    if (model is None) != (provenance is None):
        raise ValueError("`--model` and `--provenance` must be given together (or neither, to train privaudit's own model)")
    record = read_provenance(provenance)
    _check_settings(config, default, record)
    say("loading the model", None, None, str(model))
    with quiet_loading():
        loaded = load_model(model, kind="huggingface", device=device, option="--model")
    say("checking the special tokens", None, None, f"--bos {config.bos}")
    scorer = HFCausalLMScorer(loaded.model, loaded.tokenizer, bos=config.bos, bos_lines=_corpus_lines(config, record, provenance), seed=config.seed)
    fmt = record.canary_format
    entries = record.provenance.canaries
    secrets = [tuple(entry["secret"]) for entry in entries]
    references = reference_secrets(fmt, min(config.num_references, fmt.space_size - len(set(secrets))), exclude=secrets, seed=config.seed)
    say("scoring canaries and references", None, None, f"|R| = {fmt.space_size}")
    measured = measure_with(config, scorer, fmt, entries, references, max_exact=MAX_EXACT, say=say)
    settings = {
        "model": str(model),
        "provenance": str(Path(provenance)),
        "template": fmt.template,
        "schedule": list(record.schedule),
        "num_references": config.num_references,
        "max_exact": MAX_EXACT,
        "extract": config.extract,
        "max_extraction_queries": config.max_extraction_queries,
        "seed": config.seed,
        "canary_seed": record.provenance.seed,
        "bos": config.bos,
        "bos_corpus": config.bos_corpus,
        "claimed_epsilon": config.claimed_epsilon,
        "claimed_delta": config.claimed_delta,
    }
    result = OwnModelSecretSharerResult(
        config=settings,
        model_source=loaded.source,
        corpus_sha256=record.corpus_sha256,
        **exposure_fields(measured, fmt, num_references=len(references), num_canaries=len(entries), duplicates=max(entry["repetitions"] for entry in entries)),
        seconds=time.perf_counter() - started,
        conventions=(scorer.special_tokens.convention, scorer.scored_span(fmt)),
    )
    result = exposure_verdict(result, result.epsilon_bound, claimed_epsilon=config.claimed_epsilon, claimed_delta=config.claimed_delta)
    return AuditRun("secret-sharer", config, result, observations=exposure_observations(measured))
