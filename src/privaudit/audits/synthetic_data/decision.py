"""The steward's decision: does this release expose training records, in plain words resting on exact tests of this run's scores.

Exact tests against a random split of the scored records into members and
non-members, Bonferroni over all of them at the run's confidence:

* verbatim copies: of the records with an exact copy in the release
  (distance 0 to their closest synthetic row on every column), how many are
  members (hypergeometric: Fisher's exact test, one-sided). Common rows
  recur in any sample of a population, so the non-members' rate is the
  yardstick;
* for each attack of :data:`DECISION_ATTACKS` (fixed in advance: the robust
  DCR, the headline, which sees copies and near copies, and DOMIAS, which
  sees where the release is denser than the population), its members above
  every non-member (FPR 0), and its members above its 1% FPR threshold
  (:func:`privaudit.stats.rank_test.members_above`).

Where a test rejects, the records are named by id: the members with an
exact copy, and the members without one that an attack whose FPR 0 test
rejects ranks above every non-member (near copies). Where only a 1% FPR
test rejects, no single record is beyond doubt, so the members above the
threshold of the attack with the smallest such p-value are named as the
most exposed, with that attack, beside how many of them a random split
would put there: a share of them, not each, is exposed. Where none rejects,
the sentence says the attacks are at chance and never speaks of a leak.
:func:`dcr_explanation` says, in this run's numbers, why DCR's holdout test
passes or fails.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import stats

from ...stats.intervals import binomial_interval
from ...stats.mia_metrics import supported_fpr
from ...stats.rank_test import members_above, members_among_flagged_p_value

__all__ = ["DECISION_ATTACKS", "NAMED_IN_SENTENCE", "AttackRankTests", "StewardDecision", "dcr_explanation", "steward_decision", "upgraded_decision"]

NAMED_IN_SENTENCE = 10  # ids a sentence names; results.json holds them all

# the attacks the decision tests, fixed before any score is seen: (name in the audit, label, what ranks a record high)
DECISION_ATTACKS: dict[str, tuple[str, str]] = {
    "robust-dcr": ("the robust DCR", "nearer a synthetic row, weighed by how unusual the record is"),
    "domias": ("DOMIAS", "where the release is denser than the population"),
}


@dataclasses.dataclass(frozen=True)
class AttackRankTests:
    """One attack's two exact tests: its members above every non-member (FPR 0), and above its 1% FPR threshold.

    ``found_ids``: the members above every non-member, most exposed first,
    of which ``above_all_expected`` would be there by chance;
    ``above_1pct_ids``: the members above the 1% FPR threshold, of which
    ``at_1pct_expected`` would be (``None`` with fewer than 100
    non-members: no such threshold). ``*_p_value``: P[at least this many]
    when membership is a random split.
    """

    attack: str
    ranks_high: str
    found_ids: tuple[str, ...]
    above_all_expected: float
    above_all_p_value: float
    at_1pct_count: int | None
    at_1pct_expected: float | None
    at_1pct_p_value: float | None
    tpr_at_1pct: float | None
    tpr_at_1pct_interval: tuple[float, float] | None
    above_1pct_ids: tuple[str, ...] = ()

    @property
    def p_values(self) -> tuple[float, ...]:
        """Its tests' p-values: FPR 0, then 1% FPR where there is a threshold."""
        return (self.above_all_p_value,) + (() if self.at_1pct_p_value is None else (self.at_1pct_p_value,))

    def at_1pct(self, num_members: int, short: bool = False) -> str:
        """The TPR at 1% FPR with its interval, beside the share a random split puts above the same threshold ("" without one)."""
        if self.tpr_at_1pct is None or self.tpr_at_1pct_interval is None or self.at_1pct_expected is None:
            return ""
        low, high = self.tpr_at_1pct_interval
        chance = self.at_1pct_expected / num_members  # above the k-th highest non-member: k / (non-members + 1) of the members by chance
        if short:
            return f"{self.tpr_at_1pct:.1%} [{low:.1%}, {high:.1%}] found at 1% FPR by {self.attack} ({chance:.1%} by chance)"
        return f"{self.tpr_at_1pct:.1%} of the members [{low:.1%}, {high:.1%}] at 1% FPR, where a random split finds {chance:.1%}"

    def estimated_above_1pct(self) -> int:
        """The members above the 1% FPR threshold beyond those a random split puts there, rounded."""
        return round(max(0.0, len(self.above_1pct_ids) - (self.at_1pct_expected or 0.0)))


