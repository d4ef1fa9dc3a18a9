"""An audit of attack scores the user computed: metrics, ε lower bounds and, for randomised membership, the one-run bound.

This is what ``privaudit bound`` runs. The scores come from any attack on
any model; privaudit never sees the model, so the threat model is the one
under which the user computed them.

Everything the figures draw is computed here, not in the plotting code: the
ROC points and the trade-off curves (:class:`ScoresCurves`, in the run's
observations). The trade-off figure compares the attack with the claimed ε
when one is given, else with the curve of the bound's own ε (and, for GDP,
its μ): the privacy the scores prove the mechanism lacks at best.

Score direction (:func:`score_direction`) is a convention of the user's
data: privaudit's default is that a higher score means member, and losses
(lower = member) must say so (``direction="lower"``, ``--lower-is-member``),
which negates the scores before anything is computed. Scores whose name says
they are losses are refused without a direction. The default is safe
because the direction is fixed before the scores are seen: either direction
gives a valid lower bound, the wrong one a weak bound, never an invalid one.
Choosing it on the scores would not be, so a run whose AUC is clearly below
½ (its upper confidence limit, ``auc_upper``, below ½) only warns
(:func:`direction_warning`).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> run = audit_scores(rng.normal(1, 1, 2000), rng.normal(0, 1, 2000), delta=1e-5)
>>> run.result.headline().kind, round(run.result.auc, 2)
('lower bound', 0.76)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..._core.conventions import Convention, default, explicit
from ..._core.seeding import check_seed
from ..._core.validation import as_scores, check_choice, check_count, check_positive
from ...stats.auc import gdp_auc_lower_bound
from ...stats.bounds import EpsilonLowerBound, epsilon_lower_bound
from ...stats.claim_conversion import conversion_text, per_step_claim
from ...stats.conversions import gdp_mu
from ...stats.metrics import auc_null_margin, roc_auc, roc_curve, tpr_at_fpr
from ...stats.one_run_combined import OneRunLowerBound, one_run_lower_bound
from ...stats.thresholds import Bonferroni
from ...stats.tradeoff import tradeoff_eps_delta, tradeoff_gdp
from ...stats.verdict import QUANTITIES, Claim
from ..base import AuditResult, AuditRun, Headline
from ..verdicts import auc_warnings, bound_verdict, check_claim_fields, claim_of

__all__ = [
    "FPR_LEVELS",
    "HIGHER",
    "LOWER",
    "LOSS_WORDS",
    "ScoresCurves",
    "ScoresResult",
    "audit_scores",
    "direction_warning",
    "names_a_loss",
    "score_direction",
    "scores_curves",
]

FPR_LEVELS = (0.001, 0.01, 0.1)
TRADEOFF_GRID = 1001  # false-positive rates at which the reference trade-off curves are evaluated
HIGHER, LOWER = "higher is member", "lower is member"
#: Words that name a loss (lower = member) in a column or file name: "loss", "val_nll", "log-perplexity", "crossEntropy".
LOSS_WORDS = frozenset(
    {"loss", "losses", "nll", "perplexity", "perplexities", "ppl", "logppl", "logperplexity", "xent", "ce", "entropy", "crossentropy", "bpc", "bpd"}
)


def names_a_loss(name: str) -> bool:
    """Whether ``name`` (a column or a file name) says its numbers are losses: a word of :data:`LOSS_WORDS`, in any case or joining.

    >>> [names_a_loss(name) for name in ("val_loss", "crossEntropy", "log-perplexity", "NLL.csv", "score", "glossary", "logit")]
    [True, True, True, True, False, False, False]
    """
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(name)).lower()
    words = re.findall(r"[a-z]+", spaced)
    joined = "".join(words)
    return any(word in LOSS_WORDS for word in words) or any(compound in joined for compound in ("crossentropy", "perplexity", "negloglik"))


def score_direction(
    direction: str | None = None, *, names: Mapping[str, str] | None = None, options: tuple[str, str] = ("direction='higher'", "direction='lower'")
) -> Convention:
    """The score-direction convention: ``direction`` "higher" or "lower" (is member) given, or the default, higher.

    ``names`` maps an option to the column or file name it gave; one that
    names a loss (:func:`names_a_loss`) is refused without a ``direction``,
    in a message naming ``options`` (the higher and the lower option).

    >>> score_direction("lower", options=("--higher-is-member", "--lower-is-member")).describe()
    'score direction: lower is member (explicit: --lower-is-member)'
    >>> score_direction(names={"--score-col": "loss"}, options=("--higher-is-member", "--lower-is-member"))
    Traceback (most recent call last):
    ...
    ValueError: `--score-col` 'loss' names a loss, where a lower score usually means member: give `--lower-is-member` or `--higher-is-member`
    """
    if direction is not None:
        check_choice(direction, "direction", ("higher", "lower"))
        return explicit("score direction", HIGHER if direction == "higher" else LOWER, options[direction == "lower"])
    for option, name in (names or {}).items():
        if names_a_loss(name):
            raise ValueError(f"`{option}` {name!r} names a loss, where a lower score usually means member: give `{options[1]}` or `{options[0]}`")
    why = (
        "privaudit's convention; fixed before the scores are seen, either direction gives a valid lower bound "
        f"(the wrong one a weak bound); give {options[1]} for losses"
    )
    return default("score direction", HIGHER, why)


def _negated_threshold(threshold: Any) -> Any:
    """A threshold given on the scale of the scores, moved to the negated scores: members are those at or below it."""
    if isinstance(threshold, (int, float, np.number)) and not isinstance(threshold, bool):
        return -float(threshold)
    if isinstance(threshold, Bonferroni) and threshold.thresholds is not None:
        return dataclasses.replace(threshold, thresholds=tuple(-float(value) for value in threshold.thresholds))
    return threshold


@dataclasses.dataclass(frozen=True, eq=False)
class ScoresCurves:
    """The curves the figures draw, computed by the audit so that plotting holds no statistics.

    ``roc_fpr``/``roc_tpr``: the empirical ROC (one point per distinct score).
    ``alpha``: a grid of false-positive rates; ``references``: label -> the
    false-negative rate of a reference trade-off curve on ``alpha``.
    """

    roc_fpr: np.ndarray
    roc_tpr: np.ndarray
    alpha: np.ndarray
    references: dict[str, np.ndarray]


@dataclasses.dataclass(frozen=True)
class ScoresResult(AuditResult):
    """Attack metrics and ε bounds from membership scores, oriented so that higher = member.

    With the direction "lower is member" (``conventions``) every number,
    the bound's threshold included, is of the negated scores. ``auc_upper``
    is the one-sided upper confidence limit of the AUC at the bound's
    confidence (None with fewer than 2 scores a side).
    """

    source: dict[str, str]
    num_in: int
    num_out: int
    auc: float
    tpr_at_fpr: dict[str, float]
    bound: EpsilonLowerBound
    bound_eps_delta: EpsilonLowerBound | None
    claimed_epsilon: float | None
    one_run: OneRunLowerBound | None
    seed: int
    threat_model: str = "the user's own attack: whatever access produced the scores"
    # what the trade-off figure compares the attack with: {"against", "epsilon", "delta", "curves", "note"}
    tradeoff: dict[str, Any] | None = None
    auc_upper: float | None = None

    @property
    def direction(self) -> str:
        """The score direction the numbers rest on: "higher is member" or "lower is member"."""
        return next((item.value for item in self.conventions if item.name == "score direction"), HIGHER)

    def headline(self) -> Headline:
        flag = None if self.claim_verdict is None else self.claim_verdict.flagged
        return Headline(
            value=self.bound.epsilon,
            label=f"ε lower bound ({self.bound.method}, {self.bound.interval}, δ = {self.bound.delta:g})",
            kind=self.bound.kind,
            confidence=self.bound.confidence,
            valid=self.bound.valid,
            flag=flag,
        )


def _reference_curves(bound: EpsilonLowerBound, method: Any, claimed_epsilon: float | None, alpha: np.ndarray) -> tuple[dict, dict]:
    """The reference trade-off curves on ``alpha`` and their description: the claim's, else the bound's own."""
    delta = bound.delta
    curves: dict[str, np.ndarray] = {}
    if claimed_epsilon is not None:
        mu = gdp_mu(claimed_epsilon, delta)
        curves[f"claimed {mu:.3g}-GDP"] = np.asarray(tradeoff_gdp(alpha, mu))
        curves[f"claimed ({claimed_epsilon:.3g}, {delta:.2g})-DP"] = np.asarray(tradeoff_eps_delta(alpha, claimed_epsilon, delta))
        note = "the claimed ε, as μ-GDP (the μ that implies it at δ) and as (ε, δ)-DP: an attack below these curves refutes the claim"
        return curves, {"against": "claimed epsilon", "epsilon": float(claimed_epsilon), "delta": delta, "curves": list(curves), "note": note}
    if not (np.isfinite(bound.epsilon) and np.isfinite(bound.parameter)):
        note = f"no reference curve: the bound is not finite (ε = {bound.epsilon})"
        return curves, {"against": "nothing", "epsilon": None, "delta": delta, "curves": [], "note": note}
    if bound.method == "gdp":
        curves[f"bound {bound.parameter:.3g}-GDP"] = np.asarray(tradeoff_gdp(alpha, bound.parameter))
    elif hasattr(method, "tradeoff") and bound.parameter > 0:  # a PLD family: its curve at the noise multiplier the bound found
        curves[f"bound: {bound.method} at noise {bound.parameter:.3g}"] = np.asarray(method.tradeoff(alpha, bound.parameter))
    family_delta = 0.0 if bound.method == "pure" else delta
    curves[f"bound ({bound.epsilon:.3g}, {family_delta:.2g})-DP"] = np.asarray(tradeoff_eps_delta(alpha, bound.epsilon, family_delta))
    note = (
        "no claimed ε was given, so the curves are those of the lower bound itself: any claim whose curve lies above them "
        "(nearer the no-privacy-loss diagonal) is refuted at the stated confidence; the gap to the attack's empirical curve "
        "is the price of the confidence intervals and the held-out split (pass --claimed-epsilon to test a claim)"
    )
    return curves, {"against": "lower bound", "epsilon": float(bound.epsilon), "delta": delta, "curves": list(curves), "note": note}


def scores_curves(in_scores, out_scores, bound: EpsilonLowerBound, *, method: Any = None, claimed_epsilon: float | None = None) -> tuple[ScoresCurves, dict]:
    """The ROC and the reference trade-off curves of a scores audit, and the description its result records."""
    curve = roc_curve(in_scores, out_scores)
    alpha = np.linspace(0.0, 1.0, TRADEOFF_GRID)
    references, description = _reference_curves(bound, method, claimed_epsilon, alpha)
    return ScoresCurves(roc_fpr=curve.fpr, roc_tpr=curve.tpr, alpha=alpha, references=references), description


def direction_warning(result: ScoresResult, options: tuple[str, str] = ("direction='higher'", "direction='lower'")) -> str | None:
    """One line when the scores separate clearly against their direction (the AUC's upper confidence limit below ½), else None.

    It names the option of the other direction (``options``: the higher and
    the lower one) and never switches: a direction chosen on the scores
    would make the bound optimistic.
    """
    if result.auc_upper is None or result.auc_upper >= 0.5:
        return None
    other = options[0] if result.direction == LOWER else options[1]
    return (
        f"the scores separate the other way ({result.direction}: AUC {result.auc:.3g}, its {result.bound.confidence:.0%} upper confidence limit "
        f"{result.auc_upper:.3g} < 0.5); if the other direction is what your attack means, rerun with {other} (decided before looking at the scores)"
    )


def _reason(error: ValueError) -> str:
    """The accountant's reason, without its own argument names (``noise_multiplier``, ``sampling_prob``, ``num_steps``)."""
    text = str(error)
    for internal in ("`noise_multiplier`", "`sampling_prob`", "`num_steps`", "`--sampling-prob`", "`--steps`"):
        text = text.replace(internal, "")
    return text[text.index("needs") :] if "needs" in text else text


def _scores_claim(
    claimed_epsilon: float | None, claimed_delta: float | None, quantity: str | None, rate: float | None, steps: int | None, *, delta: float
) -> tuple[Claim | None, str | None]:
    """The claim on the scores' own quantity, and how it was converted (None: it was not)."""
    check_claim_fields(claimed_epsilon, claimed_delta)
    if quantity is not None:
        check_choice(quantity, "quantity", QUANTITIES)
    if claimed_epsilon is None:
        ignored = [option for option, value in (("--quantity", quantity), ("--claim-sampling-rate", rate), ("--claim-steps", steps)) if value is not None]
        if ignored:  # a claim's details without the claim would be dropped without a word
            raise ValueError(
                f"`{'`, `'.join(ignored)}` {'describe' if len(ignored) > 1 else 'describes'} a claim: give `--claimed-epsilon` with "
                f"{'them' if len(ignored) > 1 else 'it'}, or leave {'them' if len(ignored) > 1 else 'it'} out"
            )
        return None, None
    if quantity is None:
        raise ValueError(
            "`--quantity` must be given with `--claimed-epsilon`: what the scores measure (per-step: one step observed, e.g. an in-loop auditor's; "
            "end-to-end: the final model); a bound is never compared with a claim on another quantity"
        )
    claim = claim_of(claimed_epsilon, claimed_delta, delta=delta)
    assert claim is not None
    if quantity == "end-to-end" and (rate is not None or steps is not None):
        raise ValueError("`--claim-sampling-rate` and `--claim-steps` convert a claim to one step: they go with `--quantity per-step`, not end-to-end")
    if quantity == "end-to-end":
        return claim, None
    if quantity != "per-step" or rate is None or steps is None:
        raise ValueError(
            f"`--quantity` {quantity} scores cannot be compared with an end-to-end claim"
            + (
                ": give `--claim-sampling-rate` and `--claim-steps` (the q and T of the training) to convert the claim to one step"
                if quantity == "per-step"
                else ""
            )
        )
    rate = check_positive(rate, "claim_sampling_rate")
    if rate > 1.0:
        raise ValueError(f"`--claim-sampling-rate` must be in (0, 1], got {rate:g}")
    steps = check_count(steps, "claim_steps", minimum=1)
    try:
        step = per_step_claim(claim, sampling_rate=rate, num_steps=steps, canary_rate=1.0, delta=delta)
    except ValueError as error:  # the accountant names its own arguments (noise_multiplier, --steps); the user typed the claim's flags
        raise ValueError(
            f"`--claimed-epsilon` {claimed_epsilon:g} with `--claim-sampling-rate` {rate:g} and `--claim-steps` {steps} cannot be converted to one step: "
            f"{_reason(error)}"
        ) from None
    return step, conversion_text(claim, step, sampling_rate=rate, num_steps=steps, canary_rate=1.0)


def audit_scores(
    in_scores,
    out_scores,
    *,
    delta: float,
    method: Any = "gdp",
    interval: str = "clopper-pearson",
    confidence: float = 0.95,
    threshold: Any = "auto",
    seed: int = 0,
    one_run: bool = False,
    claimed_epsilon: float | None = None,
    source: dict[str, str] | None = None,
    direction: str | Convention | None = None,
    claimed_delta: float | None = None,
    quantity: str | None = None,
    claim_sampling_rate: float | None = None,
    claim_steps: int | None = None,
    one_run_null: Any = None,
    one_run_claim: float | None = None,
) -> AuditRun:
    """Metrics, the ε bound of ``method`` and, with ``one_run``, the one-run bound (membership drawn by fair coins).

    With ``one_run_null`` (a family of :mod:`privaudit.stats.one_run_nulls`)
    the one-run bound is the order-statistics test against it, its design
    fixed by ``one_run_claim`` (the family parameter the claim states).

    ``direction`` is "higher" or "lower" (is member), a score-direction
    Convention (:func:`score_direction`), or None: privaudit's default,
    higher. "lower" negates the scores first; a numeric ``threshold`` is on
    the scale of the scores as given (members at or below it).

    A claim (``claimed_epsilon``, ``claimed_delta``) is end to end; it is
    compared only with a bound on the same ``quantity`` (what the scores
    measure, never guessed): with "per-step" scores it is first converted
    to the per-step claim it implies for the training's
    ``claim_sampling_rate`` and ``claim_steps``
    (:mod:`privaudit.stats.claim_conversion`).
    """
    seed = check_seed(seed)
    claim, conversion = _scores_claim(claimed_epsilon, claimed_delta, quantity, claim_sampling_rate, claim_steps, delta=delta)
    if claim is not None:
        claimed_epsilon = claim.epsilon  # the trade-off figure draws the claim on the scores' own quantity
    convention = direction if isinstance(direction, Convention) else score_direction(direction)
    if convention.name != "score direction" or convention.value not in (HIGHER, LOWER):
        raise ValueError(f"`direction` must be a score-direction Convention ({HIGHER!r} or {LOWER!r}), got {convention.describe()!r}")
    in_scores, out_scores = as_scores(in_scores, "in_scores"), as_scores(out_scores, "out_scores")
    if convention.value == LOWER:
        in_scores, out_scores, threshold = -in_scores, -out_scores, _negated_threshold(threshold)
    bound = epsilon_lower_bound(in_scores, out_scores, delta=delta, method=method, interval=interval, confidence=confidence, threshold=threshold, seed=seed)
    eps_delta = None
    if bound.method == "gdp":  # the (ε, δ) reading of the same scores, beside it
        eps_delta = epsilon_lower_bound(
            in_scores, out_scores, delta=delta, method="eps-delta", interval=interval, confidence=confidence, threshold=threshold, seed=seed
        )
    sweep = None
    if one_run:
        scores = np.concatenate([in_scores, out_scores])
        member = np.concatenate([np.ones(in_scores.size, bool), np.zeros(out_scores.size, bool)])
        sweep = one_run_lower_bound(scores, member, delta=delta, confidence=confidence, null=one_run_null, claim=one_run_claim)
    rates = tpr_at_fpr(in_scores, out_scores, FPR_LEVELS)
    auc_upper = None
    if min(in_scores.size, out_scores.size) >= 2:  # 1 - the lower limit of P(out > in): the AUC's upper limit
        auc_upper = 1.0 - gdp_auc_lower_bound(out_scores, in_scores, delta=bound.delta, confidence=bound.confidence).auc_lower
    curves, tradeoff = scores_curves(in_scores, out_scores, bound, method=method, claimed_epsilon=claimed_epsilon)
    result = ScoresResult(
        source=dict(source or {}),
        num_in=int(in_scores.size),
        num_out=int(out_scores.size),
        auc=float(roc_auc(in_scores, out_scores)),
        tpr_at_fpr={f"{level:g}": float(rate) for level, rate in zip(FPR_LEVELS, rates, strict=True)},
        bound=bound,
        bound_eps_delta=eps_delta,
        claimed_epsilon=claimed_epsilon,
        one_run=sweep,
        seed=seed,
        tradeoff=tradeoff,
        auc_upper=auc_upper,
        conventions=(convention,),
    )
    margin = auc_null_margin(result.num_in, result.num_out, confidence)
    warnings = auc_warnings(result.auc, margin, members_higher=True, dp_claim=claim is not None, canary_audit=False)
    result = bound_verdict(
        result,
        bound,
        claim=claim,
        raise_with="more scores per side",
        method=method,
        quantity=quantity or "end-to-end",
        conversion=conversion,
        warnings=warnings,
    )
    config = {"delta": delta, "method": bound.method, "interval": interval, "confidence": confidence, "threshold": bound.threshold_strategy, "seed": seed}
    config["direction"] = convention.value
    return AuditRun("scores", config, result, observations={"in_scores": in_scores, "out_scores": out_scores, "curves": curves})
