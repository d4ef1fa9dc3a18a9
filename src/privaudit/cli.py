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


# optional dependencies and the extra that installs each
_EXTRAS = {"torch": "dpsgd", "opacus": "dpsgd", "sklearn": "dpsgd", "matplotlib": "dpsgd", "ray": "ray", "transformers": "hf", "flwr": "flower"}


def _missing_extra_line(error: ImportError) -> str | None:
    """"missing optional dependency ..." for an optional library that failed to import; None for anything else (a bug)."""
    name = (error.name or "").split(".")[0]
    if name not in _EXTRAS:
        return None
    return f"missing optional dependency `{name}`: install it with pip install 'privaudit[{_EXTRAS[name]}]'"


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
    secure_canaries: Annotated[bool, typer.Option("--secure-canaries", help="Draw canaries from the OS's secure randomness (not reproducible from --seed).")] = False,
    history: HistoryOption = None,
    no_history: NoHistoryOption = False,
    model_id: ModelIdOption = None,
    release: ReleaseOption = None,
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
        "secure_canaries": secure_canaries or None,
    }
    if schedule is not None:
        try:
            overrides["schedule"] = tuple(int(part) for part in schedule.split(","))
        except ValueError:
            raise ValueError(f"`--schedule` must be comma-separated integers, got {schedule!r}") from None
    settings = _dataclasses.replace(base, **{key: value for key, value in overrides.items() if value is not None})
    record = _history_recorder(history, no_history, model_id, release)
    with _progress_bars() as report:
        result = run_secret_sharer(settings, output, progress=report)
    record(json.loads((output / "results.json").read_text()))
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
    history: HistoryOption = None,
    no_history: NoHistoryOption = False,
    model_id: ModelIdOption = None,
    release: ReleaseOption = None,
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
    record = _history_recorder(history, no_history, model_id, release)
    with _progress_bars() as report, staged_output(output) as scratch:
        report("training with DP-SGD and observing canaries", detail=f"{settings.num_steps} steps, bug: {settings.bug}")
        result, observations = run_dpsgd_audit(settings)
        report("writing results.json and plots")
        data = write_dpsgd_outputs(result, observations, scratch)
    record(data)
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


from . import cli_runs as _cli_runs  # noqa: E402,F401  (registers demo, history, report, audit blackbox)


