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


def _usage_error_line(error: Exception) -> str | None:
    """The one-line message of a click/typer usage error, or None for other exceptions."""
    # duck-typed: newer typer vendors its own click, older typer uses click itself
    if not (hasattr(error, "format_message") and hasattr(error, "exit_code")):
        return None
    return " ".join(error.format_message().split())


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


@app.command()
def demo(
    seed: Annotated[int, typer.Option("--seed", help="Seed of the generated data.")] = 0,
    as_json: JsonOption = False,
) -> None:
    """Run the audits on built-in generated data whose true privacy is known."""
    from .demo import run_demo

    report = run_demo(seed=seed)
    if as_json:
        _emit(json.dumps(report.to_dict(), indent=2))
        return
    rows = [list(row) for row in report.rows()]
    _emit(_render_table(f"privaudit demo (seed {seed}, delta = 1e-5)", ["section", "quantity", "value"], rows))


@contextlib.contextmanager
def _progress_bars():
    """Transient rich progress bars on stderr; yields ``report(stage, completed, total, detail)``."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[detail]}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bars:
        tasks: dict = {}

        def report(stage, completed=None, total=None, detail=""):
            if stage not in tasks:
                tasks[stage] = bars.add_task(stage, total=total, detail=detail)
            bars.update(tasks[stage], completed=completed or 0, total=total, detail=detail)

        yield report


audit_app = typer.Typer(help="Run an audit end to end and write results.json and plots.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")


@audit_app.command("secret-sharer")
def audit_secret_sharer(
    output: Annotated[Path, typer.Option("--output", help="Directory for results.json, model.pt, provenance.json and PNGs.")] = Path("privaudit-secret-sharer"),
    config: Annotated[Optional[Path], typer.Option("--config", help="JSON file with SecretSharerConfig fields; flags below override it.")] = None,
    template: Annotated[Optional[str], typer.Option("--template", help="Canary format, e.g. 'my pin is {digits:6}'.")] = None,
    schedule: Annotated[Optional[str], typer.Option("--schedule", help="Insertion counts, comma-separated, e.g. 1,2,4,8,16,32.")] = None,
    epochs: Annotated[Optional[int], typer.Option("--epochs", help="Maximum training epochs (early stopping on validation loss).")] = None,
    target_epsilon: Annotated[Optional[float], typer.Option("--dp-epsilon", help="Train the audited model with DP-SGD (Opacus) at this epsilon.")] = None,
    compare_dp_epsilon: Annotated[Optional[float], typer.Option("--compare-dp", help="Also train a DP-SGD model at this epsilon and compare exposures.")] = None,
    max_corpus_chars: Annotated[Optional[int], typer.Option("--max-corpus-chars", help="Use only the first N characters of the corpus.")] = None,
    hidden: Annotated[Optional[int], typer.Option("--hidden", help="LSTM hidden units (default 256).")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of canaries, insertion, training and references.")] = None,
) -> None:
    """Secret Sharer: insert canaries, train a character LSTM, measure exposure, try extraction."""
    import dataclasses as _dataclasses

    from .audits.secret_sharer import SecretSharerConfig, run_secret_sharer

    base = SecretSharerConfig.from_json(config) if config is not None else SecretSharerConfig()
    overrides = {
        "template": template,
        "epochs": epochs,
        "target_epsilon": target_epsilon,
        "compare_dp_epsilon": compare_dp_epsilon,
        "max_corpus_chars": max_corpus_chars,
        "hidden": hidden,
        "seed": seed,
    }
    if schedule is not None:
        try:
            overrides["schedule"] = tuple(int(part) for part in schedule.split(","))
        except ValueError:
            raise ValueError(f"`--schedule` must be comma-separated integers, got {schedule!r}") from None
    settings = _dataclasses.replace(base, **{key: value for key, value in overrides.items() if value is not None})
    with _progress_bars() as report:
        result = run_secret_sharer(settings, output, progress=report)
    rows = [
        [str(c["repetitions"]), c["text"], _format(c["log_perplexity_bits"]), _format(c["exposure_exact"]), _format(c["exposure_sampled"]), _format(c["exposure_extrapolated"]), str(c["extracted"])]
        for c in result.canaries
    ]
    columns = ["insertions", "canary", "log-perplexity", "exposure (exact)", "exposure (sampled)", "exposure (extrapolated)", "extracted"]
    text = _render_table(f"Secret Sharer: |R| = {result.space_size}, results in {output}", columns, rows)
    _emit(text + f"epsilon lower bound from exposures: {result.epsilon_bound['epsilon']:.4g}\n")


@audit_app.command("dpsgd")
def audit_dpsgd(
    config: Annotated[Path, typer.Option("--config", help="JSON file with DPSGDAuditConfig fields (see configs/dpsgd.json).")],
    output: Annotated[Path, typer.Option("--output", help="Directory for results.json, observations.png, tradeoff.png and bound_vs_observations.png.")],
    seed: Annotated[Optional[int], typer.Option("--seed", help="Override the config's seed (data split, model, canaries, noise).")] = None,
    as_json: JsonOption = False,
) -> None:
    """White-box DP-SGD audit with gradient canaries (Tight Auditing §5.5, §6.3): per-step ε bound, flag, end-to-end estimate."""
    import dataclasses as _dataclasses

    from .audits.dpsgd import DPSGDAuditConfig, run_dpsgd_audit
    from ._staging import staged_output
    from .audits.dpsgd_report import write_dpsgd_outputs

    settings = DPSGDAuditConfig.from_json(config)
    if seed is not None:
        settings = _dataclasses.replace(settings, seed=seed)
    with _progress_bars() as report, staged_output(output) as scratch:
        report("training with DP-SGD and observing canaries", detail=f"{settings.num_steps} steps, bug: {settings.bug}")
        result, observations = run_dpsgd_audit(settings)
        report("writing results.json and plots")
        data = write_dpsgd_outputs(result, observations, scratch)
    if as_json:
        _emit(json.dumps(data, indent=2))
        return
    bound = result.step_bounds["gdp_clopper_pearson"]
    rows = [
        [f"claimed per-step ε (δ = {settings.delta:g}, σ = {settings.noise_multiplier:g})", _format(float(result.claimed_step_epsilon))],
        [f"per-step ε lower bound (GDP, Clopper–Pearson, {settings.confidence:.0%})", _format(float(bound.epsilon))],
        ["flagged (bound exceeds the claim)", "yes" if result.flagged else "no"],
        [f"end-to-end ε estimate ({settings.num_steps} steps, q = {settings.sampling_rate:g})", _format(float(result.end_to_end.epsilon))],
        ["claimed end-to-end ε", _format(float(result.claimed_end_to_end_epsilon))],
        ["observations in / out", f"{result.num_in} / {result.num_out}"],
        ["test accuracy", _format(float(result.test_accuracy))],
    ]
    _emit(_render_table(f"DP-SGD audit (bug: {settings.bug}), results in {output}", ["quantity", "value"], rows))


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


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``privaudit`` console script; exits with the command's status."""
    app(args=argv, prog_name="privaudit")
