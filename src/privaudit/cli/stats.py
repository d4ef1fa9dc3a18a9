"""Commands on score and loss files: ``exposure`` and ``bound``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..report.verdict import console_lines
from .app import app
from .claims import claim_flags
from .flag_names import flags_for, flags_in_messages
from .options import JsonOption, emit, format_value, render_table
from .tables import verdict_table


def _run_and_write(what: str, named: tuple[Any, ...], output: Path | None, audit: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``audit(*args, **kwargs)``, its messages naming the claim flags of ``what`` and the ``named`` flags as typed; the run written to ``output`` when given."""
    with flags_in_messages(claim_flags(what) + named, None):  # a library argument's name in a message reads as the flag typed
        run = audit(*args, **kwargs)
    if output is not None:
        from ..report.runs import write_run

        write_run(output, run, report=True)
    return run


@app.command()
def exposure(
    canaries: Annotated[
        Path,
        typer.Option(
            "--canaries", help="Canary losses (.npy, .csv or one number per line), or a CSV with a header and --loss-col/--text-col/--insertions-col."
        ),
    ],
    references: Annotated[Path, typer.Option("--references", help="Reference losses from the same format, never inserted.")],
    extrapolate: Annotated[bool, typer.Option("--extrapolate", help="Add skew-normal extrapolated exposure.")] = False,
    loss_col: Annotated[Optional[str], typer.Option("--loss-col", help="With a CSV --canaries with a header: the column of losses (default 'loss').")] = None,
    text_col: Annotated[Optional[str], typer.Option("--text-col", help="With a CSV --canaries: the column of each canary's text or id.")] = None,
    insertions_col: Annotated[
        Optional[str], typer.Option("--insertions-col", help="With a CSV --canaries: the column of each canary's number of insertions.")
    ] = None,
    insertions: Annotated[
        Optional[int], typer.Option("--insertions", help="Every canary was inserted this many times (enables the ε bound, for a group of that size).")
    ] = None,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence of the ε lower bound, in (0, 1).")] = 0.95,
    claimed_epsilon: Annotated[
        Optional[float],
        typer.Option("--claimed-epsilon", help="The ε your training claims for a record, end to end, in (0, inf): compared with the ε bound (a pure ε)."),
    ] = None,
    claimed_delta: Annotated[
        Optional[float], typer.Option("--claimed-delta", help="Its δ, in [0, 1) (default 0): a pure bound cannot refute a claim with δ > 0.")
    ] = None,
    output: Annotated[Optional[Path], typer.Option("--output", help="Directory for results.json, report.html and the exposure figure.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Rank-based exposure of each canary among reference losses (Secret Sharer §4), the baselines and, insertions known, the ε bound."""
    from .._core.files import check_output_apart, check_output_dir
    from .._core.messages import printable
    from .._core.readers import read_numbers
    from .._core.results import to_plain
    from ..audits.exposure.audit import audit_exposure, read_canary_table

    if output is not None:
        check_output_dir(output)
        check_output_apart(output, [("--canaries", canaries), ("--references", references)])
    if insertions is not None and insertions_col is not None:
        raise ValueError("give either `--insertions` (one count for every canary) or `--insertions-col`, not both")
    texts = counts = None
    source = {"canaries": str(canaries), "references": str(references)}
    if loss_col is not None or text_col is not None or insertions_col is not None:
        loss_col = loss_col or "loss"
        canary_losses, texts, counts = read_canary_table(canaries, loss_col, text_col, insertions_col)
        source.update({key: value for key, value in (("loss_column", loss_col), ("text_column", text_col), ("insertions_column", insertions_col)) if value})
    else:
        canary_losses = read_numbers(canaries, "--canaries")
    if insertions is not None:
        if insertions < 1:
            raise ValueError(f"`--insertions` must be an integer >= 1, got {insertions}")
        counts = [insertions] * canary_losses.size
    reference_losses = read_numbers(references, "--references")
    named = flags_for(
        confidence="--confidence",
        insertions="--insertions" if insertions is not None else "--insertions-col",
        reference_losses="--references",
        canary_losses="--canaries",
        claimed_epsilon="--claimed-epsilon",
        claimed_delta="--claimed-delta",
    )
    run = _run_and_write(
        "the training",
        named,
        output,
        audit_exposure,
        canary_losses,
        reference_losses,
        texts=texts,
        insertions=counts,
        confidence=confidence,
        extrapolate=extrapolate,
        source=source,
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
    )
    result: Any = run.result  # an ExposureAuditResult
    if as_json:
        payload: dict[str, Any] = {"exposure": run.observations["ranked"].to_dict()}
        if run.observations["fitted"] is not None:
            payload["extrapolated"] = run.observations["fitted"].to_dict()
        payload["canaries"] = to_plain(result.canaries)
        payload["baselines"] = result.baselines
        payload["epsilon_bound"] = result.epsilon_bound
        full = result.to_dict()
        payload.update({key: full[key] for key in ("claim_verdict", "ceiling", "sanity_warnings")})
        emit(json.dumps(payload, indent=2))
        return
    fitted = result.extrapolation
    columns = ["canary"] + (["text"] if texts is not None else []) + (["insertions"] if counts is not None else [])
    columns += ["loss", "rank", "exposure"] + (["extrapolated exposure"] if fitted is not None else [])
    rows = []
    for canary in result.canaries:
        row = [str(canary.index)]
        if texts is not None:
            row.append(printable(canary.text if len(canary.text) <= 40 else canary.text[:39] + "…"))
        if counts is not None:
            row.append(str(canary.insertions))
        row += [format_value(canary.loss), str(canary.rank), format_value(canary.exposure)]
        if fitted is not None:
            row.append(format_value(canary.exposure_extrapolated))
        rows.append(row)
    title = f"Exposure among {result.num_references} references (ties count against the canary)"
    text = render_table(title, columns, rows)
    baselines = result.baselines
    text += (
        f"random guessing: mean {baselines['mean']:.4g}, median {baselines['median']:.4g}, 75th percentile {baselines['quantile_75']:.4g} bits; "
        f"no unmemorised canary exceeds {baselines['sampled_upper_95_all_canaries']:.4g} bits with 95% probability\n"
    )
    bound = result.epsilon_bound
    if bound is not None:
        text += f"ε lower bound from exposures: {format_value(bound['epsilon'])} ({bound['kind']}, {bound['confidence']:.0%}, group of {bound['duplicates']})\n"
    else:
        text += "ε lower bound: not computed (give --insertions or --insertions-col: a canary inserted k times bounds kε)\n"
    if fitted is not None:
        text += (
            f"skew-normal fit: Kolmogorov-Smirnov statistic {fitted['ks_statistic']:.4g} (p = {fitted['ks_pvalue']:.3g}, optimistic: fitted on the same data)\n"
        )
    text += verdict_table(result)
    if output is not None:
        text += f"results: {output / 'results.json'}; report: {output / 'report.html'}\n"
    emit(text)
    for line in console_lines(result.to_dict()):
        emit(line)


def _parse_threshold(text: str):
    if text in ("auto", "split", "bonferroni", "multi-split", "best"):
        return text
    if text == "ranks":
        from ..stats.thresholds import Bonferroni

        return Bonferroni(over="ranks")
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"`--threshold` must be a number or one of 'auto', 'split', 'bonferroni', 'ranks', 'multi-split', 'best', got {text!r}") from None


DIRECTION_OPTIONS = ("--higher-is-member", "--lower-is-member")


def _direction(higher: bool, lower: bool, in_file, out_file, scores, score_col):
    """The score-direction convention from the flags, checked against the names of the score column and files before any is read."""
    from ..audits.scores.audit import score_direction

    if higher and lower:
        raise ValueError("give one of `--higher-is-member` and `--lower-is-member`, not both")
    names = {"--score-col": score_col, "--scores": scores.name} if scores is not None else {}
    names.update({option: path.name for option, path in (("--in", in_file), ("--out", out_file)) if path is not None and scores is None})
    return score_direction("higher" if higher else "lower" if lower else None, names=names, options=DIRECTION_OPTIONS)


def _bound_inputs(in_file, out_file, scores, score_col, member_col):
    """(in scores, out scores, source) from --in/--out, or from --scores with its two columns."""
    from .._core.readers import read_numbers, read_score_table

    if scores is not None:
        if in_file is not None or out_file is not None:
            raise ValueError("give either `--scores` (one CSV with a score and a membership column) or `--in` and `--out`, not both")
        values, member = read_score_table(scores, score_col, member_col)
        if member.all() or not member.any():
            raise ValueError(f"`--member-col`: {str(scores)!r} must have members and non-members, got {int(member.sum())} of {member.size} members")
        return values[member], values[~member], {"scores": str(scores), "score_column": score_col, "member_column": member_col}
    if in_file is None or out_file is None:
        raise ValueError("`--in` and `--out` must both be given (or `--scores` with `--score-col` and `--member-col`)")
    return read_numbers(in_file, "--in"), read_numbers(out_file, "--out"), {"in": str(in_file), "out": str(out_file)}


@app.command()
def bound(
    in_file: Annotated[Optional[Path], typer.Option("--in", help="Attack scores with the target present.")] = None,
    out_file: Annotated[Optional[Path], typer.Option("--out", help="Attack scores with the target absent.")] = None,
    delta: Annotated[float, typer.Option("--delta", help="The delta at which epsilon is reported, in (0, 1).")] = 1e-5,
    scores: Annotated[Optional[Path], typer.Option("--scores", help="Instead of --in/--out: a CSV with a header, one row per example.")] = None,
    score_col: Annotated[str, typer.Option("--score-col", help="With --scores: the column of scores.")] = "score",
    member_col: Annotated[str, typer.Option("--member-col", help="With --scores: the membership column (1/0, true/false, yes/no, in/out).")] = "member",
    higher_is_member: Annotated[
        bool, typer.Option("--higher-is-member", help="A higher score means member (privaudit's default; recorded as given when passed).")
    ] = False,
    lower_is_member: Annotated[
        bool,
        typer.Option(
            "--lower-is-member",
            help="A lower score means member (losses, perplexities): the scores are negated. Needed, or --higher-is-member, when a name says loss.",
        ),
    ] = False,
    method: Annotated[str, typer.Option("--method", help="gdp, eps-delta, pure, or pld (subsampled Gaussian, see --sampling-prob/--steps).")] = "gdp",
    interval: Annotated[str, typer.Option("--interval", help="clopper-pearson, jeffreys, bayes or katz-log (pure only).")] = "clopper-pearson",
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence (or credibility) in (0, 1).")] = 0.95,
    threshold: Annotated[
        str,
        typer.Option(
            "--threshold",
            help="auto (split for gdp/pld, ranks fixed in advance for eps-delta/pure), a number fixed in advance (on the scores' own scale), or split, bonferroni, ranks, multi-split, best.",
        ),
    ] = "auto",
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the held-out split (fixed by default, so equal input gives equal output; recorded in the output).")
    ] = 0,
    sampling_prob: Annotated[float, typer.Option("--sampling-prob", help="With --method pld: Poisson sampling rate in (0, 1].")] = 1.0,
    steps: Annotated[int, typer.Option("--steps", help="With --method pld: number of composed steps.")] = 1,
    one_run: Annotated[bool, typer.Option("--one-run", help="Membership was drawn by independent fair coins before training: add the one-run bound.")] = False,
    family: Annotated[
        Optional[str],
        typer.Option(
            "--family",
            help="With --one-run: test the claim's own family by order statistics: gdp, subsampled-gaussian (--sampling-prob), dpsgd (--sampling-prob, --steps), laplace, generic ((eps, delta) at --delta).",
        ),
    ] = None,
    family_claim: Annotated[
        Optional[float],
        typer.Option(
            "--family-claim",
            help="With --family: the family parameter the claim states (mu for gdp, sigma for subsampled-gaussian/dpsgd, epsilon for laplace/generic), in (0, inf); fixes the guesses in advance.",
        ),
    ] = None,
    claimed_epsilon: Annotated[
        Optional[float],
        typer.Option(
            "--claimed-epsilon",
            help="The end-to-end ε the training claims, in (0, inf): compared with the bound on the same quantity (--quantity), flagged if the bound exceeds it, drawn on the trade-off plot.",
        ),
    ] = None,
    claimed_delta: Annotated[Optional[float], typer.Option("--claimed-delta", help="The δ of --claimed-epsilon's claim, in [0, 1) (default: --delta).")] = None,
    quantity: Annotated[
        Optional[str],
        typer.Option(
            "--quantity",
            help="What the scores measure, needed with --claimed-epsilon: per-step (one step observed, e.g. an in-loop auditor's scores) or end-to-end (the final model).",
        ),
    ] = None,
    claim_sampling_rate: Annotated[
        Optional[float],
        typer.Option("--claim-sampling-rate", help="With --quantity per-step: the training's sampling rate q, to convert the claim to one step."),
    ] = None,
    claim_steps: Annotated[
        Optional[int], typer.Option("--claim-steps", help="With --quantity per-step: the training's number of steps T, to convert the claim to one step.")
    ] = None,
    output: Annotated[
        Optional[Path], typer.Option("--output", help="Directory for results.json, report.html and the ROC, histogram and trade-off figures.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Lower-bound epsilon from membership-inference scores (Tight Auditing §4), with AUC and TPR at low FPR."""
    from .._core.files import check_output_apart, check_output_dir
    from .._core.seeding import check_seed
    from .._core.validation import check_choice
    from ..audits.scores.audit import LOWER, audit_scores, direction_warning
    from ..stats.bounds import METHODS
    from ..stats.pld import SubsampledGaussian

    seed = check_seed(seed, "--seed")
    check_choice(method, "--method", (*METHODS, "pld"))  # pld is this command's: the subsampled Gaussian of --sampling-prob and --steps
    if output is not None:
        check_output_dir(output)
        check_output_apart(output, [("--in", in_file), ("--out", out_file), ("--scores", scores)])
    direction = _direction(higher_is_member, lower_is_member, in_file, out_file, scores, score_col)
    in_scores, out_scores, source = _bound_inputs(in_file, out_file, scores, score_col, member_col)
    typed = "--in/--out" if scores is None else "--scores"
    named = flags_for(
        delta="--delta",
        method="--method",
        interval="--interval",
        confidence="--confidence",
        threshold="--threshold",
        quantity="--quantity",
        claim_sampling_rate="--claim-sampling-rate",
        claim_steps="--claim-steps",
        claimed_epsilon="--claimed-epsilon",
        claimed_delta="--claimed-delta",
        sampling_prob="--sampling-prob",
        num_steps="--steps",
        in_scores=typed,
        out_scores=typed,
    )
    with flags_in_messages(named, None):  # the PLD family's own checks name `sampling_prob` and `num_steps`
        family_method = SubsampledGaussian(sampling_prob=sampling_prob, num_steps=steps) if method == "pld" else method
    null = _one_run_null(family, family_claim, one_run, delta, sampling_prob, steps, named)
    run = _run_and_write(
        "the mechanism",
        named,
        output,
        audit_scores,
        in_scores,
        out_scores,
        delta=delta,
        method=family_method,
        interval=interval,
        confidence=confidence,
        threshold=_parse_threshold(threshold),
        seed=seed,
        one_run=one_run,
        one_run_null=null,
        one_run_claim=family_claim,
        claimed_epsilon=claimed_epsilon,
        source=source,
        direction=direction,
        claimed_delta=claimed_delta,
        quantity=quantity,
        claim_sampling_rate=claim_sampling_rate,
        claim_steps=claim_steps,
    )
    result: Any = run.result  # a ScoresResult
    data = {**result.bound.to_dict(), "auc": result.auc, "auc_upper": result.auc_upper, "tpr_at_fpr": result.tpr_at_fpr}
    data["conventions"] = [dataclasses.asdict(convention) for convention in result.conventions]
    if result.bound_eps_delta is not None:
        data["epsilon_eps_delta"] = result.bound_eps_delta.epsilon
    if result.one_run is not None:
        data["one_run"] = result.one_run.to_dict()
    full = result.to_dict()
    data.update({key: full[key] for key in ("claim_verdict", "ceiling", "sanity_warnings")})
    if as_json:
        text = json.dumps(data, indent=2)
    else:
        negated = " (of the negated scores)" if direction.value == LOWER else ""
        rows = [
            [key + negated * (key == "threshold"), format_value(value)]
            for key, value in result.bound.to_dict().items()
            if key not in ("versions", "result_type")
        ]
        rows += [["score direction", f"{direction.value} ({direction.decided}{': ' + direction.evidence if direction.decided == 'explicit' else ''})"]]
        rows += [["AUC (in-sample statistic)", format_value(result.auc)]]
        rows += [[f"TPR at FPR {level}", format_value(rate)] for level, rate in result.tpr_at_fpr.items()]
        if result.bound_eps_delta is not None:
            rows.append([f"(ε, δ) lower bound ({result.bound_eps_delta.kind})", format_value(result.bound_eps_delta.epsilon)])
        if result.one_run is not None:
            rows.append(
                [
                    f"one-run lower bound ({result.one_run.kind}, best of {result.one_run.num_tests} tests: {result.one_run.method})",
                    format_value(result.one_run.epsilon),
                ]
            )
            if result.one_run.refuted:
                rows.append(["one-run null refuted", result.one_run.refuted])
        text = render_table("Epsilon lower bound", ["quantity", "value"], rows) + verdict_table(result)
        if output is not None:
            text += f"results: {output / 'results.json'}; report: {output / 'report.html'}\n"
    if not result.bound.valid:
        typer.echo("warning: the threshold was chosen on the same data it bounds; the bound is optimistic (valid = False)", err=True)
    warning = direction_warning(result, DIRECTION_OPTIONS)
    if warning is not None:
        typer.echo(f"warning: {warning}", err=True)
    emit(text)
    if not as_json:
        for line in console_lines(full):
            emit(line)


def _one_run_null(family: str | None, claim: float | None, one_run: bool, delta: float, sampling_prob: float, steps: int, named: Any) -> Any:
    """The null of ``bound --one-run --family``, checked before any work (:func:`~privaudit.stats.families.check_null_request`, as every command)."""
    from ..stats.families import check_null_request, null_family

    with flags_in_messages(named + flags_for(family="--family", family_claim="--family-claim"), None):
        check_null_request(family, claim, claim_required=False)
        if family is None:
            return None
        if not one_run:
            raise ValueError("`family` needs `--one-run`: it chooses the one-run test's null")
        return null_family(family, delta=delta, sampling_prob=sampling_prob, num_steps=steps)
