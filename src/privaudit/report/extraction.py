"""The figure of an extraction run: model queries of shortest-path search against brute force.

:func:`section` builds the family's report section from its ``results.json``.
"""

from __future__ import annotations

from pathlib import Path

from .html import ReportSection, plots_in
from .plotting import new_figure, save_figure
from .provenance import provenance
from .sections import generic_section, headline_fields, typed_result

__all__ = ["figures", "plot_queries", "section"]


def plot_queries(result, path):
    """Model queries of shortest-path search against brute force (|R|), on a log scale."""
    figure, axis = new_figure(figsize=(5, 3.5))
    axis.bar(["shortest path", "brute force"], [result.queries, result.space_size], color=["tab:blue", "tab:grey"])
    axis.set_yscale("log")
    axis.set_ylabel("model queries")
    axis.set_title(f"extracted: {result.extracted_text!r}" + (" (inserted canary)" if result.is_inserted_canary else ""))
    return save_figure(figure, path)


def figures(run) -> dict:
    return {"queries.png": lambda path: plot_queries(run.result, path)}


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of this family; ``directory`` holds its figures (see :mod:`privaudit.report.sections`)."""
    from ..audits.secret_sharer.extract import ExtractionResult

    result = typed_result(ExtractionResult, data)
    if result is None:
        return generic_section(data, directory)
    headline = result.headline()
    return ReportSection(
        title="Secret Sharer: extraction by shortest-path search",
        audit="extraction",
        **headline_fields(headline),
        meaning=(
            "The model was searched for its most likely completion of the canary format, expanding the candidate tree "
            "cheapest first; the number of model queries it took is compared with brute force over the whole space."
        ),
        not_meaning="Failing to extract within the budget does not show that the canaries are safe: a larger budget or a better search may succeed.",
        threat_model=result.threat_model,
        flag=f"Extracted an inserted canary: {result.extracted_text!r} (inserted {result.repetitions}×)." if result.is_inserted_canary else None,
        details=(
            ("extracted text", result.extracted_text),
            ("an inserted canary", "yes" if result.is_inserted_canary else "no"),
            ("log-perplexity (bits)", result.log_perplexity_bits),
            ("model queries / candidate space", f"{result.queries} / {result.space_size}"),
        ),
        plots=plots_in(directory, {"queries.png": "Model queries of shortest-path search against brute force"}),
        **provenance(data),
    )