@dataclasses.dataclass(frozen=True)
class StewardDecision:
    """The decision and the numbers it rests on (exact tests against a random split, Bonferroni over them).

    ``exact_copies``: the members with an exact copy in the release, most
    exposed first, beside ``non_member_copies`` of the non-members;
    ``attacks``: each decision attack's tests, the headline first;
    ``near_copies``: the members without an exact copy that an attack whose
    FPR 0 test rejects puts above every non-member. ``records_exposed``: a
    test rejects at ``1 - confidence`` split evenly over all of them.
    """

    confidence: float
    num_members: int
    num_non_members: int
    exact_copies: tuple[str, ...]
    non_member_copies: int
    copies_p_value: float
    attacks: tuple[AttackRankTests, ...]
    near_copies: tuple[str, ...]
    records_exposed: bool

    @property
    def headline(self) -> AttackRankTests:
        """The headline attack's tests (the robust DCR)."""
        return self.attacks[0]

    @property
    def level(self) -> float:
        """The level each test is held to: 1 - confidence over the number of tests (Bonferroni)."""
        return _bonferroni_level(self.confidence, self.attacks)

    @property
    def num_exposed(self) -> int:
        """The records the decision finds exposed, 0 where the attacks are at chance.

        The exact copies (where their test rejects) and near copies it names; where only a 1% FPR test
        rejects, the members above that attack's threshold less those a
        random split puts there (the count its sentence gives).
        """
        if not self.records_exposed:
            return 0
        named = len(self.exact_copies if self._copies_reject() else ()) + len(self.near_copies)
        most = self._most_exposed_by()
        return named if named or most is None else most.estimated_above_1pct()

    @property
    def most_exposed_ids(self) -> tuple[str, ...]:
        """Where only a 1% FPR test rejects, the members above the threshold of the attack with the smallest such p-value; else ()."""
        tests = self._most_exposed_by()
        return () if tests is None else tests.above_1pct_ids

    def _copies_reject(self) -> bool:
        return self.copies_p_value <= self.level

    def _above_all_rejects(self, tests: AttackRankTests) -> bool:
        return tests.above_all_p_value <= self.level

    def _at_1pct_rejects(self, tests: AttackRankTests) -> bool:
        return tests.at_1pct_p_value is not None and tests.at_1pct_p_value <= self.level

    def _most_exposed_by(self) -> AttackRankTests | None:
        """Where only 1% FPR tests reject: the attack with the smallest such p-value, whose members above its threshold are the most exposed."""
        if self._copies_reject() or any(self._above_all_rejects(t) for t in self.attacks):
            return None
        rejecting = [t for t in self.attacks if self._at_1pct_rejects(t) and t.above_1pct_ids]
        return min(rejecting, key=lambda t: t.at_1pct_p_value or 1.0) if rejecting else None

    def summary(self) -> str:
        """The verdict in one short line (the report's headline and contents): the tests that reject, or the attacks at chance.

        >>> member = np.arange(400) < 200
        >>> closest = np.r_[np.zeros(20), np.full(180, 0.3), np.full(200, 0.3)]
        >>> scores = -closest + np.linspace(0, 0.01, 400)
        >>> decision = steward_decision({"robust-dcr": scores}, member, np.arange(400).astype(str), closest, confidence=0.95)
        >>> print(*decision.summary().split("; "), sep="\\n")
        The release exposes training records: 20 of 200 appear verbatim in it (0 of 200 non-members do)
        20 of 200 ranked above every non-member by the robust DCR (1.0 by chance)
        10.0% [6.2%, 15.0%] found at 1% FPR by the robust DCR (1.5% by chance)
        """
        m, k = self.num_members, self.num_non_members

        def found(tests: AttackRankTests, records: str = "") -> str:
            return f"{len(tests.found_ids)} of {m}{records} ranked above every non-member by {tests.attack} ({tests.above_all_expected:.1f} by chance)"

        if not self.records_exposed:  # the headline's numbers: no test rejects
            at_chance = ("The attacks are at chance on this release: " + found(self.headline, " training records"), self.headline.at_1pct(m, short=True))
            return "; ".join(part for part in at_chance if part)
        parts = [f"{len(self.exact_copies)} of {m} appear verbatim in it ({self.non_member_copies} of {k} non-members do)"] if self._copies_reject() else []
        near_copies = set(self.near_copies)
        for tests in self.attacks:
            near = sum(record in near_copies for record in tests.found_ids)
            parts += [found(tests) + (f", {near} of them near copies" if near else "")] if self._above_all_rejects(tests) else []
            parts += [tests.at_1pct(m, short=True)] if self._at_1pct_rejects(tests) else []
        return "The release exposes training records: " + "; ".join(parts)

    def sentence(self) -> str:
        """The plain verdict the console and the report open with: every test, the records named where one rejects."""
        m, k = self.num_members, self.num_non_members
        copies = (
            f"{len(self.exact_copies)} of the {m} training records {'appears' if len(self.exact_copies) == 1 else 'appear'} verbatim in the release, "
            f"against {self.non_member_copies} of the "
            f"{k} non-members (p = {self.copies_p_value:.2g})"
        )
        attacks = " ".join(_attack_sentence(tests, m) for tests in self.attacks)
        if not self.records_exposed:
            return f"The attacks are at chance on this release: {copies}. {attacks} This is what these attacks see, not a proof of privacy."
        named = _named(self.exact_copies, "exact_copies") if self._copies_reject() else ""  # copies at the non-members' rate are no evidence
        near = f" Near copies (no exact copy): {_named(self.near_copies, 'near_copies')}." if self.near_copies else ""
        return f"The release exposes training records: {copies}{': ' + named if named else ''}. {attacks}{near}{self._most_exposed()}"

    def _most_exposed(self) -> str:
        """Where only a 1% FPR test rejects, the members above that attack's threshold, named as the most exposed with the count chance explains."""
        tests = self._most_exposed_by()
        if tests is None or tests.at_1pct_expected is None:
            return ""
        return (
            f" No record is beyond doubt on its own: the {len(tests.above_1pct_ids)} members above the 1% FPR threshold of {tests.attack} are the most "
            f"exposed, and a random split puts {tests.at_1pct_expected:.1f} there, so about {tests.estimated_above_1pct()} "
            f"of them are exposed: {_named(tests.above_1pct_ids, 'attacks[' + str(self.attacks.index(tests)) + '].above_1pct_ids')}."
        )


