"""The mechanism family's bottom layer: its config and result types, imported by the checks and the audit."""

from __future__ import annotations

import dataclasses

from ..._core.validation import check_choice, check_count, check_probability
from ...mechanisms.claims import Claim
from ...mechanisms.neighbours import RELATIONS
from ...stats.bounds import EpsilonLowerBound
from ..base import AuditResult, Headline

__all__ = ["MechanismAuditConfig", "MechanismAuditResult", "MechanismTest", "NeighbourPair", "THREAT_MODEL"]


THREAT_MODEL = "black-box: independent samples of the mechanism's output on two neighbouring datasets"


@dataclasses.dataclass(frozen=True)
class MechanismAuditConfig:
    """Everything a mechanism audit depends on; checked on construction.

    >>> MechanismAuditConfig(epsilon=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: `epsilon` must be > 0, got -1
    """

    mechanism: str = "privaudit.mechanisms.examples:laplace_sum"
    dataset: str | None = None  # .npy or .csv; None: the built-in example dataset
    neighbour: str | None = None  # .npy or .csv; None: searched
    relation: str | None = None  # "add-remove" or "replace"; None: the given pair's, or the mechanism's `neighbouring`
    domain: tuple[float, float] | None = (
        None  # the range of a record's fields, for the search; None: the mechanism's `domain`, else the data's range widened by its width
    )
    epsilon: float | None = None  # the claim; None with rho None: the mechanism's own `claim` attribute
    rho: float | None = None  # a rho-zCDP claim instead of epsilon, tested as (epsilon, delta)-DP at `delta`
    delta: float = 0.0
    samples: int = 5000  # held-out samples per side, bounded
    pilot_samples: int = 2000  # per side: statistics and thresholds
    search_samples: int = 1000  # per candidate neighbour
    search_random: int = 2  # random candidates of each kind
    search_steps: int = 4  # local-search moves from the best pair
    learned: bool = True  # add the learned statistics (density ratio; a classifier for outputs of several coordinates)
    tests_kept: int | None = 2  # tests bounded on the held-out samples, the pilot's most promising; None: every test
    thresholds_per_test: int = 3
    stages: int = 1  # > 1: sequential, the held-out samples come in this many looks, stopping at the first rejection
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        if self.epsilon is not None or self.rho is not None:
            self.claim()  # checks epsilon, rho and delta together
        if self.relation is not None:
            check_choice(self.relation, "relation", RELATIONS)
        if self.domain is not None and not (len(self.domain) == 2 and float(self.domain[0]) < float(self.domain[1])):
            raise ValueError(f"`domain` must be [low, high] with low < high, got {list(self.domain)!r}")
        check_count(self.samples, "samples", minimum=10)
        check_count(self.pilot_samples, "pilot_samples", minimum=10)
        check_count(self.search_samples, "search_samples", minimum=10)
        check_count(self.search_random, "search_random", minimum=0)
        check_count(self.search_steps, "search_steps", minimum=0)
        if self.tests_kept is not None:
            check_count(self.tests_kept, "tests_kept", minimum=1)
        check_count(self.thresholds_per_test, "thresholds_per_test", minimum=1)
        check_count(self.stages, "stages", minimum=1, maximum=self.samples // 10)
        check_probability(self.confidence, "confidence")

    def claim(self):
        return Claim(epsilon=self.epsilon, delta=self.delta, rho=self.rho)


@dataclasses.dataclass(frozen=True)
class MechanismTest:
    """One test (a statistic in one direction) and its ε lower bound on the held-out samples."""

    statistic: str
    direction: str
    bound: EpsilonLowerBound


@dataclasses.dataclass(frozen=True)
class NeighbourPair:
    """How the pair was chosen: the relation, the record D and D' differ in, and the candidates' pilot ε (searched pairs).

    ``dataset`` holds D's records when the search chose another D than the given one (else empty).
    """

    how: str
    relation: str
    record: tuple[float, ...]
    dataset_size: int
    neighbour_size: int
    searched: bool
    candidates: tuple[tuple[str, float], ...] = ()
    search_budget: str = ""
    dataset: tuple[tuple[float, ...], ...] = ()


@dataclasses.dataclass(frozen=True)
class MechanismAuditResult(AuditResult):
    """The verdict on the claim, the largest ε lower bound, every test, and how the pair was chosen."""

    config: MechanismAuditConfig
    mechanism: str
    claim: str
    claimed_epsilon: float  # the epsilon tested (a rho claim converted at delta)
    delta: float
    rho: float | None
    epsilon: float  # the largest lower bound, at `confidence` after Bonferroni
    fraction_of_claim: float
    rejected: bool
    verdict: str
    confidence: float
    tests: tuple[MechanismTest, ...]  # the tests bounded on the held-out samples (Bonferroni over these)
    best_test: int
    statistics_tried: tuple[tuple[str, str, float], ...]  # every (statistic, direction) and the bound its pilot promised
    pair: NeighbourPair
    output_shape: tuple[int, ...]
    looks: int  # held-out looks taken (sequential mode stops at the first rejection)
    total_samples: int
    threat_model: str = THREAT_MODEL

    def headline(self) -> Headline:
        return Headline(self.epsilon, "epsilon lower bound", "lower bound", self.confidence, True, self.rejected)
