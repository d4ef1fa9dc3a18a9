"""Extraction from a finished Secret Sharer run: load its model and format, search, compare with the canaries."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from ...canaries import CanaryFormat, Provenance
from ...extraction import shortest_path_search
from ...models.char_lstm import CharVocabulary, build_char_lstm
from ...models.device import require_torch
from ...models.lm_scoring import CharLSTMScorer
from ..base import AuditResult, AuditRun, Headline

__all__ = ["ExtractionResult", "extract_from_run"]


@dataclasses.dataclass(frozen=True)
class ExtractionResult(AuditResult):
    """The most likely completion of the run's format found by shortest-path search (Secret Sharer §8)."""

    run: str
    extracted_text: str
    is_inserted_canary: bool
    repetitions: int
    log_perplexity_bits: float
    queries: int
    calls: int
    nodes_expanded: int
    space_size: int
    seconds: float
    threat_model: str = "black-box: the model's likelihood of candidate completions, queried adaptively"

    def headline(self) -> Headline:
        return Headline(
            value=float(self.queries),
            label="model queries to extract the most likely completion" + (" (an inserted canary)" if self.is_inserted_canary else ""),
            kind="statistic",
            confidence=None,
            valid=True,
            flag=self.is_inserted_canary,
        )


def extract_from_run(run_dir, *, batch_size: int = 256, max_queries: int = 1_000_000) -> AuditRun:
    """Run shortest-path search on the run's model and compare its result with the run's canaries (writes nothing)."""
    run = Path(run_dir)
    for name in ("model.pt", "provenance.json"):
        if not (run / name).is_file():
            raise ValueError(f"`--run`: {str(run)!r} has no {name}; run `privaudit audit secret-sharer` first")
    if batch_size < 1 or max_queries < 1:
        raise ValueError("`--batch-size` and `--max-queries` must be >= 1")
    try:
        provenance = Provenance.from_json((run / "provenance.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"`--run`: {str(run / 'provenance.json')!r} is not a provenance file written by privaudit: {error}") from None

    torch = require_torch()  # after the cheap checks: bad input is named even without the extra
    try:
        saved = torch.load(run / "model.pt", weights_only=True)  # weights only: a model file cannot run code
        model = build_char_lstm(CharVocabulary().size, hidden=saved["hidden"])
        model.load_state_dict(saved["state_dict"])
    except Exception as error:  # torch raises many types for a corrupt or foreign file
        raise ValueError(f"`--run`: {str(run / 'model.pt')!r} is not a model saved by privaudit: {type(error).__name__}") from None
    fmt = CanaryFormat(provenance.template)
    scorer = CharLSTMScorer(model)
    started = time.perf_counter()
    found = shortest_path_search(scorer.extraction_scorer(fmt), [len(s) for s in fmt.slots], batch_size=batch_size, max_queries=max_queries)
    text = fmt.fill(found.secret)
    inserted = {record["text"]: record["repetitions"] for record in provenance.canaries}
    result = ExtractionResult(
        run=str(run),
        extracted_text=text,
        is_inserted_canary=text in inserted,
        repetitions=inserted.get(text, 0),
        log_perplexity_bits=found.log_perplexity,
        queries=found.queries,
        calls=found.calls,
        nodes_expanded=found.nodes_expanded,
        space_size=fmt.space_size,
        seconds=time.perf_counter() - started,
    )
    return AuditRun("extraction", {"run": str(run), "batch_size": batch_size, "max_queries": max_queries}, result)
