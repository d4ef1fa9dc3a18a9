"""Commands around the audits: ``demo``, ``report``, ``history`` and ``extract``.

Every input is checked before any output is created, so bad input exits 2
with one "error: ..." line and leaves nothing behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from .._core.files import check_output_apart, check_output_dir, check_output_file
from .._core.messages import printable
from .app import CommandInterrupted, app
from .options import (
    HistoryOption,
    JsonOption,
    NoHistoryOption,
    VerboseOption,
    emit,
    format_value,
    history_recorder,
    progress_bars,
    render_table,
    report_captured,
)


@app.command()
def demo(
    output: Annotated[Path, typer.Option("--output", help="Directory for report.html, results.json and one folder per audit.")] = Path("privaudit-demo"),
    seed: Annotated[int, typer.Option("--seed", help="Root seed; every audit gets its own child seed.")] = 0,
    quick: Annotated[bool, typer.Option("--quick", help="Only the statistical core on generated numbers (seconds, no training, no files).")] = False,
    history: HistoryOption = None,
    no_history: NoHistoryOption = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Run the audits on the embedded defaults and write report.html and results.json (--quick: the statistical core only)."""
    from .._core.seeding import check_seed

    seed = check_seed(seed, "--seed")
    if quick:
        from ..demo_quick import run_quick_demo

        report = run_quick_demo(seed=seed)
        if as_json:
            emit(json.dumps(report.to_dict(), indent=2))
            return
        rows = [list(row) for row in report.rows()]
        emit(render_table(f"privaudit demo (seed {seed}, delta = 1e-5)", ["section", "quantity", "value"], rows))
        return
    from ..demo_full import run_full_demo

    check_output_dir(output)
    record = history_recorder(history, no_history, None, None, output)
    try:
        with progress_bars() as report:
            outcome = run_full_demo(output, seed=seed, progress=report)
    except KeyboardInterrupt:  # the demo writes through a staging folder, removed on the way out: nothing is kept
        raise CommandInterrupted(f"the demo stopped and wrote nothing to {printable(str(output))}; run it again to start over") from None
    for data in outcome.results:
        record(data)
    from ..report.provenance import warnings_in

    report_captured([item for data in outcome.results for item in warnings_in(data)], verbose=verbose)
    if as_json:
        emit(json.dumps(outcome.summary, indent=2))
        return
    rows = [
        [s.title, s.label, "not computed" if s.value is None else format_value(float(s.value)), s.kind + ("" if s.valid else ", optimistic")]
        for s in outcome.sections
    ]
    text = render_table(f"privaudit demo: {outcome.seconds:.0f} s, seed {seed}", ["audit", "headline", "value", "kind"], rows)
    emit(text + f"report: {outcome.report_path}\n")


def _run_entries(run: Path, *, files_only: bool) -> list[Path]:
    """What a run directory holds at its top (its files only, or every entry), results.json always: what an output must not replace."""
    entries = [run / "results.json"]
    if run.is_dir():
        # a symlink is not the run's own file (the report never reads through one)
        entries += [entry for entry in sorted(run.iterdir()) if not entry.is_symlink() and (entry.is_file() or not files_only)]
    return entries


@app.command()
def report(
    runs: Annotated[list[Path], typer.Argument(help="Output directories of audits (each with results.json and its plots).")],
    output: Annotated[Path, typer.Option("--output", help="The HTML file to write.")] = Path("report.html"),
    title: Annotated[str, typer.Option("--title", help="Title of the page.")] = "privaudit report",
) -> None:
    """Build one self-contained report.html from audit output directories."""
    from ..report.html import linked_figures, write_report
    from ..report.sections import load_results, section_for

    check_output_file(output)
    check_output_apart(
        output, [(f"RUN's {entry.name}", entry) for run in runs for entry in _run_entries(run, files_only=False)]
    )  # a report never replaces a run's file
    sections = [section_for(load_results(run), run) for run in runs]
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_name(f".{output.name}.tmp")
    write_report(sections, temporary, title=title)
    os.replace(temporary, output)
    notes = [f"note: {figure} was not embedded: it is a symlink or a hard link, not the run's own file\n" for run in runs for figure in linked_figures(run)]
    emit("".join(notes) + f"report: {output}")