@audit_app.command("fl")
def audit_fl(
    config: Annotated[Path, typer.Option("--config", help="JSON file with FLAuditConfig fields and a 'training' object (see configs/fl.json).")],
    output: Annotated[Path, typer.Option("--output", help="Directory for results.json and the cosine and epsilon plots.")],
    seed: Annotated[Optional[int], typer.Option("--seed", help="Override the config's seed (data split, clients, canaries, noise).")] = None,
    history: HistoryOption = None,
    no_history: NoHistoryOption = False,
    model_id: ModelIdOption = None,
    release: ReleaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """One-shot FL estimation (Andrew et al.): DP-FedAvg with random canary clients, ε_est and ε_lo per threat model."""
    import dataclasses as _dataclasses

    from ._staging import staged_output
    from .audits.fl import FLAuditConfig, run_fl_audit
    from .audits.fl_report import write_fl_outputs

    settings = FLAuditConfig.from_json(config)
    if seed is not None:
        settings = _dataclasses.replace(settings, seed=seed)
    record = _history_recorder(history, no_history, model_id, release)
    with _progress_bars() as report, staged_output(output) as scratch:
        report("training DP-FedAvg with canary clients", detail=f"{len(settings.participations)} run(s), {settings.training.num_rounds} rounds each")
        result, runs = run_fl_audit(settings)
        report("writing results.json and plots")
        data = write_fl_outputs(result, runs, scratch)
    record(data, audit="fl")
    if as_json:
        _emit(json.dumps(data, indent=2))
        return
    rows = [
        [
            str(run.participations) if run.sampling == "fixed" else run.sampling,
            _format(float(run.analytical_epsilon)),
            _format(float(run.final["estimate"].epsilon)),
            _format(float(run.final["lower_bound"].epsilon)),
            _format(float(run.all["estimate"].epsilon)),
            _format(float(run.all["lower_bound"].epsilon)),
            _format(float(run.test_accuracy)),
        ]
        for run in result.runs
    ]
    columns = ["participations", "analytical ε", "ε_est final", "ε_lo final", "ε_est all", "ε_lo all", "test accuracy"]
    _emit(_render_table(f"One-shot FL audit (δ = {settings.delta:g}, σ = {settings.training.noise_multiplier:g}), results in {output}", columns, rows))


@audit_app.command("panoramia")
def audit_panoramia(
    output: Annotated[Path, typer.Option("--output", help="Directory for results.json, timings.json and pr_<target>.png.")],
    config: Annotated[Optional[Path], typer.Option("--config", help="Embedded default demo: JSON file with PanoramiaDemoConfig fields (see configs/panoramia.json).")] = None,
    model: Annotated[Optional[Path], typer.Option("--model", help="Your model: a torch.save'd state_dict of a privaudit classifier (loaded weights-only).")] = None,
    spec: Annotated[Optional[Path], typer.Option("--spec", help="JSON architecture spec of --model (default: MODEL with suffix .json).")] = None,
    members: Annotated[Optional[Path], typer.Option("--members", help="Known training members: .npz with x and y, or .csv whose last column is the label.")] = None,
    non_members: Annotated[Optional[Path], typer.Option("--non-members", help="Real non-members (same formats), for the RM;RN comparison.")] = None,
    inclusion_randomised: Annotated[bool, typer.Option("--inclusion-randomised", help="Members and non-members were split by independent fair coins before training: add the O(1) audit.")] = False,
    generator: Annotated[str, typer.Option("--generator", help="Generator of non-members: mst (tabular) or vae (images in [0, 1]).")] = "mst",
    helper_epochs: Annotated[int, typer.Option("--helper-epochs", help="Training epochs of the helper model (same architecture as --model).")] = 10,
    audit_size: Annotated[int, typer.Option("--audit-size", help="m, the members held out for the audit game.")] = 1000,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence 1 - beta of c_lb and {c+eps}_lb.")] = 0.95,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of every random step (overrides the config's).")] = None,
    history: HistoryOption = None,
    no_history: NoHistoryOption = False,
    model_id: ModelIdOption = None,
    release: ReleaseOption = None,
    as_json: JsonOption = False,
) -> None:
    """PANORAMIA (Kazmi et al.): audit a trained model with generated non-members; no retraining, no canaries."""
    import dataclasses as _dataclasses

    from ._staging import staged_output
    from .audits.panoramia_report import summary_rows, write_panoramia_outputs

    if config is not None and (model is not None or members is not None):
        raise ValueError("give either `--config` (the embedded demo) or `--model` with `--members`, not both")
    if config is None and (model is None or members is None):
        raise ValueError("`--model` and `--members` must both be given (or `--config` for the embedded demo)")
    record = _history_recorder(history, no_history, model_id, release)
    if config is not None:
        from .audits.panoramia_demo import PanoramiaDemoConfig, run_panoramia_demo

        settings = PanoramiaDemoConfig.from_json(config)
        if seed is not None:
            settings = _dataclasses.replace(settings, seed=seed)
        with _progress_bars() as report, staged_output(output) as scratch:
            results, scores = run_panoramia_demo(settings, progress=report)
            report("writing results.json and plots")
            data = write_panoramia_outputs(results, scores, scratch, config=settings)
    else:
        from .audits.panoramia import PanoramiaSettings
        from .audits.panoramia_demo import run_panoramia_on_model

        settings = PanoramiaSettings(audit_size=audit_size, confidence=confidence, seed=0 if seed is None else seed)
        with _progress_bars() as report, staged_output(output) as scratch:
            report("auditing your model", detail=str(model))
            results, scores = run_panoramia_on_model(
                model, members, spec_path=spec, non_members_path=non_members, inclusion_randomised=inclusion_randomised,
                generator=generator, helper_epochs=helper_epochs, settings=settings,
            )
            report("writing results.json and plots")
            data = write_panoramia_outputs(results, scores, scratch, config={"model": str(model), "members": str(members), "settings": settings})
    record({"result_type": "PanoramiaResults", **data}, audit="panoramia")
    if as_json:
        _emit(json.dumps(data, indent=2))
        return
    rows = [[_format(value) for value in row.values()] for row in summary_rows(results)]
    columns = ["target", "generator", "c_lb", "{c+ε}_lb", "ε̃ (estimate)", "RM;RN ε", "O(1) ε", "claimed DP ε"]
    _emit(_render_table(f"PANORAMIA, results in {output}", columns, rows))


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``privaudit`` console script; exits with the command's status."""
    app(args=argv, prog_name="privaudit")
