"""From a ``results.json`` (and the folder of its plots) to a :class:`~privaudit.report.html.ReportSection`.

One adapter per audit family, kept in :data:`ADAPTERS` and looked up by the
``audit`` field that every results file carries (:mod:`privaudit.schemas`).
New families plug in with :func:`register_adapter`; a family without an
adapter gets a generic section built from its ``epsilon`` and ``kind``
fields. The history store (:mod:`privaudit.history`) records the same
headline through :func:`section_for`, so the report and the history never
disagree on what an audit's number is. A registered family's adapter reads
its typed result (``result_type.validate``); a file that lacks some of the
result's fields gets the generic section, as a family without an adapter.

>>> data = {"audit": "new-family", "result_type": "R", "epsilon": 0.8, "kind": "lower bound", "confidence": 0.95, "config": {"seed": 3}}
>>> section = section_for(data)
>>> section.value, section.kind, section.seeds
(0.8, 'lower bound', {'config.seed': 3})
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .html import KINDS, ReportSection, plots_in
from .provenance import provenance

__all__ = ["ADAPTERS", "FAMILY_OF_RESULT_TYPE", "family_of", "load_results", "register_adapter", "section_for"]

Adapter = Callable[[dict, Path | None], ReportSection]
ADAPTERS: dict[str, Adapter] = {}


def register_adapter(audit: str, adapter: Adapter) -> Adapter:
    """Make ``adapter(data, directory)`` build the sections of results with ``data["audit"] == audit``."""
    ADAPTERS[audit] = adapter
    return adapter


def _number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _plots(directory: Path | None, captions: dict[str, str]) -> tuple:
    """Only real PNG files inside the run's own folder (never a symlink, an absolute or a ``..`` path)."""
    return plots_in(directory, captions)


def _secret_sharer(data: dict, directory: Path | None) -> ReportSection:
    from ..audits.secret_sharer import SecretSharerResult
    from ..audits.secret_sharer_own import OwnModelSecretSharerResult

    own = data.get("result_type") == OwnModelSecretSharerResult.__name__  # phase two on the user's model
    result = _typed(OwnModelSecretSharerResult if own else SecretSharerResult, data)
    if result is None:
        return _generic(data, directory)
    headline = result.headline()
    # the result keeps one dict per canary and the bound and baselines as dicts: their keys are the result's fields
    bound, baselines = result.epsilon_bound, result.baselines
    column = "exact" if any(canary["exposure_exact"] is not None for canary in result.canaries) else "sampled"
    extracted = [canary["text"] for canary in result.canaries if canary.get("extracted")]
    details = [(f"canary '{c['text']}' inserted {c['repetitions']}×: exposure ({column})", c.get(f"exposure_{column}")) for c in result.canaries]
    details += [
        (f"ε lower bound from exposures ({bound.get('confidence', 0.95):.0%}, group of {bound.get('duplicates', 1)})", bound.get("epsilon")),
        ("largest possible exposure, log2 |R|", baselines.get("max_exposure")),
        ("exposure no unmemorised canary reaches (95%, all canaries)", baselines.get("exact_upper_95_all_canaries")),
        ("canaries extracted by shortest-path search", ", ".join(extracted) or "none"),
    ]
    flag = None
    if headline.flag:
        upper = baselines["exact_upper_95_all_canaries"]
        flag = f"Memorisation: a canary's exposure ({headline.value:.3g} bits) exceeds what random guessing reaches with 95% probability ({upper:.3g} bits)."
    return ReportSection(
        title="Secret Sharer: canary exposure",
        audit="secret-sharer",
        value=headline.value,
        label=headline.label,
        kind=headline.kind,
        meaning=(
            "Exposure is log2 |R| minus log2 of the canary's rank among all candidates of its format: a canary with exposure e "
            "is as likely under the model as the top 2^-e of the candidates. High exposure means the model memorised the "
            "inserted secret and an attacker could guess it in about 2^(log2|R| - e) tries."
        ),
        not_meaning=(
            "Exposure is a statistic of these canaries and this model, not an ε. Low exposure does not prove privacy for "
            "other data; the ε lower bound beside it holds for groups of the largest repetition count, not for one example."
        ),
        threat_model="Black-box query access to the trained language model's likelihoods; canaries inserted into the training text.",
        confidence=None,
        flag=flag,
        details=tuple(details),
        plots=_plots(
            directory,
            {
                "exposure_vs_insertions.png": "Exposure of each canary against its number of insertions",
                "perplexity_histogram.png": "Log-perplexity of canaries and references, with the skew-normal fit",
                "dp_comparison.png": "Exposure with and without DP-SGD",
            },
        ),
        **provenance(data),
    )


