"""The table each audit command prints, drawn from the typed result of its run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .options import format_value, render_table

__all__ = ["table_for"]


def _secret_sharer(result: Any, output: Path) -> str:
    rows = [
        [
            str(c["repetitions"]),
            c["text"],
            format_value(c["log_perplexity_bits"]),
            format_value(c["exposure_exact"]),
            format_value(c["exposure_sampled"]),
            format_value(c["exposure_extrapolated"]),
            str(c["extracted"]),
        ]
        for c in result.canaries
    ]
    columns = ["insertions", "canary", "log-perplexity", "exposure (exact)", "exposure (sampled)", "exposure (extrapolated)", "extracted"]
    text = render_table(f"Secret Sharer: |R| = {result.space_size}, results in {output}", columns, rows)
    return text + f"epsilon lower bound from exposures: {result.epsilon_bound['epsilon']:.4g}\n"


def _dpsgd(result: Any, output: Path) -> str:
    settings = result.config
    bound = result.step_bounds["gdp_clopper_pearson"]
    rows = [
        [f"claimed per-step ε (δ = {settings.delta:g}, σ = {settings.noise_multiplier:g})", format_value(float(result.claimed_step_epsilon))],
        [f"per-step ε lower bound (GDP, Clopper–Pearson, {settings.confidence:.0%})", format_value(float(bound.epsilon))],
        ["flagged (bound exceeds the claim)", "yes" if result.flagged else "no"],
        [f"end-to-end ε estimate ({settings.num_steps} steps, q = {settings.sampling_rate:g})", format_value(float(result.end_to_end.epsilon))],
        ["claimed end-to-end ε", format_value(float(result.claimed_end_to_end_epsilon))],
        ["observations in / out", f"{result.num_in} / {result.num_out}"],
        ["test accuracy", format_value(float(result.test_accuracy))],
    ]
    if "gdp_rank" in result.step_bounds:  # q_c = 1 only
        rank = result.step_bounds["gdp_rank"]
        rows.insert(2, [f"per-step ε approximate lower bound (GDP, rank-based, {settings.confidence:.0%})", format_value(float(rank.epsilon))])
    return render_table(f"DP-SGD audit (bug: {settings.bug}), results in {output}", ["quantity", "value"], rows)


def _paired_rows(result: Any) -> list[list[str]]:
    """The paired test's refutation, and the former headline beside it (none for a result written before the paired test)."""
    paired = result.paired_bound
    if paired is None:
        return []
    return [
        ["refuted", result.refuted],
        ["ε lower bound (GDP, Clopper–Pearson, held-out split threshold; for comparison)", format_value(float(result.bound.epsilon))],
    ]


def _blackbox(result: Any, output: Path) -> str:
    settings = result.config
    headline = result.headline()
    rows = [
        [f"{headline.label} ({settings.confidence:.0%})", format_value(float(result.epsilon_lower_bound))],
        *_paired_rows(result),
        ["ε lower bound ((ε, δ), Clopper–Pearson, held-out split threshold)", format_value(float(result.epsilon_lower_bound_eps_delta))],
        *(
            []
            if result.claimed_epsilon is None  # --train: the built-in DP-SGD did not run
            else [
                [
                    f"accountant's ε of the built-in DP-SGD's σ and steps (δ = {settings.delta:g}; the claim without --claimed-epsilon)",
                    format_value(float(result.claimed_epsilon)),
                ]
            ]
        ),
        ["models with / without the canary", f"{result.num_in} / {result.num_out}"],
        ["trained now / resumed", f"{result.num_trained} / {result.num_in + result.num_out - result.num_trained}"],
        ["what the bound covers", result.scope],
    ]
    if result.initialisation is not None:
        crafted = result.initialisation
        rows.append(
            ["worst-case start (seed, SHA-256)", f"seed {crafted.seed}, {crafted.digest[:16]}…, crafted on {crafted.pool_size} records outside the audited set"]
        )
    return render_table(f"Black-box audit, results in {output}", ["quantity", "value"], rows)


