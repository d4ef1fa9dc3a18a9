"""The ``privaudit`` command line (typer). ``python -m privaudit`` is the same.

Bad input never produces a traceback: the command exits with code 2, prints
one line "error: ..." on stderr, and writes nothing to stdout. Output is built
completely before anything is printed, so a failure leaves no partial output.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

import privaudit

from ._core.extras import MissingExtraError, missing_extra_message


def _usage_error_line(error: Exception) -> str | None:
    """The one-line message of a click/typer usage error, or None for other exceptions."""
    # duck-typed: newer typer vendors its own click, older typer uses click itself
    if not (hasattr(error, "format_message") and hasattr(error, "exit_code")):
        return None
    return " ".join(error.format_message().split())


def _missing_extra_line(error: ImportError) -> str | None:
    """"missing optional dependency ..." for an optional library that failed to import; None for anything else (a bug)."""
    if isinstance(error, MissingExtraError):
        return str(error)
    return missing_extra_message(error.name or "")


class _OneLineErrors(TyperGroup):
    """Run the commands so that bad input exits 2 with one "error: ..." line on stderr.

    The same behaviour whether called as the console script, ``python -m privaudit``
    or through ``typer.testing.CliRunner``; with ``standalone_mode=False`` the
    exceptions propagate unchanged.
    """

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except ValueError as error:
            typer.echo(f"error: {' '.join(str(error).split())}", err=True)
            sys.exit(2)
        except ImportError as error:
            line = _missing_extra_line(error)
            if line is None:
                raise
            typer.echo(f"error: {line}", err=True)
            sys.exit(2)
        except typer.Abort:
            typer.echo("error: aborted", err=True)
            sys.exit(1)
        except Exception as error:
            line = _usage_error_line(error)
            if line is None:
                raise
            if type(error).__name__ == "NoArgsIsHelpError":
                if error.format_message().strip():  # empty when rich already printed the help
                    typer.echo(error.format_message(), err=True)
            else:
                typer.echo(f"error: {line}", err=True)
            sys.exit(error.exit_code)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=_OneLineErrors,
    name="privaudit",
    help="Empirical privacy auditing: canary exposure and lower bounds on epsilon. Higher scores mean 'member'.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _version(value: bool) -> None:
    if value:
        typer.echo(privaudit.__version__)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Empirical privacy auditing: canary exposure and lower bounds on epsilon."""


def _render_table(title: str, columns: list[str], rows: list[list[str]]) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console = Console(record=True, width=120, file=io.StringIO())
    console.print(table)
    return console.export_text()


def _format(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_format(item) for item in value) + ")"
    return str(value)