def _dpsgd(data: dict, directory: Path | None) -> ReportSection:
    from ..audits.dpsgd import DPSGDAuditResult

    result = _typed(DPSGDAuditResult, data)
    if result is None:
        return _generic(data, directory)
    headline, claimed = result.headline(), result.claimed_step_epsilon
    details: list[tuple[str, Any]] = [("claimed per-step ε", claimed)]
    details += [(f"per-step bound: {name} ({bound.kind})", bound.epsilon) for name, bound in result.step_bounds.items()]
    details += [
        ("end-to-end ε (estimate, §5.5 composition)", result.end_to_end.epsilon),
        ("claimed end-to-end ε", result.claimed_end_to_end_epsilon),
        ("canary / other observations", f"{result.num_in} / {result.num_out}"),
        ("injected bug", result.config.bug),
        ("test accuracy", result.test_accuracy),
    ]
    flag = None
    if result.flagged:
        flag = f"Claim rejected: the per-step ε lower bound exceeds the claimed {claimed:.3g}; the implementation is not as private as claimed."
    return ReportSection(
        title=f"DP-SGD white-box audit (bug: {result.config.bug})",
        audit="dpsgd",
        value=headline.value,
        label=headline.label,
        kind=headline.kind,
        confidence=headline.confidence,
        valid=headline.valid,
        meaning=(
            "With the stated confidence, one step of this training run is no better than ε-DP at the reported δ: "
            "the canaries' noisy gradients were told apart this well. A bound above the claimed ε proves the claim false."
        ),
        not_meaning=(
            "A bound below the claim does not prove the claim: the audit only sees what its canaries reveal. "
            "The end-to-end figure composes the per-step bound and is an estimate, not a bound."
        ),
        threat_model=result.threat_model,
        flag=flag,
        details=tuple(details),
        plots=_plots(
            directory,
            {
                "observations.png": "Canary observations: in (canary present) vs out, with fitted Gaussians",
                "tradeoff.png": "Empirical trade-off curve against the claimed GDP and (ε, δ) curves",
                "bound_vs_observations.png": "The bound as observations accumulate",
            },
        ),
        **provenance(data),
    )


def _blackbox(data: dict, directory: Path | None) -> ReportSection:
    from ..audits.blackbox import BlackBoxResult

    result = _typed(BlackBoxResult, data)
    if result is None:
        return _generic(data, directory)
    headline = result.headline()
    return ReportSection(
        title="Black-box DP-SGD audit (many models)",
        audit="blackbox",
        value=headline.value,
        label=headline.label,
        kind=headline.kind,
        confidence=headline.confidence,
        valid=headline.valid,
        meaning="With the stated confidence, training is no better than ε-DP: models trained with and without the canary were told apart this well from their final losses.",
        not_meaning="A bound far below the claimed ε is expected for a final-model, black-box attacker; it does not show the claim is tight or loose.",
        threat_model=result.threat_model,
        details=(
            ("claimed ε (accountant)", result.claimed_epsilon),
            ("(ε, δ) Clopper–Pearson bound", result.epsilon_lower_bound_eps_delta),
            ("models with / without the canary", f"{result.num_in} / {result.num_out}"),
            ("δ", result.delta),
        ),
        **provenance(data),
    )