def _fl(result: Any, output: Path) -> str:
    settings = result.config
    rows = [
        [
            str(run.participations) if run.sampling == "fixed" else run.sampling,
            format_value(float(run.analytical_epsilon)),
            format_value(float(run.final.estimate.epsilon)),
            format_value(float(run.final.lower_bound.epsilon)),
            format_value(float(run.all.estimate.epsilon)),
            format_value(float(run.all.lower_bound.epsilon)),
            format_value(float(run.test_accuracy)),
        ]
        for run in result.runs
    ]
    columns = ["participations", "analytical ε", "ε_est final", "ε_lo final", "ε_est all", "ε_lo all", "test accuracy"]
    return render_table(f"One-shot FL audit (δ = {settings.delta:g}, σ = {settings.training.noise_multiplier:g}), results in {output}", columns, rows)


def _panoramia(result: Any, output: Path) -> str:
    rows = [[format_value(value) for value in row.values()] for row in result.summary_rows()]
    columns = ["target", "generator", "c_lb", "{c+ε}_lb", "ε̃ (estimate)", "RM;RN ε", "O(1) ε", "claimed DP ε"]
    return render_table(f"PANORAMIA, results in {output}", columns, rows)


def _one_run(result: Any, output: Path) -> str:
    from ..audits.one_run.audit import typed_settings
    from ..integrations.observed import describe_status
    from ..report.one_run import BOUND_LABELS
    from ..report.verdict import user_claim

    def typed_values(config: Any) -> dict[str, float]:
        return {key: value for key, (_, value) in typed_settings(config).items()}

    settings = result.config
    rows = [
        [f"{BOUND_LABELS.get(name, name)} ε lower bound ({bound.kind}{'' if name == 'headline' else ', alone'})", format_value(float(bound.epsilon))]
        for name, bound in result.side_by_side().items()
    ]
    given = result.model.get("settings")  # --train: whether σ, q and the steps were observed or only typed
    accountant = result.accountant_epsilon
    own = settings.train is None and user_claim(result) is None  # privaudit's DP-SGD without a claim: its accountant's ε is the claim
    label = "claimed ε of the run (accountant" if own else "accountant's ε for the config's settings (evidence"
    rows += [
        [
            f"{label}; δ = {settings.delta:g}, σ = {settings.noise_multiplier:g})",
            "not computed: σ is below what the claim needs (finding)" if accountant is None else format_value(float(accountant)),
        ],
        *([["settings of --train", describe_status(given, typed_values(settings))]] if given else []),
        *([["your claim", f"ε = {result.claimed_epsilon:g}"]] if not own and result.claimed_epsilon is not None else []),
        [
            "flagged (bound exceeds the claim, or a finding)",
            "—" if result.claim_verdict is None and not result.findings else ("yes" if result.flagged else "no"),
        ],
        *[["finding (flags the run)", text] for text in result.findings],
        ["canaries in / out", f"{result.num_in} / {result.num_canaries - result.num_in}"],
        ["inclusion seed", str(result.inclusion_seed)],
    ]
    if result.canary_epsilon is not None and result.canary_epsilon != accountant:
        rows.insert(len(rows) - 3 - len(result.findings), ["ε of a canary at its own rate", format_value(float(result.canary_epsilon))])
    from ..audits.one_run.final_model import final_model_rows

    rows += [[label, value if isinstance(value, str) else format_value(float(value))] for label, value in final_model_rows(result)]
    seen = ", final model only" if getattr(settings, "observe", "updates") == "final" else ""
    title = f"One-run audit ({settings.threat_model}{seen}, {settings.num_steps} steps, {settings.confidence:.0%}), results in {output}"
    return render_table(title, ["quantity", "value"], rows)


def _mechanism(result: Any, output: Path) -> str:
    rows = [
        ["verdict", result.verdict],
        [f"ε lower bound ({result.confidence:.0%}, Bonferroni over {len(result.tests)} tests)", format_value(float(result.epsilon))],
        ["claim", result.claim],
        ["bound ÷ claimed ε", format_value(float(result.fraction_of_claim))],
        ["pair", result.pair.how],
        ["samples drawn", str(result.total_samples)],
    ]
    return render_table(f"Mechanism audit of {result.mechanism}, results in {output}", ["quantity", "value"], rows)