def upgraded_decision(decision: Mapping[str, Any]) -> dict[str, Any]:
    """A decision of results.json's layout before DOMIAS joined the decision (the headline's tests at the top level) in today's layout.

    >>> old = {"attack": "robust DCR", "found_ids": ["R-1"], "above_all_p_value": 0.01, "near_copies": [], "records_exposed": True}
    >>> new = upgraded_decision(old)
    >>> new["attacks"][0]["attack"], new["attacks"][0]["found_ids"], "found_ids" in new
    ('the robust DCR', ['R-1'], False)
    """
    fields = {field.name for field in dataclasses.fields(AttackRankTests)}
    label, ranks_high = DECISION_ATTACKS["robust-dcr"]
    headline = {key: value for key, value in decision.items() if key in fields} | {"attack": label, "ranks_high": ranks_high}
    return {key: value for key, value in decision.items() if key not in fields} | {"attacks": [headline]}


def _attack_sentence(tests: AttackRankTests, num_members: int) -> str:
    """One attack's two tests in words: its TPR at FPR 0 and at 1% FPR, each beside chance and its p-value."""
    count = len(tests.found_ids)
    above = (
        f"{tests.attack[0].upper() + tests.attack[1:]} ranks {_records(count)} ({count / num_members:.1%}, its TPR at FPR 0) above every non-member "
        f"({tests.ranks_high}), where a random split puts {tests.above_all_expected:.1f} (p = {tests.above_all_p_value:.2g})."
    )
    at_1pct = tests.at_1pct(num_members)
    return above + (f" It finds {at_1pct} (p = {tests.at_1pct_p_value:.2g})." if at_1pct else "")