def _fl(data: dict, directory: Path | None) -> ReportSection:
    from ..audits.fl import FLAuditResult

    result = _typed(FLAuditResult, data)
    if result is None:
        return _generic(data, directory)
    headline = result.headline()
    details: list[tuple[str, Any]] = []
    for run in result.runs:
        label = f"{run.participations} participation(s)" if run.sampling == "fixed" else run.sampling
        details += [
            (f"{label}: analytical ε (accountant)", run.analytical_epsilon),
            (
                f"{label}: final model ε_est (estimate) / ε_lo (lower bound)",
                f"{_text_number(run.final.estimate.epsilon)} / {_text_number(run.final.lower_bound.epsilon)}",
            ),
            (
                f"{label}: all iterates ε_est (estimate) / ε_lo (lower bound)",
                f"{_text_number(run.all.estimate.epsilon)} / {_text_number(run.all.lower_bound.epsilon)}",
            ),
        ]
    return ReportSection(
        title="One-shot FL audit (DP-FedAvg with canary clients)",
        audit="fl",
        value=headline.value,
        label=headline.label,
        kind=headline.kind,
        confidence=headline.confidence,
        meaning=(
            "One training run with random canary clients: the canaries' cosines with the final model update are compared "
            "with those of canaries never inserted, and the ε of two Gaussians that far apart is the estimate. The lower "
            f"bounds ε_lo beside it hold at {result.config.confidence:.0%} confidence."
        ),
        not_meaning=(
            "ε_est is an estimate, not a bound: it assumes the cosines are Gaussian (checked by Anderson–Darling) and "
            "can fall below the true ε. It measures random canary clients, not the most vulnerable real client."
        ),
        threat_model="; ".join(result.threat_models.values()) or "final model / all iterates",
        details=tuple(details),
        plots=_plots(
            directory,
            {
                "cosines_final.png": "Canary cosines with the final model update",
                "cosines_all.png": "Largest canary cosine over all rounds, with the unobserved canaries",
                "epsilon_final.png": "ε against participations, final model",
                "epsilon_all.png": "ε against participations, all iterates",
            },
        ),
        **provenance(data),
    )


def _panoramia(data: dict, directory: Path | None) -> ReportSection:
    from ..audits.registry import get_audit
    from .panoramia import figure_name

    result = _typed(get_audit("panoramia").result_type, data)
    if result is None:
        return _generic(data, directory)
    details = []
    for row in result.summary_rows():
        target = row["target"]
        details += [(f"{target}: {_SUMMARY_LABELS[key]}", value) for key, value in row.items() if key != "target" and value is not None]
    figures = {figure_name(name): f"PANORAMIA on {name}: precision against recall of the baseline and the MIA" for name in result.targets}
    confidence = next(iter(result.targets.values())).audit.settings.confidence
    return ReportSection(
        title="PANORAMIA: membership inference against generated non-members",
        audit="panoramia",
        value=None,
        label="",
        kind="estimate",
        confidence=None,
        meaning=(
            "A membership-inference attack on the target model is compared with a baseline that does not see the model, "
            "both telling real members from synthetic non-members. c_lb and {c+ε}_lb are lower bounds at "
            f"{confidence:.0%} confidence; their difference ε̃ estimates the privacy loss the model adds."
        ),
        not_meaning=(
            "ε̃ is an estimate and is not a lower bound on ε: it is conditional on the generator's closeness c, which is "
            "itself only bounded from below. No retraining is involved, so it says nothing about worst-case data."
        ),
        threat_model="Black-box access to the target's losses; the auditor holds part of the training data and trains a generator on it.",
        details=tuple(details),
        plots=_plots(directory, figures),
        **provenance(data),
    )


_SUMMARY_LABELS = {
    "generator": "generator",
    "c_lb": "c_lb (lower bound)",
    "c_plus_epsilon_lb": "{c+eps}_lb (lower bound)",
    "epsilon_tilde": "epsilon_tilde (estimate)",
    "rm_rn_epsilon": "RM;RN epsilon (lower bound)",
    "one_run_epsilon": "O(1) epsilon (lower bound)",
    "claimed_dp_epsilon": "claimed DP epsilon",
}


def _text_number(value: float) -> str:
    return f"{value:.4g}"


def _generic(data: dict, directory: Path | None) -> ReportSection:
    kind = str(data.get("kind")) if data.get("kind") in KINDS else "estimate"
    return ReportSection(
        title=f"{data.get('audit', 'audit')} ({data.get('result_type', 'result')})",
        audit=family_of(data),
        value=_number(data.get("epsilon")),
        label="ε",
        kind=kind,
        confidence=_number(data.get("confidence")) if kind != "statistic" else None,
        valid=bool(data.get("valid", True)),
        meaning="See the audit's guide for how to read this number.",
        not_meaning="Unless labelled a lower bound, the number carries no confidence guarantee.",
        threat_model=str(data.get("threat_model", "not recorded")),
        plots=_plots(directory, {path.name: path.stem.replace("_", " ") for path in sorted(Path(directory).glob("*.png"))} if directory else {}),
        **provenance(data),
    )