@app.command("history")
def history_command(
    model_id: Annotated[Optional[str], typer.Option("--model-id", help="Only this lineage (default: every lineage in the store).")] = None,
    audit: Annotated[Optional[str], typer.Option("--audit", help="Only this audit family, e.g. dpsgd.")] = None,
    tolerance: Annotated[
        float, typer.Option("--tolerance", help="Flag a rise of the headline (ε bound, exposure) larger than this between consecutive audits.")
    ] = 0.1,
    history: HistoryOption = None,
    fail_on_regression: Annotated[bool, typer.Option("--fail-on-regression", help="Exit with code 1 when a regression is flagged (for CI).")] = False,
    across_data: Annotated[
        bool,
        typer.Option(
            "--across-data",
            help="Compare consecutive releases of one --model-id even where the data's schema or the architecture changed (a new lineage by default).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Compare the releases of each model lineage: the headline number's change between consecutive audits, regressions flagged.

    A lineage is a --model-id (by default derived from the data's schema and
    the task) with the schema of its data; releases are compared on the
    number of each headline (an ε bound, a TPR), not on its label's text.
    """
    from .._core.validation import check_positive
    from ..history import HistoryStore, compare, history_path, new_lineages

    tolerance = check_positive(tolerance, "--tolerance", allow_zero=True)
    path = history_path(history)
    if path is None:
        raise ValueError("`--history` is off (PRIVAUDIT_HISTORY=off); give a store with --history PATH")
    if path.is_dir():
        raise ValueError(f"`--history` must be a file path, got the directory {str(path)!r}")
    if not path.is_file():
        raise ValueError(f"`--history`: no results store at {str(path)!r}; run an audit first")
    records = HistoryStore(path).records(model_id=model_id, audit=audit)
    changes = {change.after.id: change for change in compare(records, tolerance=tolerance, across_data=across_data)}
    starts = new_lineages(records, across_data=across_data)
    regressions = [change for change in changes.values() if change.regression]
    if as_json:
        rows = [
            {
                "id": r.id,
                "model_id": r.model_id,
                "lineage": r.lineage,
                "identity": r.identity,
                "new_lineage": r.id in starts,
                "audit": r.audit,
                "release": r.release,
                "created_at": r.created_at,
                "label": r.label,
                "value": r.value,
                "kind": r.kind,
                "confidence": r.confidence,
                "valid": r.valid,
                "change": changes[r.id].change if r.id in changes else None,
                "regression": changes[r.id].regression if r.id in changes else False,
            }
            for r in records
        ]
        emit(json.dumps({"store": str(path), "tolerance": tolerance, "across_data": across_data, "audits": rows}, indent=2))
    else:
        table: list[list[str]] = []
        for r in records:
            change = changes.get(r.id)
            delta = "" if change is None or change.change is None else f"{change.change:+.4g}"
            flag = "REGRESSION" if change is not None and change.regression else ("new lineage (data or architecture changed)" if r.id in starts else "")
            value = "—" if r.value is None else format_value(r.value)
            table.append([str(r.id), r.created_at, r.model_id, r.release or "", r.audit, r.label, f"{value} ({r.kind})", delta, flag])
        columns = ["id", "time", "model", "release", "audit", "headline", "value", "change", "flag"]
        text = render_table(f"Audit history in {path} (tolerance {tolerance:g})", columns, table)
        emit(text + (f"{len(regressions)} regression(s) flagged\n" if regressions else "no regressions\n"))
    if fail_on_regression and regressions:
        raise typer.Exit(1)


@app.command()
def extract(
    run: Annotated[Path, typer.Option("--run", help="Output directory of `privaudit audit secret-sharer`.")],
    output: Annotated[
        Optional[Path], typer.Option("--output", help="Directory for results.json, report.html and queries.png (default: RUN/extraction).")
    ] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Nodes expanded per model call.")] = 256,
    max_queries: Annotated[int, typer.Option("--max-queries", help="Stop the search after this many model queries.")] = 1_000_000,
    as_json: JsonOption = False,
) -> None:
    """Shortest-path extraction of the most likely completion of an audited run's format (Secret Sharer §8)."""
    from ..audits.secret_sharer.extract import extract_from_run
    from ..report.runs import write_run

    target = check_output_dir(output if output is not None else run / "extraction")
    check_output_apart(target, [("--run", entry) for entry in _run_entries(run, files_only=True)])
    extraction = extract_from_run(run, batch_size=batch_size, max_queries=max_queries)
    data = write_run(target, extraction, report=True, title="privaudit extract")
    if as_json:
        emit(json.dumps(data, indent=2))
        return
    fields = ("extracted_text", "is_inserted_canary", "repetitions", "log_perplexity_bits", "queries", "calls", "nodes_expanded", "space_size", "seconds")
    emit(render_table(f"Extraction from {run}", ["quantity", "value"], [[key, format_value(getattr(extraction.result, key))] for key in fields]))