def _lm_one_run(result: Any, output: Path) -> str:
    bound, claim = result.bound, result.claimed_epsilon
    if hasattr(result, "calibrated"):
        title, last = (
            f"LM fine-tuning in one run ({result.design} canaries, {result.span} scored)",
            ["calibrated by the base model", "yes" if result.calibrated else "no"],
        )
    else:  # released synthetic text
        title, last = (
            f"Released synthetic text ({result.design} canaries, {result.config.synthetic_signal} signal)",
            ["synthetic records", str(result.num_records)],
        )
    rows = [
        [f"ε lower bound ({bound.kind}, {bound.confidence:.0%}, δ = {bound.delta:g}; best of {', '.join(bound.methods)})", format_value(float(bound.epsilon))],
        ["claimed ε", "not given (--claimed-epsilon)" if claim is None else format_value(float(claim))],
        ["flagged (bound exceeds the claim)", "—" if result.flagged is None else ("yes" if result.flagged else "no")],
        ["AUC (statistic)", format_value(float(result.auc))],
        ["TPR at 1% FPR (statistic)", format_value(float(result.tpr_at_1pct_fpr))],
        ["canaries in / out", f"{result.num_in} / {result.num_canaries - result.num_in}"],
        ["copies of each included canary (a record's ε by group privacy when > 1)", str(result.canary_copies)],
        last,
    ]
    if result.family_test is not None:  # the headline: the claim's family, beside the generic bound below
        family = result.family_test
        rows.insert(0, [f"ε lower bound against the claim's family (refuted: {family.refuted})", format_value(float(family.epsilon))])
        rows[1][0] = "generic " + rows[1][0]
    return render_table(f"{title}, results in {output}", ["quantity", "value"], rows)


def _above_all(attack: Any) -> str:
    """The members an attack ranks above every non-member (its TPR at FPR 0), as a count and a rate."""
    tpr = attack.tpr_at(0.0)
    if tpr is None:
        return "n/a"
    found = int(round(float(tpr) * attack.num_members))
    return f"{found} of {attack.num_members} above every non-member ({format_value(float(tpr))})"


def _synthetic_data(result: Any, output: Path) -> str:
    from ..audits.synthetic_data.decision import dcr_explanation
    from ..audits.synthetic_data.kinds import kinds_note
    from ..report.mia import tpr_cell
    from ..report.synthetic_data import dcr_gap_note
    from ..stats.verdict import describe_verdict

    rows = [
        [f"{s.attack}: TPR at FPR 0, at 1% FPR (AUC)", f"{_above_all(s)}; {tpr_cell(s.tpr_at(0.01), 0.01, s.num_non_members)} ({format_value(float(s.auc))})"]
        for s in result.attacks
    ]
    rows.append(
        ["DCR holdout test", f"{'passes' if result.dcr.passes else 'fails'} (overfitting protection {format_value(float(result.dcr.overfitting_protection))})"]
    )
    if result.dcr.sdmetrics_overfitting_protection is not None:  # sdmetrics installed: its own scores, beside privaudit's
        rows.append(
            [
                "sdmetrics' DCROverfittingProtection / DCRBaselineProtection",
                f"{format_value(float(result.dcr.sdmetrics_overfitting_protection))} / {format_value(float(result.dcr.sdmetrics_baseline_protection))}",
            ]
        )
    if result.bound is not None:
        b = result.bound
        rows.insert(0, [f"ε lower bound per release ({b.bound.confidence:.0%}, δ = {b.bound.delta:g})", format_value(float(b.bound.epsilon))])
        rows.insert(1, ["ceiling (every guess right)", format_value(float(b.ceiling))])
        rows.insert(2, ["verdict (per release)", describe_verdict(b.verdict)])
        if result.family_test is not None:  # the headline: the claim's family, beside the generic bound above
            family = result.family_test
            rows.insert(0, [f"ε lower bound per release against the claim's family (refuted: {family.refuted})", format_value(float(family.epsilon))])
            rows.insert(1, ["verdict in that family (per release)", describe_verdict(family.verdict)])
    rows.append(["most exposed (ranked by the robust DCR)", ", ".join(r.record_id for r in result.most_exposed[:5])])
    note = kinds_note(result.conventions)
    table = render_table(f"Synthetic data ({result.source}), results in {output}", ["quantity", "value"], rows) + "\n" + dcr_gap_note(result)
    if result.decision is not None:  # the steward's decision opens the console, as it opens the report
        table = "Decision: " + result.decision.sentence() + "\n" + dcr_explanation(result.dcr, result.num_synthetic, result.decision.num_exposed) + "\n" + table
    return table + ("\n" + note if note else "")