register_adapter("secret-sharer", _secret_sharer)
register_adapter("dpsgd", _dpsgd)
register_adapter("blackbox", _blackbox)
register_adapter("fl", _fl)
register_adapter("panoramia", _panoramia)


def _extraction(data: dict, directory: Path | None) -> ReportSection:
    from ..audits.extract import ExtractionResult

    result = _typed(ExtractionResult, data)
    if result is None:
        return _generic(data, directory)
    headline = result.headline()
    return ReportSection(
        title="Secret Sharer: extraction by shortest-path search",
        audit="extraction",
        value=headline.value,
        label=headline.label,
        kind=headline.kind,
        confidence=None,
        meaning=(
            "The model was searched for its most likely completion of the canary format, expanding the candidate tree "
            "cheapest first; the number of model queries it took is compared with brute force over the whole space."
        ),
        not_meaning="Failing to extract within the budget does not show that the canaries are safe: a larger budget or a better search may succeed.",
        threat_model=result.threat_model,
        flag=f"Extracted an inserted canary: {result.extracted_text!r} (inserted {result.repetitions}×)." if result.is_inserted_canary else None,
        details=(
            ("extracted text", result.extracted_text),
            ("an inserted canary", "yes" if result.is_inserted_canary else "no"),
            ("log-perplexity (bits)", result.log_perplexity_bits),
            ("model queries / candidate space", f"{result.queries} / {result.space_size}"),
        ),
        plots=_plots(directory, {"queries.png": "Model queries of shortest-path search against brute force"}),
        **provenance(data),
    )


register_adapter("extraction", _extraction)


def _scores(data: dict, directory: Path | None) -> ReportSection:
    from ..audits.scores import ScoresResult

    result = _typed(ScoresResult, data)
    if result is None:
        return _generic(data, directory)
    headline = result.headline()
    details = [("AUC (in-sample statistic)", result.auc)]
    details += [(f"TPR at FPR {level}", rate) for level, rate in result.tpr_at_fpr.items()]
    if result.bound_eps_delta is not None:
        details.append((f"(ε, δ) lower bound ({result.bound_eps_delta.kind})", result.bound_eps_delta.epsilon))
    if result.one_run is not None:
        details.append((f"one-run lower bound ({result.one_run.kind}, method {result.one_run.method})", result.one_run.epsilon))
    if result.claimed_epsilon is not None:
        details.append(("claimed ε", result.claimed_epsilon))
    details.append(("scores in / out", f"{result.num_in} / {result.num_out}"))
    tradeoff = result.tradeoff or {}
    if tradeoff.get("note"):
        details.append(("trade-off figure compares the attack with", tradeoff["note"]))
    against = "the claimed ε" if tradeoff.get("against", "claimed epsilon") == "claimed epsilon" else "the curve of the bound's own ε"
    claim = result.claimed_epsilon
    return ReportSection(
        title="Membership-inference scores: ε lower bounds",
        audit="scores",
        value=headline.value,
        label=headline.label,
        kind=headline.kind,
        confidence=headline.confidence,
        valid=headline.valid,
        meaning="With the stated confidence, the mechanism that produced these scores is no better than ε-DP: its members and non-members were told apart this well.",
        not_meaning="The bound is only as strong as the attack behind the scores; a small bound does not show the model is private.",
        threat_model=result.threat_model,
        flag=f"Claim rejected: the lower bound exceeds the claimed ε = {claim:g}." if headline.flag else None,
        details=tuple(details),
        plots=_plots(directory, {"roc.png": "ROC on log-log axes", "scores.png": "Score histograms", "tradeoff.png": f"Trade-off curve against {against}"}),
        **provenance(data),
    )


register_adapter("scores", _scores)


