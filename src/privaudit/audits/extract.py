"""Extraction from a finished Secret Sharer run: load its model and format, search, write extraction.json."""

from __future__ import annotations

import json
import time
from pathlib import Path

__all__ = ["extract_from_run"]


def extract_from_run(run_dir, *, batch_size: int = 256, max_queries: int = 1_000_000) -> dict:
    """Run shortest-path search on the run's model and compare the result with its canaries."""
    import torch

    from ..canaries import CanaryFormat, Provenance
    from ..extraction import shortest_path_search
    from ..models.char_lstm import CharVocabulary, build_char_lstm
    from ..models.lm_scoring import CharLSTMScorer

    run = Path(run_dir)
    for name in ("model.pt", "provenance.json"):
        if not (run / name).is_file():
            raise ValueError(f"`--run`: {str(run)!r} has no {name}; run `privaudit audit secret-sharer` first")
    if batch_size < 1 or max_queries < 1:
        raise ValueError("`--batch-size` and `--max-queries` must be >= 1")
    provenance = Provenance.from_json((run / "provenance.json").read_text())
    saved = torch.load(run / "model.pt", weights_only=True)
    model = build_char_lstm(CharVocabulary().size, hidden=saved["hidden"])
    model.load_state_dict(saved["state_dict"])
    fmt = CanaryFormat(provenance.template)
    scorer = CharLSTMScorer(model)
    started = time.perf_counter()
    found = shortest_path_search(scorer.extraction_scorer(fmt), [len(s) for s in fmt.slots], batch_size=batch_size, max_queries=max_queries)
    text = fmt.fill(found.secret)
    inserted = {record["text"]: record["repetitions"] for record in provenance.canaries}
    result = {
        "extracted_text": text,
        "is_inserted_canary": text in inserted,
        "repetitions": inserted.get(text, 0),
        "log_perplexity_bits": found.log_perplexity,
        "queries": found.queries,
        "calls": found.calls,
        "nodes_expanded": found.nodes_expanded,
        "space_size": fmt.space_size,
        "seconds": time.perf_counter() - started,
    }
    (run / "extraction.json").write_text(json.dumps(result, indent=2))
    return result