_TABLES = {
    "secret-sharer": _secret_sharer,
    "dpsgd": _dpsgd,
    "blackbox": _blackbox,
    "fl": _fl,
    "panoramia": _panoramia,
    "one-run": _one_run,
    "mechanism": _mechanism,
    "lm-one-run": _lm_one_run,
    "synthetic-text": _lm_one_run,
    "synthetic-data": _synthetic_data,
}


def verdict_table(result: Any) -> str:
    """The claim's verdict and the ceiling beside the bound ("" for a result that bounds nothing)."""
    verdict, ceiling = getattr(result, "claim_verdict", None), getattr(result, "ceiling", None)
    if verdict is None and ceiling is None:
        return ""
    rows: list[list[str]] = []
    if verdict is None:
        rows.append(["claim", "no claim given (--claimed-epsilon): no verdict"])
    else:
        claim = verdict.claim
        rows += [
            ["claim", f"ε = {claim.epsilon:g}, δ = {claim.delta:g} ({claim.source})"],
            ["quantity of bound and claim", verdict.quantity + (f" ({verdict.conversion})" if verdict.conversion else "")],
            ["bound / claimed ε", format_value(float(verdict.ratio))],
            ["flagged (bound exceeds the claim)", "yes" if verdict.flagged else "no"],
        ]
    if getattr(result, "findings", ()):  # evidence that contradicts the claim flags the run whatever the bound
        rows.append(["flagged by a finding", f"yes: {len(result.findings)} finding(s) above, evidence that contradicts the claim"])
    if ceiling is not None:
        rows.append(["ceiling (a perfect attack on this design)", format_value(float(ceiling.value))])
        rows.append(["bound at its ceiling (within 10%)", f"yes: {ceiling.raise_with} would raise it" if ceiling.at_ceiling else "no"])
    return render_table("Verdict", ["quantity", "value"], rows)


def _reused(result: Any, output: Path) -> str:
    """How many finished runs a resumable audit took from ``output`` instead of training them, and why stored runs ran again ("" when neither)."""
    trained = getattr(result, "num_trained", None)
    if trained is None:
        return ""
    total = result.num_runs  # every resumable result says how many runs it rests on
    reused = total - trained
    lines = [f"reused {reused} of {total} finished runs from {output / 'runs'} (same settings, input contents and code)"] if reused > 0 else []
    note = getattr(result, "resume_note", "")  # why stored runs ran again: what their key says changed
    if note:
        lines.append(f"{note}; {trained} of {total} runs made now")
    return "".join(line + "\n" for line in lines)


def table_for(run: Any, output: Path) -> str:
    """The printed table of an audit run (the headline alone for a family without its own table), then the verdict's."""
    if run.audit in _TABLES:
        text = _TABLES[run.audit](run.result, output)
    else:
        headline = run.result.headline()
        text = render_table(
            f"{run.audit}, results in {output}", ["quantity", "value"], [[headline.label, format_value(headline.value)], ["kind", headline.kind]]
        )
    reused = _reused(run.result, output)
    if reused and not text.endswith("\n"):  # a family's table that ends in a sentence: the resume lines start their own
        text += "\n"
    return text + reused + verdict_table(run.result)