def _exposure(data: dict, directory: Path | None) -> ReportSection:
    from ..audits.exposure import ExposureAuditResult

    result = _typed(ExposureAuditResult, data)
    if result is None:
        return _generic(data, directory)
    headline = result.headline()
    baselines, bound = result.baselines, result.epsilon_bound
    details: list[tuple[str, Any]] = []
    for canary in result.canaries:
        name = f"canary {canary.index}" if canary.text is None else f"canary {canary.index} '{canary.text}'"
        inserted = "" if canary.insertions is None else f", inserted {canary.insertions}×"
        extrapolated = "" if canary.exposure_extrapolated is None else f" (extrapolated, estimate: {canary.exposure_extrapolated:.4g})"
        details.append((f"{name}{inserted}: exposure (rank {canary.rank})", f"{canary.exposure:.4g}{extrapolated}"))
    if bound is not None:
        details.append((f"ε lower bound from exposures ({bound['confidence']:.0%}, group of {bound['duplicates']})", bound["epsilon"]))
        details.append(("ε estimate from exposures (no confidence)", bound["epsilon_estimate"]))
    else:
        details.append(("ε lower bound from exposures", "not computed: the insertions were not given (--insertions or --insertions-col)"))
    details += [
        ("largest possible exposure, log2 n", baselines["max_exposure"]),
        ("random guessing: mean / median / 75th percentile", f"{baselines['mean']:.4g} / {baselines['median']:.4g} / {baselines['quantile_75']:.4g}"),
        ("exposure no unmemorised canary reaches (95%, all canaries)", baselines["sampled_upper_95_all_canaries"]),
        ("references", result.num_references),
    ]
    if result.extrapolation is not None:
        details.append(("skew-normal fit: Kolmogorov–Smirnov statistic (optimistic: fitted on the same data)", result.extrapolation["ks_statistic"]))
    flag = None
    if headline.flag:
        flag = (
            f"Memorisation: a canary's exposure ({headline.value:.3g} bits) exceeds what random guessing reaches with 95% "
            f"probability over all canaries ({baselines['sampled_upper_95_all_canaries']:.3g} bits)."
        )
    return ReportSection(
        title="Canary exposure (your model's losses)",
        audit="exposure",
        value=headline.value,
        label=headline.label,
        kind=headline.kind,
        confidence=None,
        meaning=(
            "Exposure is log2 n minus log2 of the canary's rank among n references that were never inserted: a canary with "
            "exposure e is as likely under the model as the top 2^-e of the references. Far above the random-guessing "
            "baselines, the model memorised the inserted canary."
        ),
        not_meaning=(
            "Exposure is a statistic of these canaries and this model, not an ε; sampled exposure cannot exceed log2 n. "
            "The ε lower bound beside it holds for a group of the largest insertion count, not for one example."
        ),
        threat_model=result.threat_model,
        flag=flag,
        details=tuple(details),
        plots=_plots(directory, {"exposure.png": "Exposure of each canary against the random-guessing baselines"}),
        **provenance(data),
    )


register_adapter("exposure", _exposure)


def _one_run(data: dict, directory: Path | None) -> ReportSection:
    from ..audits.one_run import OneRunAuditResult
    from .one_run import BOUND_LABELS

    result = _typed(OneRunAuditResult, data)
    if result is None:
        return _generic(data, directory)
    headline, config = result.headline(), result.config
    details: list[tuple[str, Any]] = [
        (f"{BOUND_LABELS.get(name, name)} ({bound.kind}, {bound.confidence:.0%} alone)", bound.epsilon)
        for name, bound in result.side_by_side().items()
        if name != "headline"
    ]
    details += [
        ("claimed ε of the run (accountant)", result.claimed_epsilon),
        ("canaries in / out", f"{result.num_in} / {result.num_canaries - result.num_in}"),
        ("score", result.score),
        ("inclusion draw", f"probability {config.inclusion_prob:g}, seed {result.inclusion_seed}"),
        ("DP-SGD", f"σ = {config.noise_multiplier:g}, q = {config.sampling_rate:g}, {config.num_steps} steps, δ = {config.delta:g}"),
        ("test accuracy", result.test_accuracy),
    ]
    if result.canary_epsilon != result.claimed_epsilon:
        details.insert(len(details) - 5, ("ε of a canary at its own rate (accountant)", result.canary_epsilon))
    flag = None
    if headline.flag:
        flag = f"Claim rejected: the one-run lower bound exceeds the ε the accountant gives the canaries ({result.canary_epsilon:.3g})."
    return ReportSection(
        title=f"One-run audit of DP-SGD ({config.threat_model})",
        audit="one-run",
        value=headline.value,
        label=headline.label,
        kind=headline.kind,
        confidence=headline.confidence,
        valid=headline.valid,
        meaning=(
            "One training run with canaries each kept in or out by a recorded coin: with the stated confidence the whole "
            "training run is no better than ε-DP, end to end, for an example like the canaries. The headline is the best of "
            "the methods fixed in advance, corrected for the choice."
        ),
        not_meaning=(
            "A bound below the claim does not prove the claim: one run with m canaries cannot reach the true ε when it is "
            "large. Each side-by-side bound holds alone; only the headline may be read as the best of them."
        ),
        threat_model=result.threat_model,
        flag=flag,
        details=tuple(details),
        plots=_plots(
            directory,
            {
                "observations.png": "Canary scores: included (in) against excluded (out), with fitted Gaussians",
                "bounds.png": "Every one-run ε lower bound beside the claimed ε",
            },
        ),
        **provenance(data),
    )