def _emit(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


@app.command()
def exposure(
    canaries: Annotated[Path, typer.Option("--canaries", help="Canary losses (.npy, .csv or one number per line).")],
    references: Annotated[Path, typer.Option("--references", help="Reference losses from the same format, never inserted.")],
    extrapolate: Annotated[bool, typer.Option("--extrapolate", help="Add skew-normal extrapolated exposure.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Rank-based exposure of each canary among reference losses (Secret Sharer §4)."""
    from ._io import read_numbers
    from .stats.exposure import exposure as rank_exposure
    from .stats.exposure import exposure_extrapolated

    canary_losses = read_numbers(canaries, "--canaries")
    reference_losses = read_numbers(references, "--references")
    ranked = rank_exposure(canary_losses, reference_losses)
    fitted = exposure_extrapolated(canary_losses, reference_losses) if extrapolate else None
    if as_json:
        payload = {"exposure": ranked.to_dict()}
        if fitted is not None:
            payload["extrapolated"] = fitted.to_dict()
        _emit(json.dumps(payload, indent=2))
        return
    columns = ["canary", "loss", "rank", "exposure"] + (["extrapolated exposure"] if fitted is not None else [])
    rows = []
    for index, loss in enumerate(canary_losses):
        row = [str(index), _format(float(loss)), str(int(ranked.ranks[index])), _format(float(ranked.exposures[index]))]
        if fitted is not None:
            row.append(_format(float(fitted.exposures[index])))
        rows.append(row)
    title = f"Exposure among {ranked.num_references} references (ties count against the canary)"
    text = _render_table(title, columns, rows)
    if fitted is not None:
        text += f"skew-normal fit: Kolmogorov-Smirnov statistic {fitted.ks_statistic:.4g} (p = {fitted.ks_pvalue:.3g}, optimistic: fitted on the same data)\n"
    _emit(text)


def _parse_threshold(text: str):
    if text in ("split", "bonferroni", "best"):
        return text
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"`--threshold` must be a number or one of 'split', 'bonferroni', 'best', got {text!r}") from None


@app.command()
def bound(
    in_file: Annotated[Path, typer.Option("--in", help="Attack scores with the target present (higher = member).")],
    out_file: Annotated[Path, typer.Option("--out", help="Attack scores with the target absent.")],
    delta: Annotated[float, typer.Option("--delta", help="The delta at which epsilon is reported, in (0, 1).")],
    method: Annotated[str, typer.Option("--method", help="gdp, eps-delta, pure, or pld (subsampled Gaussian, see --sampling-prob/--steps).")] = "gdp",
    interval: Annotated[str, typer.Option("--interval", help="clopper-pearson, jeffreys, bayes or katz-log (pure only).")] = "clopper-pearson",
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence (or credibility) in (0, 1).")] = 0.95,
    threshold: Annotated[str, typer.Option("--threshold", help="A number fixed in advance, or split, bonferroni, best.")] = "split",
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the held-out split.")] = None,
    sampling_prob: Annotated[float, typer.Option("--sampling-prob", help="With --method pld: Poisson sampling rate in (0, 1].")] = 1.0,
    steps: Annotated[int, typer.Option("--steps", help="With --method pld: number of composed steps.")] = 1,
    as_json: JsonOption = False,
) -> None:
    """Lower-bound epsilon from membership-inference scores (Tight Auditing §4)."""
    from ._io import read_numbers
    from .stats.bounds import epsilon_lower_bound
    from .stats.pld import SubsampledGaussian

    in_scores = read_numbers(in_file, "--in")
    out_scores = read_numbers(out_file, "--out")
    family = SubsampledGaussian(sampling_prob=sampling_prob, num_steps=steps) if method == "pld" else method
    result = epsilon_lower_bound(
        in_scores,
        out_scores,
        delta=delta,
        method=family,
        interval=interval,
        confidence=confidence,
        threshold=_parse_threshold(threshold),
        seed=seed,
    )
    data = result.to_dict()
    if as_json:
        text = json.dumps(data, indent=2)
    else:
        rows = [[key, _format(value)] for key, value in data.items() if key not in ("versions", "result_type")]
        text = _render_table("Epsilon lower bound", ["quantity", "value"], rows)
    if not result.valid:
        typer.echo("warning: the threshold was chosen on the same data it bounds; the bound is optimistic (valid = False)", err=True)
    _emit(text)


@contextlib.contextmanager
def _progress_bars():
    """Transient rich progress bars on stderr; yields ``report(stage, completed, total, detail)``."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[detail]}"), TimeElapsedColumn())
    console = Console(stderr=True)
    # off when stderr is not a terminal: a finished bar would leave a blank line before an "error: ..." line
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bars:
        tasks: dict = {}

        def report(stage, completed=None, total=None, detail=""):
            if stage not in tasks:
                tasks[stage] = bars.add_task(stage, total=total, detail=detail)
            bars.update(tasks[stage], completed=completed or 0, total=total, detail=detail)

        yield report


audit_app = typer.Typer(help="Run an audit end to end and write results.json and plots.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")

HistoryOption = Annotated[Optional[Path], typer.Option("--history", help="SQLite results store to append to (default: $PRIVAUDIT_HISTORY, else ~/.privaudit/history.sqlite).")]
NoHistoryOption = Annotated[bool, typer.Option("--no-history", help="Do not append this audit to the results store.")]
ModelIdOption = Annotated[Optional[str], typer.Option("--model-id", help="Name of the audited model in the history (default: dataset/architecture).")]
ReleaseOption = Annotated[Optional[str], typer.Option("--release", help="Release label stored with the audit in the history, e.g. v1.2.")]


def _history_recorder(history: Optional[Path], no_history: bool, model_id: Optional[str], release: Optional[str]):
    """Open the results store before the audit runs (a bad path fails first); return ``record(results_dict)``."""
    from .history import HistoryStore, default_model_id, history_path

    path = history_path(history, enabled=not no_history)
    store = None if path is None else HistoryStore(path)

    def record(data: dict, audit: Optional[str] = None) -> None:
        if store is None:
            return
        if audit is not None and "schema_version" not in data:  # a writer that does not stamp its results yet
            from .schemas import stamp_results

            data = stamp_results(data, audit=audit)
        store.append(data, model_id=model_id or default_model_id(data), release=release)

    return record


@app.command()
def extract(
    run: Annotated[Path, typer.Option("--run", help="Output directory of `privaudit audit secret-sharer`.")],
    output: Annotated[Optional[Path], typer.Option("--output", help="Directory for results.json and queries.png (default: RUN/extraction).")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Nodes expanded per model call.")] = 256,
    max_queries: Annotated[int, typer.Option("--max-queries", help="Stop the search after this many model queries.")] = 1_000_000,
    as_json: JsonOption = False,
) -> None:
    """Shortest-path extraction of the most likely completion of an audited run's format (Secret Sharer §8)."""
    from .audits.extract import extract_from_run

    result = extract_from_run(run, output_dir=output, batch_size=batch_size, max_queries=max_queries)
    if as_json:
        _emit(json.dumps(result, indent=2))
        return
    _emit(_render_table(f"Extraction from {run}", ["quantity", "value"], [[key, _format(value)] for key, value in result.items()]))


from . import cli_audits as _cli_audits  # noqa: E402,F401  (registers the audit commands)
from . import cli_runs as _cli_runs  # noqa: E402,F401  (registers demo, history, report, audit blackbox)




def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``privaudit`` console script; exits with the command's status."""
    app(args=argv, prog_name="privaudit")
