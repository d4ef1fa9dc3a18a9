"""The steward's decision: does this release expose training records, in plain words resting on exact tests of this run's scores.

Three tests against a random split of the scored records into members and
non-members, each exact, Bonferroni over them at the run's confidence:

* verbatim copies: of the records with an exact copy in the release
  (distance 0 to their closest synthetic row on every column), how many are
  members (hypergeometric: Fisher's exact test, one-sided). Common rows
  recur in any sample of a population, so the non-members' rate is the
  yardstick;
* the headline attack's (the robust DCR, fixed in advance) members above
  every non-member (FPR 0), and its members above its 1% FPR threshold
  (:func:`privaudit.stats.rank_test.members_above`).

Where a test rejects, the records are named by id: the members with an
exact copy, and the members the headline ranks above every non-member
without one (near copies: nearer a synthetic row than the non-members are,
weighed by how far each record is from the population). Where only the
1% FPR test rejects, no single record is beyond doubt, so the members above
its threshold are named as the most exposed, beside how many of them a
random split would put there: a share of them, not each, is exposed. Where none
rejects, the sentence says the attacks are at chance and never speaks of a
leak. :func:`dcr_explanation` says, in this run's numbers, why DCR's
holdout test passes or fails.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy import stats

from ...stats.intervals import binomial_interval
from ...stats.mia_metrics import supported_fpr
from ...stats.rank_test import members_above, members_among_flagged_p_value

__all__ = ["NAMED_IN_SENTENCE", "StewardDecision", "dcr_explanation", "steward_decision"]

NAMED_IN_SENTENCE = 10  # ids a sentence names; results.json holds them all


@dataclasses.dataclass(frozen=True)
class StewardDecision:
    """The decision and the numbers it rests on (exact tests against a random split, Bonferroni over them).

    ``exact_copies``: the members with an exact copy in the release, most
    exposed first, beside ``non_member_copies`` of the non-members;
    ``found_ids``: the members the attack puts above every non-member, and
    ``near_copies`` those of them without an exact copy; ``above_1pct_ids``:
    the members above the 1% FPR threshold, of which ``at_1pct_expected``
    would be there by chance. ``*_p_value``:
    P[at least this many] when membership is a random split.
    ``records_exposed``: a test rejects at ``1 - confidence`` split evenly.
    """

    attack: str
    confidence: float
    num_members: int
    num_non_members: int
    exact_copies: tuple[str, ...]
    non_member_copies: int
    copies_p_value: float
    found_ids: tuple[str, ...]
    near_copies: tuple[str, ...]
    above_all_expected: float
    above_all_p_value: float
    at_1pct_count: int | None  # None: fewer than 100 non-members, no 1% FPR threshold
    at_1pct_expected: float | None
    at_1pct_p_value: float | None
    tpr_at_1pct: float | None
    tpr_at_1pct_interval: tuple[float, float] | None
    records_exposed: bool
    above_1pct_ids: tuple[str, ...] = ()  # the members above the 1% FPR threshold, most exposed first (named when only that test rejects)

    @property
    def num_exposed(self) -> int:
        """The records the decision finds exposed, 0 where the attacks are at chance.

        The exact and near copies it names; where only the 1% FPR test
        rejects, the members above its threshold less those a random split
        puts there (the count its sentence gives).
        """
        if not self.records_exposed:
            return 0
        named = len(self.exact_copies) + len(self.near_copies)
        return named if named or not self._most_exposed() else self._estimated_above_1pct()

    def _estimated_above_1pct(self) -> int:
        """The members above the 1% FPR threshold beyond those a random split puts there, rounded."""
        return round(max(0.0, len(self.above_1pct_ids) - (self.at_1pct_expected or 0.0)))

    def _rejects(self) -> tuple[bool, bool, bool]:
        """Which of the three tests rejects at the Bonferroni level: (verbatim copies, above every non-member, at 1% FPR)."""
        tests = [self.copies_p_value, self.above_all_p_value] + ([] if self.at_1pct_p_value is None else [self.at_1pct_p_value])
        level = (1.0 - self.confidence) / len(tests)
        return self.copies_p_value <= level, self.above_all_p_value <= level, self.at_1pct_p_value is not None and self.at_1pct_p_value <= level

    def _at_1pct(self, short: bool = False) -> str:
        """The TPR at 1% FPR with its interval, beside the share a random split puts above the same threshold ("" without one)."""
        if self.tpr_at_1pct is None or self.tpr_at_1pct_interval is None or self.at_1pct_expected is None:
            return ""
        low, high = self.tpr_at_1pct_interval
        chance = self.at_1pct_expected / self.num_members  # above the k-th highest non-member: k / (non-members + 1) of the members by chance
        if short:
            return f"{self.tpr_at_1pct:.1%} [{low:.1%}, {high:.1%}] found at 1% FPR ({chance:.1%} by chance)"
        return f"{self.tpr_at_1pct:.1%} of the members [{low:.1%}, {high:.1%}] at 1% FPR, where a random split finds {chance:.1%}"

    def summary(self) -> str:
        """The verdict in one short line (the report's headline and contents): the tests that reject, or the attacks at chance.

        >>> member = np.arange(400) < 200
        >>> closest = np.r_[np.zeros(20), np.full(180, 0.3), np.full(200, 0.3)]
        >>> scores = -closest + np.linspace(0, 0.01, 400)
        >>> print(*steward_decision(scores, member, np.arange(400).astype(str), closest, attack="robust DCR", confidence=0.95).summary().split("; "), sep="\\n")
        The release exposes training records: 20 of 200 appear verbatim in it (0 of 200 non-members do)
        20 of 200 ranked above every non-member (1.0 by chance)
        10.0% [6.2%, 15.0%] found at 1% FPR (1.5% by chance)
        """
        copies, above, at_1pct = self._rejects()
        m, k = self.num_members, self.num_non_members
        found = f"{len(self.found_ids)} of {m}{' training records' if not self.records_exposed else ''} ranked above every non-member ({self.above_all_expected:.1f} by chance)"
        if not self.records_exposed:
            return "; ".join(part for part in ("The attacks are at chance on this release: " + found, self._at_1pct(short=True)) if part)
        parts = [f"{len(self.exact_copies)} of {m} appear verbatim in it ({self.non_member_copies} of {k} non-members do)"] if copies else []
        parts += [found + (f", {len(self.near_copies)} of them near copies" if self.near_copies else "")] if above else []
        parts += [self._at_1pct(short=True)] if at_1pct else []
        return "The release exposes training records: " + "; ".join(parts)

    def sentence(self) -> str:
        """The plain verdict the console and the report open with."""
        m, k = self.num_members, self.num_non_members
        copies = (
            f"{len(self.exact_copies)} of the {m} training records {'appears' if len(self.exact_copies) == 1 else 'appear'} verbatim in the release, "
            f"against {self.non_member_copies} of the "
            f"{k} non-members (p = {self.copies_p_value:.2g})"
        )
        above = (
            f"the {self.attack} ranks {_records(len(self.found_ids))} ({len(self.found_ids) / m:.1%}, its TPR at FPR 0) above every non-member "
            f"(nearer a synthetic row, weighed by how unusual the record is), where a random split puts {self.above_all_expected:.1f} "
            f"(p = {self.above_all_p_value:.2g})"
        )
        at_1pct = f" It finds {self._at_1pct()} (p = {self.at_1pct_p_value:.2g})." if self._at_1pct() else ""
        if not self.records_exposed:
            return f"The attacks are at chance on this release: {copies}; {above}.{at_1pct} This is what these attacks see, not a proof of privacy."
        named = _named(self.exact_copies, "exact_copies")
        near = f" Near copies (no exact copy): {_named(self.near_copies, 'near_copies')}." if self.near_copies else ""
        return f"The release exposes training records: {copies}{': ' + named if named else ''}; {above}.{near}{at_1pct}{self._most_exposed()}"

    def _most_exposed(self) -> str:
        """Where only the 1% FPR test rejects, the members above its threshold, named as the most exposed with the count chance explains."""
        copies, above, at_1pct = self._rejects()
        if not at_1pct or copies or above or not self.above_1pct_ids or self.at_1pct_expected is None:
            return ""
        return (
            f" No record is beyond doubt on its own: the {len(self.above_1pct_ids)} members above the 1% FPR threshold are the most exposed, and "
            f"a random split puts {self.at_1pct_expected:.1f} there, so about {self._estimated_above_1pct()} "
            f"of them are exposed: {_named(self.above_1pct_ids, 'above_1pct_ids')}."
        )


def _records(count: int) -> str:
    return f"{count} training record{'' if count == 1 else 's'}"


def _named(ids: tuple[str, ...], field: str) -> str:
    more = f", and {len(ids) - NAMED_IN_SENTENCE} more (all in results.json, decision.{field})" if len(ids) > NAMED_IN_SENTENCE else ""
    return ", ".join(ids[:NAMED_IN_SENTENCE]) + more


def steward_decision(scores: np.ndarray, member: np.ndarray, ids: np.ndarray, closest: np.ndarray, *, attack: str, confidence: float) -> StewardDecision:
    """The decision from the headline attack's ``scores``, membership, the records' ``ids`` and their ``closest`` synthetic distances.

    >>> member = np.arange(400) < 200
    >>> closest = np.r_[np.zeros(20), np.full(180, 0.3), np.zeros(2), np.full(198, 0.3)]  # 20 members copied, 2 non-members recur
    >>> scores = -closest + np.linspace(0, 0.01, 400)
    >>> decision = steward_decision(scores, member, np.char.add("R-", np.arange(400).astype(str)), closest, attack="robust DCR", confidence=0.95)
    >>> decision.records_exposed, len(decision.exact_copies), decision.non_member_copies, decision.copies_p_value < 1e-4
    (True, 20, 2, True)
    >>> steward_decision(-np.full(400, 0.3), member, np.arange(400).astype(str), np.full(400, 0.3), attack="robust DCR", confidence=0.95).records_exposed
    False
    """
    in_scores, out_scores = scores[member], scores[~member]
    top = members_above(in_scores, out_scores, fpr=0.0)
    at_1pct = members_above(in_scores, out_scores, fpr=0.01) if supported_fpr(0.01, int((~member).sum())) else None
    copy = closest == 0.0
    copies_p = members_among_flagged_p_value(copy, member)
    tests = [copies_p, top.p_value] + ([] if at_1pct is None else [at_1pct.p_value])
    by_score = np.argsort(-scores, kind="stable")
    exact = tuple(str(ids[i]) for i in by_score if member[i] and copy[i])
    found_rows = _most_exposed_first(scores, member, top.above)
    above_1pct = np.zeros(0, dtype=np.int64) if at_1pct is None else _most_exposed_first(scores, member, at_1pct.above)
    interval = None
    if at_1pct is not None:
        low, high = binomial_interval(at_1pct.count, at_1pct.num_in, confidence=confidence)  # Clopper–Pearson, as every TPR interval
        interval = (float(low), float(high))
    return StewardDecision(
        attack=attack,
        confidence=confidence,
        num_members=top.num_in,
        num_non_members=top.num_out,
        exact_copies=exact,
        non_member_copies=int(np.sum(copy & ~member)),
        copies_p_value=copies_p,
        found_ids=tuple(str(ids[i]) for i in found_rows),
        near_copies=tuple(str(ids[i]) for i in found_rows if not copy[i]),
        above_all_expected=top.expected_by_chance,
        above_all_p_value=top.p_value,
        at_1pct_count=None if at_1pct is None else at_1pct.count,
        at_1pct_expected=None if at_1pct is None else at_1pct.expected_by_chance,
        at_1pct_p_value=None if at_1pct is None else at_1pct.p_value,
        tpr_at_1pct=None if at_1pct is None else at_1pct.count / at_1pct.num_in,
        tpr_at_1pct_interval=interval,
        records_exposed=min(tests) <= (1.0 - confidence) / len(tests),
        above_1pct_ids=tuple(str(ids[i]) for i in above_1pct),
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