register_adapter("one-run", _one_run)

# results written before the ``audit`` field existed, or by writers that do not stamp it
FAMILY_OF_RESULT_TYPE = {
    "SecretSharerResult": "secret-sharer",
    "DPSGDAuditResult": "dpsgd",
    "BlackBoxResult": "blackbox",
    "FLAuditResult": "fl",
    "PanoramiaResults": "panoramia",
    "ExtractionResult": "extraction",
    "ScoresResult": "scores",
    "ExposureAuditResult": "exposure",
    "OneRunAuditResult": "one-run",
}


def family_of(data: dict) -> str:
    """The audit family of a results dict: its ``audit`` field, else inferred from ``result_type``.

    >>> family_of({"result_type": "FLAuditResult"})
    'fl'
    """
    return str(data.get("audit") or FAMILY_OF_RESULT_TYPE.get(str(data.get("result_type")), "unknown"))


def _typed(result_type, data: dict):
    """The typed result of a results dict; None for a partial file (fields missing); ValueError for a field of the wrong type."""
    from pydantic import ValidationError

    try:
        return result_type.validate(data)
    except ValidationError as error:
        problems = error.errors(include_url=False)
        tolerated = ("missing", "unexpected_keyword_argument")  # results may lack fields, or carry ones added within schema v1
        if all(problem["type"] in tolerated for problem in problems):
            return None  # a partial or older results file: the family's section reads what it has
        problem = next(problem for problem in problems if problem["type"] not in tolerated)
        where = ".".join(str(part) for part in problem["loc"])
        raise ValueError(f"`run`: results field `{where}`: {problem['msg']}") from None


def headline_of(data: dict):
    """The headline of a registered family's results dict, read through its typed result; None for other results."""
    from ..audits.registry import AUDITS, get_audit

    family = family_of(data)
    if family not in AUDITS:
        return None
    result = _typed(get_audit(family).result_type, data)
    return None if result is None else result.headline()


def section_for(data: dict, directory=None) -> ReportSection:
    """The report section of one results dict; ``directory`` holds its plots (None: no plots).

    The headline (value, label, kind, confidence, valid) is the typed result's
    :meth:`~privaudit.audits.base.AuditResult.headline`, so the report, the
    demo and the history read the same number.
    """
    import dataclasses

    if not isinstance(data, dict):
        raise ValueError(f"`data` must be a results dict, got {type(data).__name__}")
    adapter = ADAPTERS.get(family_of(data), _generic)
    headline = headline_of(data)  # refuses a field of the wrong type, naming it
    try:
        section = adapter(data, None if directory is None else Path(directory))
    except (AttributeError, TypeError, KeyError) as error:  # a partial file whose fields have the wrong JSON types
        raise ValueError(f"`run`: a results field has the wrong type for a {family_of(data)} audit ({type(error).__name__}: {error})") from None
    if headline is None:
        return section
    return dataclasses.replace(section, value=headline.value, label=headline.label, kind=headline.kind, confidence=headline.confidence, valid=headline.valid)


def load_results(directory) -> dict:
    """The checked ``results.json`` of a run directory (ValueError naming the file if it is unusable).

    >>> import tempfile
    >>> load_results(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    ValueError: `run` ... has no results.json
    """
    from .._core.files import read_json
    from ..schemas import check_results

    path = Path(directory) / "results.json"
    if not path.is_file():
        raise ValueError(f"`run` {str(directory)!r} has no results.json")
    data = read_json(path, "run")
    try:
        return check_results(data, source="run")
    except ValueError as error:
        raise ValueError(f"{error} (in {str(path)!r})") from None