def _records(count: int) -> str:
    return f"{count} training record{'' if count == 1 else 's'}"


def _named(ids: tuple[str, ...], field: str) -> str:
    more = f", and {len(ids) - NAMED_IN_SENTENCE} more (all in results.json, decision.{field})" if len(ids) > NAMED_IN_SENTENCE else ""
    return ", ".join(ids[:NAMED_IN_SENTENCE]) + more


def steward_decision(scores: Mapping[str, np.ndarray], member: np.ndarray, ids: np.ndarray, closest: np.ndarray, *, confidence: float) -> StewardDecision:
    """The decision from the attacks' ``scores`` (by name, of :data:`DECISION_ATTACKS`, the headline's among them), membership, ``ids`` and ``closest`` synthetic distances.

    >>> member = np.arange(400) < 200
    >>> closest = np.r_[np.zeros(20), np.full(180, 0.3), np.zeros(2), np.full(198, 0.3)]  # 20 members copied, 2 non-members recur
    >>> scores = -closest + np.linspace(0, 0.01, 400)
    >>> decision = steward_decision({"robust-dcr": scores}, member, np.char.add("R-", np.arange(400).astype(str)), closest, confidence=0.95)
    >>> decision.records_exposed, len(decision.exact_copies), decision.non_member_copies, decision.copies_p_value < 1e-4
    (True, 20, 2, True)
    >>> steward_decision({"robust-dcr": -np.full(400, 0.3)}, member, np.arange(400).astype(str), np.full(400, 0.3), confidence=0.95).records_exposed
    False
    """
    if set(scores) - set(DECISION_ATTACKS) or "robust-dcr" not in scores:
        raise ValueError(f"`scores` must name the headline 'robust-dcr' and only attacks of {sorted(DECISION_ATTACKS)}, got {sorted(scores)}")
    scores = {name: scores[name] for name in DECISION_ATTACKS if name in scores}  # the headline first, whatever the caller's order
    copy = closest == 0.0
    copies_p = members_among_flagged_p_value(copy, member)
    by_score = np.argsort(-next(iter(scores.values())), kind="stable")
    attacks = tuple(_rank_tests(name, values, member, ids, confidence) for name, values in scores.items())
    p_values = [copies_p] + [p for tests in attacks for p in tests.p_values]
    level = _bonferroni_level(confidence, attacks)
    copied = {str(ids[i]) for i in np.flatnonzero(copy)}
    near = dict.fromkeys(record for tests in attacks if tests.above_all_p_value <= level for record in tests.found_ids if record not in copied)
    return StewardDecision(
        confidence=confidence,
        num_members=int(member.sum()),
        num_non_members=int((~member).sum()),
        exact_copies=tuple(str(ids[i]) for i in by_score if member[i] and copy[i]),
        non_member_copies=int(np.sum(copy & ~member)),
        copies_p_value=copies_p,
        attacks=attacks,
        near_copies=tuple(near),
        records_exposed=min(p_values) <= level,
    )


