"""The ``privaudit audit ...`` commands of the four audit families.

Registered on :data:`privaudit.cli.audit_app` when :mod:`privaudit.cli` is
imported. Each one loads its config (``--seed`` overrides the config's),
runs in a staged output directory so that a failure leaves nothing, appends
its results to the history, and prints a table or ``--json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ._core.files import staged_output
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
    audit_app,
)


def _with_seed(settings, seed: Optional[int]):
    """``settings`` with its seed replaced by ``--seed`` when one was given."""
    return settings if seed is None else dataclasses.replace(settings, seed=seed)


@contextlib.contextmanager
def _staged_audit(output: Path, stage: str, detail: str = ""):
    """Progress bars and a scratch directory that becomes ``output`` only if the audit finishes."""
    with _progress_bars() as report, staged_output(output) as scratch:
        report(stage, detail=detail)
        yield report, scratch


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
    settings = dataclasses.replace(base, **{key: value for key, value in overrides.items() if value is not None})
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
    from .audits.dpsgd import DPSGDAuditConfig, run_dpsgd_audit
    from .audits.dpsgd_report import write_dpsgd_outputs

    settings = _with_seed(DPSGDAuditConfig.from_json(config), seed)
    record = _history_recorder(history, no_history, model_id, release)
    with _staged_audit(output, "training with DP-SGD and observing canaries", f"{settings.num_steps} steps, bug: {settings.bug}") as (report, scratch):
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
    if "gdp_rank" in result.step_bounds:  # q_c = 1 only
        rank = result.step_bounds["gdp_rank"]
        rows.insert(2, [f"per-step ε approximate lower bound (GDP, rank-based, {settings.confidence:.0%})", _format(float(rank.epsilon))])
    _emit(_render_table(f"DP-SGD audit (bug: {settings.bug}), results in {output}", ["quantity", "value"], rows))


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
    from .audits.fl import FLAuditConfig, run_fl_audit
    from .audits.fl_report import write_fl_outputs

    settings = _with_seed(FLAuditConfig.from_json(config), seed)
    record = _history_recorder(history, no_history, model_id, release)
    detail = f"{len(settings.participations)} run(s), {settings.training.num_rounds} rounds each"
    with _staged_audit(output, "training DP-FedAvg with canary clients", detail) as (report, scratch):
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
    from .audits.panoramia_report import summary_rows, write_panoramia_outputs

    if config is not None and (model is not None or members is not None):
        raise ValueError("give either `--config` (the embedded demo) or `--model` with `--members`, not both")
    if config is None and (model is None or members is None):
        raise ValueError("`--model` and `--members` must both be given (or `--config` for the embedded demo)")
    record = _history_recorder(history, no_history, model_id, release)
    if config is not None:
        from .audits.panoramia_demo import PanoramiaDemoConfig, run_panoramia_demo

        settings = _with_seed(PanoramiaDemoConfig.from_json(config), seed)
        with _staged_audit(output, "PANORAMIA on the embedded default") as (report, scratch):
            results, scores = run_panoramia_demo(settings, progress=report)
            report("writing results.json and plots")
            data = write_panoramia_outputs(results, scores, scratch, config=settings)
    else:
        from .audits.panoramia import PanoramiaSettings
        from .audits.panoramia_demo import run_panoramia_on_model

        settings = PanoramiaSettings(audit_size=audit_size, confidence=confidence, seed=0 if seed is None else seed)
        with _staged_audit(output, "auditing your model", str(model)) as (report, scratch):
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
