"""Commands on score and loss files: ``exposure`` and ``bound``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import app
from .options import JsonOption, emit, format_value, render_table

@app.command()
def exposure(
    canaries: Annotated[Path, typer.Option("--canaries", help="Canary losses (.npy, .csv or one number per line).")],
    references: Annotated[Path, typer.Option("--references", help="Reference losses from the same format, never inserted.")],
    extrapolate: Annotated[bool, typer.Option("--extrapolate", help="Add skew-normal extrapolated exposure.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Rank-based exposure of each canary among reference losses (Secret Sharer §4)."""
    from .._core.readers import read_numbers
    from ..stats.exposure import exposure as rank_exposure
    from ..stats.exposure import exposure_extrapolated

    canary_losses = read_numbers(canaries, "--canaries")
    reference_losses = read_numbers(references, "--references")
    ranked = rank_exposure(canary_losses, reference_losses)
    fitted = exposure_extrapolated(canary_losses, reference_losses) if extrapolate else None
    if as_json:
        payload = {"exposure": ranked.to_dict()}
        if fitted is not None:
            payload["extrapolated"] = fitted.to_dict()
        emit(json.dumps(payload, indent=2))
        return
    columns = ["canary", "loss", "rank", "exposure"] + (["extrapolated exposure"] if fitted is not None else [])
    rows = []
    for index, loss in enumerate(canary_losses):
        row = [str(index), format_value(float(loss)), str(int(ranked.ranks[index])), format_value(float(ranked.exposures[index]))]
        if fitted is not None:
            row.append(format_value(float(fitted.exposures[index])))
        rows.append(row)
    title = f"Exposure among {ranked.num_references} references (ties count against the canary)"
    text = render_table(title, columns, rows)
    if fitted is not None:
        text += f"skew-normal fit: Kolmogorov-Smirnov statistic {fitted.ks_statistic:.4g} (p = {fitted.ks_pvalue:.3g}, optimistic: fitted on the same data)\n"
    emit(text)


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
    seed: Annotated[int, typer.Option("--seed", help="Seed of the held-out split (fixed by default, so equal input gives equal output; recorded in the output).")] = 0,
    sampling_prob: Annotated[float, typer.Option("--sampling-prob", help="With --method pld: Poisson sampling rate in (0, 1].")] = 1.0,
    steps: Annotated[int, typer.Option("--steps", help="With --method pld: number of composed steps.")] = 1,
    as_json: JsonOption = False,
) -> None:
    """Lower-bound epsilon from membership-inference scores (Tight Auditing §4)."""
    from .._core.readers import read_numbers
    from ..stats.bounds import epsilon_lower_bound
    from ..stats.pld import SubsampledGaussian

    from .._core.seeding import check_seed

    seed = check_seed(seed, "--seed")
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
        rows = [[key, format_value(value)] for key, value in data.items() if key not in ("versions", "result_type")]
        text = render_table("Epsilon lower bound", ["quantity", "value"], rows)
    if not result.valid:
        typer.echo("warning: the threshold was chosen on the same data it bounds; the bound is optimistic (valid = False)", err=True)
    emit(text)


