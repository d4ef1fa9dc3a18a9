"""Extraction from a finished Secret Sharer run: load its model and format, search, write extraction.json."""

from __future__ import annotations

import json
import time
from pathlib import Path

__all__ = ["extract_from_run"]


def extract_from_run(run_dir, *, output_dir=None, batch_size: int = 256, max_queries: int = 1_000_000) -> dict:
    """Run shortest-path search on the run's model, compare with its canaries, write results.json and a plot.

    ``output_dir`` defaults to ``<run_dir>/extraction``.
    """
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
    try:
        provenance = Provenance.from_json((run / "provenance.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"`--run`: {str(run / 'provenance.json')!r} is not a provenance file written by privaudit: {error}") from None
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
    output = Path(output_dir) if output_dir is not None else run / "extraction"
    from .._core.files import staged_output

    with staged_output(output) as scratch:  # all files appear together, or none
        (scratch / "results.json").write_text(json.dumps(result, indent=2))
        _plot_queries(result, scratch / "queries.png")
    return result


def _plot_queries(result: dict, path) -> None:
    """Model queries of shortest-path search against brute force (|R|), on a log scale."""
    from ..report.plotting import new_figure, save_figure

    figure, axis = new_figure(figsize=(5, 3.5))
    axis.bar(["shortest path", "brute force"], [result["queries"], result["space_size"]], color=["tab:blue", "tab:grey"])
    axis.set_yscale("log")
    axis.set_ylabel("model queries")
    axis.set_title(f"extracted: {result['extracted_text']!r}" + (" (inserted canary)" if result["is_inserted_canary"] else ""))
    save_figure(figure, path)