def _bonferroni_level(confidence: float, attacks: tuple[AttackRankTests, ...]) -> float:
    """1 - confidence over the tests that run: the verbatim copies' and each attack's (two, or one without a 1% FPR threshold)."""
    return (1.0 - confidence) / (1 + sum(len(tests.p_values) for tests in attacks))


def _rank_tests(name: str, scores: np.ndarray, member: np.ndarray, ids: np.ndarray, confidence: float) -> AttackRankTests:
    """One attack's members above every non-member and above its 1% FPR threshold, each tested against a random split."""
    in_scores, out_scores = scores[member], scores[~member]
    top = members_above(in_scores, out_scores, fpr=0.0)
    at_1pct = members_above(in_scores, out_scores, fpr=0.01) if supported_fpr(0.01, int((~member).sum())) else None
    interval = None
    if at_1pct is not None:
        low, high = binomial_interval(at_1pct.count, at_1pct.num_in, confidence=confidence)  # Clopper–Pearson, as every TPR interval
        interval = (float(low), float(high))
    label, ranks_high = DECISION_ATTACKS[name]
    return AttackRankTests(
        attack=label,
        ranks_high=ranks_high,
        found_ids=tuple(str(ids[i]) for i in _most_exposed_first(scores, member, top.above)),
        above_all_expected=top.expected_by_chance,
        above_all_p_value=top.p_value,
        at_1pct_count=None if at_1pct is None else at_1pct.count,
        at_1pct_expected=None if at_1pct is None else at_1pct.expected_by_chance,
        at_1pct_p_value=None if at_1pct is None else at_1pct.p_value,
        tpr_at_1pct=None if at_1pct is None else at_1pct.count / at_1pct.num_in,
        tpr_at_1pct_interval=interval,
        above_1pct_ids=() if at_1pct is None else tuple(str(ids[i]) for i in _most_exposed_first(scores, member, at_1pct.above)),
    )


def _most_exposed_first(scores: np.ndarray, member: np.ndarray, above: np.ndarray) -> np.ndarray:
    """The rows of the members at positions ``above`` (in the members' order), highest score first."""
    rows = np.flatnonzero(member)[above]
    return rows[np.argsort(-scores[rows], kind="stable")]


def dcr_explanation(dcr: Any, num_synthetic: int, num_found: int) -> str:
    """Why DCR's holdout test passes or fails, in this run's numbers: the share closer to training, what failing needed, and the records found.

    ``num_found``: the records the decision found exposed (0 where the attacks are at chance).

    >>> from types import SimpleNamespace
    >>> dcr = SimpleNamespace(share_closer_to_training=0.51, binomial_p_value=0.14, passes=True)
    >>> print(dcr_explanation(dcr, 1000, 20))
    DCR's holdout test passes: 51.0% of the 1000 synthetic rows are closer to a training row than to a holdout row, and failing it at 5% needs 527 (52.7%). The 20 training records found need as few as 20 synthetic rows (2.0%): DCR averages over every row, so a few copies move its share too little to fail it.
    """
    needed = int(stats.binom.isf(0.05, num_synthetic, 0.5)) + 1  # the least count whose one-sided binomial p-value is below 5%
    share = f"{dcr.share_closer_to_training:.1%} of the {num_synthetic} synthetic rows are closer to a training row than to a holdout row"
    if not dcr.passes:
        return f"DCR's holdout test fails: {share} (p = {dcr.binomial_p_value:.2g}; failing it at 5% needs {needed})."
    passes = f"DCR's holdout test passes: {share}, and failing it at 5% needs {needed} ({needed / num_synthetic:.1%})."
    if not num_found:
        return passes
    return (
        f"{passes} The {_records(num_found)} found need as few as {num_found} synthetic row{'' if num_found == 1 else 's'} ({num_found / num_synthetic:.1%}): "
        "DCR averages over every row, so a few copies move its share too little to fail it."
    )
