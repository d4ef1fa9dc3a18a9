"""Commands around the audits: ``demo``, ``audit blackbox``, ``report`` and ``history``.

Registered on :data:`privaudit.cli.app` when :mod:`privaudit.cli` is
imported. Every input is checked before any output directory is created, so
bad input exits 2 with one "error: ..." line and leaves nothing behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from ._core.files import write_json_atomic
from .cli import (
    HistoryOption,
    JsonOption,
    ModelIdOption,
    NoHistoryOption,
    ReleaseOption,
    _emit,
    _format,
    _history_recorder,
    _progress_bars,
    _render_table,
    app,
    audit_app,
)


def _check_output_dir(output: Path, name: str = "--output") -> Path:
    if output.exists() and not output.is_dir():
        raise ValueError(f"`{name}` must be a directory, got the file {str(output)!r}")
    return output


@app.command()
def demo(
    output: Annotated[Path, typer.Option("--output", help="Directory for report.html, results.json and one folder per audit.")] = Path("privaudit-demo"),
    seed: Annotated[int, typer.Option("--seed", help="Root seed; every audit gets its own child seed.")] = 0,
    quick: Annotated[bool, typer.Option("--quick", help="Only the statistical core on generated numbers (seconds, no training, no files).")] = False,
    history: HistoryOption = None,
    no_history: NoHistoryOption = False,
    as_json: JsonOption = False,
) -> None:
    """Run the audits on the embedded defaults and write report.html and results.json (--quick: the statistical core only)."""
    if quick:
        from .demo import run_demo

        report = run_demo(seed=seed)
        if as_json:
            _emit(json.dumps(report.to_dict(), indent=2))
            return
        rows = [list(row) for row in report.rows()]
        _emit(_render_table(f"privaudit demo (seed {seed}, delta = 1e-5)", ["section", "quantity", "value"], rows))
        return
    from .demo_full import run_full_demo

    _check_output_dir(output)
    record = _history_recorder(history, no_history, None, None)
    with _progress_bars() as report:
        outcome = run_full_demo(output, seed=seed, progress=report)
    for data in outcome.results:
        record(data)
    if as_json:
        _emit(json.dumps(outcome.summary, indent=2))
        return
    rows = [[s.title, s.label, "not computed" if s.value is None else _format(float(s.value)), s.kind + ("" if s.valid else ", optimistic")] for s in outcome.sections]
    text = _render_table(f"privaudit demo: {outcome.seconds:.0f} s, seed {seed}", ["audit", "headline", "value", "kind"], rows)
    _emit(text + f"report: {outcome.report_path}\n")


@audit_app.command("blackbox")
def audit_blackbox(
    config: Annotated[Path, typer.Option("--config", help="JSON file with BlackBoxConfig fields (dataset, noise_multiplier, num_models_per_side, ...).")],
    output: Annotated[Path, typer.Option("--output", help="Directory: runs/ holds one JSON file per trained model (resumed on rerun), then results.json.")],
    backend: Annotated[str, typer.Option("--backend", help="local (process pool) or ray.")] = "local",
    address: Annotated[Optional[str], typer.Option("--address", help="Ray cluster address, e.g. auto or ray://host:10001 (with --backend ray).")] = None,
    workers: Annotated[Optional[int], typer.Option("--workers", help="Worker processes (local) or CPUs of a new local Ray instance; default: all cores.")] = None,
    history: HistoryOption = None,
    no_history: NoHistoryOption = False,
    model_id: ModelIdOption = None,
    release: ReleaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """Black-box DP-SGD audit (Tight Auditing Algorithm 1): train many models with and without a canary, resumably."""
    from ._config import load_config
    from .audits.blackbox import BlackBoxConfig, run_blackbox_audit
    from .runner import BACKENDS
    from .schemas import stamp_results
    from ._core.validation import check_choice, check_count

    settings = load_config(BlackBoxConfig, config)
    check_choice(backend, "--backend", BACKENDS)
    if workers is not None:
        check_count(workers, "--workers", minimum=1)
    if address is not None and backend != "ray":
        raise ValueError(f"`--address` needs `--backend ray`, got --backend {backend}")
    if backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ValueError("`--backend` ray needs Ray: pip install 'privaudit[ray]'") from None
    import torch  # noqa: F401  (checked here: a worker's ImportError would come after runs/ exists)

    _check_output_dir(output)
    record = _history_recorder(history, no_history, model_id, release)
    with _progress_bars() as report:
        report("training models", detail=f"{2 * settings.num_models_per_side} models, backend {backend}; finished runs are kept in {output / 'runs'}")
        result = run_blackbox_audit(settings, output / "runs", backend=backend, max_workers=workers, address=address)
    data = stamp_results(result.to_dict(), audit="blackbox")
    write_json_atomic(output / "results.json", data)
    record(data)
    if as_json:
        _emit(json.dumps(data, indent=2))
        return
    rows = [
        [f"ε lower bound (GDP, Clopper–Pearson, {settings.confidence:.0%})", _format(float(result.epsilon_lower_bound))],
        ["ε lower bound ((ε, δ), Clopper–Pearson)", _format(float(result.epsilon_lower_bound_eps_delta))],
        [f"claimed ε (δ = {settings.delta:g})", _format(float(result.claimed_epsilon))],
        ["models with / without the canary", f"{result.num_in} / {result.num_out}"],
        ["trained now / resumed", f"{result.num_trained} / {result.num_in + result.num_out - result.num_trained}"],
    ]
    _emit(_render_table(f"Black-box audit, results in {output}", ["quantity", "value"], rows))


@app.command()
def report(
    runs: Annotated[list[Path], typer.Argument(help="Output directories of audits (each with results.json and its plots).")],
    output: Annotated[Path, typer.Option("--output", help="The HTML file to write.")] = Path("report.html"),
    title: Annotated[str, typer.Option("--title", help="Title of the page.")] = "privaudit report",
) -> None:
    """Build one self-contained report.html from audit output directories."""
    from .report.html import write_report
    from .report.sections import load_results, section_for

    sections = [section_for(load_results(run), run) for run in runs]
    if output.is_dir():
        raise ValueError(f"`--output` must be a file path, got the directory {str(output)!r}")
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_name(f".{output.name}.tmp")
    write_report(sections, temporary, title=title)
    os.replace(temporary, output)
    _emit(f"report: {output}")


@app.command("history")
def history_command(
    model_id: Annotated[Optional[str], typer.Option("--model-id", help="Only this model (default: every model in the store).")] = None,
    audit: Annotated[Optional[str], typer.Option("--audit", help="Only this audit family, e.g. dpsgd.")] = None,
    tolerance: Annotated[float, typer.Option("--tolerance", help="Flag a rise of the headline (ε bound, exposure) larger than this between consecutive audits.")] = 0.1,
    history: HistoryOption = None,
    fail_on_regression: Annotated[bool, typer.Option("--fail-on-regression", help="Exit with code 1 when a regression is flagged (for CI).")] = False,
    as_json: JsonOption = False,
) -> None:
    """Compare audits of the same model over time: the headline's change between consecutive audits, regressions flagged."""
    from .history import HistoryStore, compare, history_path
    from ._core.validation import check_positive

    tolerance = check_positive(tolerance, "--tolerance", allow_zero=True)
    path = history_path(history)
    if path is None:
        raise ValueError("`--history` is off (PRIVAUDIT_HISTORY=off); give a store with --history PATH")
    if path.is_dir():
        raise ValueError(f"`--history` must be a file path, got the directory {str(path)!r}")
    if not path.is_file():
        raise ValueError(f"`--history`: no results store at {str(path)!r}; run an audit first")
    records = HistoryStore(path).records(model_id=model_id, audit=audit)
    changes = {change.after.id: change for change in compare(records, tolerance=tolerance)}
    regressions = [change for change in changes.values() if change.regression]
    if as_json:
        rows = [
            {"id": r.id, "model_id": r.model_id, "audit": r.audit, "release": r.release, "created_at": r.created_at, "label": r.label,
             "value": r.value, "kind": r.kind, "confidence": r.confidence, "valid": r.valid,
             "change": changes[r.id].change if r.id in changes else None, "regression": changes[r.id].regression if r.id in changes else False}
            for r in records
        ]
        _emit(json.dumps({"store": str(path), "tolerance": tolerance, "audits": rows}, indent=2))
    else:
        rows = []
        for r in records:
            change = changes.get(r.id)
            delta = "" if change is None or change.change is None else f"{change.change:+.4g}"
            flag = "REGRESSION" if change is not None and change.regression else ""
            value = "—" if r.value is None else _format(r.value)
            rows.append([str(r.id), r.created_at, r.model_id, r.release or "", r.audit, r.label, f"{value} ({r.kind})", delta, flag])
        columns = ["id", "time", "model", "release", "audit", "headline", "value", "change", "flag"]
        text = _render_table(f"Audit history in {path} (tolerance {tolerance:g})", columns, rows)
        _emit(text + (f"{len(regressions)} regression(s) flagged\n" if regressions else "no regressions\n"))
    if fail_on_regression and regressions:
        raise typer.Exit(1)
