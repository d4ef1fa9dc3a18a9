"""The figure of an extraction run: model queries of shortest-path search against brute force."""

from __future__ import annotations

from .plotting import new_figure, save_figure

__all__ = ["figures", "plot_queries"]


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
