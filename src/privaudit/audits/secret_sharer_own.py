"""Phase two of the Secret Sharer on the user's own Hugging Face model: ``audit secret-sharer --model DIR --provenance FILE``.

Nothing is trained: the canaries were inserted by ``privaudit canaries
insert`` (:func:`privaudit.canaries.corpus.insert_into_corpus`), the user
trained on that corpus, and this run measures the canaries under the saved
model (:func:`privaudit.integrations.transformers.measure_canaries_with_scores`):
exposure exact over R (when |R| is at most ``max_exact``), among sampled
references and extrapolated, the ε lower bound the exposures imply, the
random-guessing baselines, and optionally shortest-path extraction.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path

import numpy as np

from .base import AuditResult, AuditRun, Headline

__all__ = ["MAX_EXACT", "OwnModelSecretSharerResult", "run_own_model"]

MAX_EXACT = 100_000  # score all of R for exact exposure up to this many candidates


@dataclasses.dataclass(frozen=True)
class OwnModelSecretSharerResult(AuditResult):
    """Exposure of the canaries inserted into the user's corpus, under the user's model; the ε bound; extraction.

    ``config`` records the model, the provenance file, the canaries' format
    and schedule (from the provenance) and the measurement settings.
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
        exact = [float(canary["exposure_exact"]) for canary in self.canaries if canary["exposure_exact"] is not None]
        column, values = ("exact", exact) if exact else ("sampled", [float(canary["exposure_sampled"]) for canary in self.canaries])
        largest = max(values)
        flag = bool(exact) and largest > self.baselines["exact_upper_95_all_canaries"]
        return Headline(value=largest, label=f"largest canary exposure ({column}, bits)", kind="statistic", confidence=None, valid=True, flag=flag)


@contextlib.contextmanager
def _quiet_transformers():
    """transformers' own progress bars off while loading: stderr keeps privaudit's progress and its one error line."""
    from transformers.utils import logging

    enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            logging.enable_progress_bar()


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


def run_own_model(config, default, model, provenance, say, device=None) -> AuditRun:
    """Measure the canaries of ``provenance`` under the saved Hugging Face model in directory ``model``."""
    from ..canaries.corpus import read_provenance
    from ..integrations.transformers import measure_canaries_with_scores
    from ..models.loading import load_model
    from ..stats.exposure import random_guessing_exposure
    from .secret_sharer import _guessing_upper

    started = time.perf_counter()
    if (model is None) != (provenance is None):
        raise ValueError("`--model` and `--provenance` must be given together (or neither, to train privaudit's own model)")
    record = read_provenance(provenance)
    _check_settings(config, default, record)
    say("loading the model", None, None, str(model))
    with _quiet_transformers():
        loaded = load_model(model, kind="huggingface", device=device)
    say("scoring canaries and references", None, None, f"|R| = {record.canary_format.space_size}")
    measured, canary_bits, reference_bits, fit = measure_canaries_with_scores(
        loaded,
        record,
        num_references=config.num_references,
        max_exact=MAX_EXACT,
        extract=config.extract,
        max_extraction_queries=config.max_extraction_queries,
        seed=config.seed,
    )
    fmt = record.canary_format
    baseline = random_guessing_exposure(measured.num_references)
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
    }
    result = OwnModelSecretSharerResult(
        config=settings,
        model_source=measured.model_source,
        corpus_sha256=measured.corpus_sha256,
        canaries=measured.canaries,
        space_size=fmt.space_size,
        num_references=measured.num_references,
        baselines={
            "mean": baseline.mean,
            "median": baseline.median,
            "quantile_75": baseline.quantile_75,
            "max_exposure": float(np.log2(fmt.space_size)),
            "exact_upper_95_all_canaries": _guessing_upper(fmt.space_size, len(measured.canaries), 0.05),
        },
        epsilon_bound=measured.epsilon_bound,
        extraction=measured.extraction,
        skewnorm_fit=measured.skewnorm_fit,
        seconds=time.perf_counter() - started,
    )
    from .secret_sharer import skewnorm_density

    observations = {
        "reference_bits": reference_bits,
        "canary_bits": canary_bits,
        "skewnorm_fit": fit,
        "skewnorm_density": skewnorm_density(reference_bits, canary_bits, fit),
    }
    return AuditRun("secret-sharer", config, result, observations=observations)
