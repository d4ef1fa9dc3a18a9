"""What the commands share: common options, tables, output, progress bars and the history recorder."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from .._core.messages import printable

__all__ = [
    "HistoryOption",
    "JsonOption",
    "ModelIdOption",
    "NoHistoryOption",
    "ReleaseOption",
    "emit",
    "format_value",
    "history_recorder",
    "progress_bars",
    "render_table",
]

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose",
        help="Also print the warnings that libraries raised during the audit (always recorded in results.json and the report), and on an error the traceback behind its one line.",
    ),
]


HistoryOption = Annotated[
    Optional[Path], typer.Option("--history", help="SQLite results store to append to (default: $PRIVAUDIT_HISTORY, else ~/.privaudit/history.sqlite).")
]
NoHistoryOption = Annotated[bool, typer.Option("--no-history", help="Do not append this audit to the results store.")]
ModelIdOption = Annotated[
    Optional[str],
    typer.Option(
        "--model-id",
        help="Lineage of the audited model in the history, whose releases `privaudit history` compares (default: derived from the data's schema"
        " (column names, label column; or the embedded dataset) and the embedded architecture, never the training function or file contents;"
        " another dataset or architecture starts a new lineage).",
    ),
]
ReleaseOption = Annotated[Optional[str], typer.Option("--release", help="Release label stored with the audit in the history, e.g. v1.2.")]


def render_table(title: str, columns: list[str], rows: list[list[str]]) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from .._core.messages import printable

    # cells hold user text (labels, canaries, file names): never markup, never control characters
    table = Table(title=escape(printable(title)))
    for column in columns:
        table.add_column(escape(printable(column)))
    for row in rows:
        table.add_row(*(escape(printable(cell)) for cell in row))
    # wide enough that no cell wraps: a wrapped label or number is hard to read and to grep
    natural = sum(max([len(str(column))] + [len(printable(row[i])) for row in rows]) + 3 for i, column in enumerate(columns)) + 1
    console = Console(record=True, width=max(120, natural), file=io.StringIO())
    console.print(table)
    return console.export_text()


def format_value(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(format_value(item) for item in value) + ")"
    return str(value)


def emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


#: seconds a stage runs before a log (stderr not a terminal) gets its "stage: ... started" line; quick stages, refusals included, print nothing
LONG_STAGE_S = 5.0
#: the environment variable that sets those seconds instead (a CI log that wants no stage lines sets a large value)
STAGE_DELAY_ENV = "PRIVAUDIT_STAGE_LINES_AFTER_S"


def stage_delay() -> float:
    """:data:`LONG_STAGE_S`, or the seconds in ``PRIVAUDIT_STAGE_LINES_AFTER_S`` when it holds a number >= 0.

    >>> stage_delay() >= 0
    True
    """
    text = os.environ.get(STAGE_DELAY_ENV)
    try:
        value = float(text) if text is not None else LONG_STAGE_S
    except ValueError:
        return LONG_STAGE_S  # a malformed setting is no reason to refuse an audit: the default applies
    return value if value >= 0 else LONG_STAGE_S


class StageLines:
    """Plain lines for logs instead of bars: a stage still running after :data:`LONG_STAGE_S` prints when it started, and later its elapsed time.

    A refusal comes within seconds, before any stage line, so its ``error:``
    line stays the only line on stderr.
    """

    def __init__(self, write, delay: float) -> None:
        self.write, self.delay = write, delay
        self.stage: str | None = None
        self.started = 0.0
        self.announced = False
        self.timer: threading.Timer | None = None
        self.lock = threading.Lock()

    def _announce(self, stage: str) -> None:
        with self.lock:
            if self.stage == stage and not self.announced:
                self.announced = True
                self.write(f"stage: {printable(stage)}: started {self.delay:.0f} s ago")

    def close(self, finished: bool = True) -> None:
        """End the current stage: its "done in" line when it was announced (and finished)."""
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
            if self.stage is not None and self.announced and finished:
                self.write(f"stage: {printable(self.stage)}: done in {time.monotonic() - self.started:.1f} s")
            self.stage, self.announced, self.timer = None, False, None

    def __call__(self, stage: str) -> None:
        if stage == self.stage:
            return
        self.close()
        with self.lock:
            self.stage, self.started = stage, time.monotonic()
            self.timer = threading.Timer(self.delay, self._announce, args=(stage,))
            self.timer.daemon = True
            self.timer.start()


@contextlib.contextmanager
def progress_bars():
    """Transient rich progress bars on stderr when it is a terminal, plain stage lines when it is not; yields ``report(stage, completed, total, detail)``."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[detail]}"), TimeElapsedColumn())
    console = Console(stderr=True)
    # off when stderr is not a terminal: a finished bar would leave a blank line before an "error: ..." line
    lines = None if console.is_terminal else StageLines(lambda text: typer.echo(text, err=True), stage_delay())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bars:
        tasks: dict = {}

        def report(stage, completed=None, total=None, detail=""):
            if lines is not None:
                lines(stage)
            if stage not in tasks:
                tasks[stage] = bars.add_task(stage, total=total, detail=detail)
            bars.update(tasks[stage], completed=completed or 0, total=total, detail=detail)

        try:
            yield report
        except BaseException:
            if lines is not None:
                lines.close(finished=False)
            raise
        if lines is not None:
            lines.close()


def history_recorder(history: Optional[Path], no_history: bool, model_id: Optional[str], release: Optional[str], output: Optional[Path] = None):
    """Open the results store before the audit runs (a bad path fails first); return ``record(results_dict)``.

    A store at or inside ``output`` is refused before anything is created:
    the command writes its files there (results.json, report.html).
    """
    from .._core.files import check_output_apart
    from ..history import HistoryLockedError, HistoryStore, check_label, default_model_id, history_path

    check_label(model_id, "--model-id")
    check_label(release, "--release")
    path = history_path(history, enabled=not no_history)
    if path is not None and output is not None:
        check_output_apart(path, [("--output", output)], name="--history")
    store = None if path is None else HistoryStore(path)

    def record(data: dict) -> None:
        if store is None:
            return
        try:
            store.append(data, model_id=model_id or default_model_id(data), release=release)
        except HistoryLockedError as error:  # the audit finished and its results.json is written: warn, do not fail
            typer.echo(f"warning: {' '.join(str(error).split())}", err=True)
            return
        # a side effect the user should see: where the audit went, and how not to
        typer.echo(f"history: appended to {printable(path)} (--no-history to skip)", err=True)

    return record


def report_captured(captured, *, verbose: bool) -> None:
    """Print what libraries warned about during an audit: privaudit's notes always, the libraries' own words only with ``verbose``."""
    for note in dict.fromkeys(item.note for item in captured if item.note):  # each note once, however many audits raised it
        typer.echo(f"note: {note}", err=True)
    for item in captured:
        if verbose:
            times = f" ({item.count}x)" if item.count > 1 else ""
            typer.echo(f"captured {item.category} from {item.source}{times}: {item.message}", err=True)
