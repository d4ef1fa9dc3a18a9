"""Inserting canaries into a training corpus on a repetition schedule, with provenance.

The provenance record says which canary went where and how often, so an audit
can be reproduced and the canaries removed again.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import numpy as np

from .._core.results import Result
from .._core.validation import check_count
from .text import CanaryFormat

__all__ = ["InsertedCorpus", "Provenance", "check_schedule", "insert_canaries", "remove_canaries"]

#: Most copies of one canary: each copy is a line of the corpus.
MAX_REPETITIONS = 10**6


@dataclasses.dataclass(frozen=True)
class Provenance(Result):
    """Which canary text was inserted, how many times, and at which line indices of the new corpus."""

    template: str
    canaries: tuple  # of {"text", "secret", "repetitions", "lines"} dicts
    seed: int | None
    num_original_lines: int

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Provenance:
        data = json.loads(text)
        canaries = tuple(
            {"text": c["text"], "secret": tuple(c["secret"]), "repetitions": c["repetitions"], "lines": tuple(c["lines"])} for c in data["canaries"]
        )
        return cls(template=data["template"], canaries=canaries, seed=data["seed"], num_original_lines=data["num_original_lines"])


@dataclasses.dataclass(frozen=True)
class InsertedCorpus:
    lines: list[str]
    provenance: Provenance


def check_schedule(schedule) -> list[int]:
    """The repetition counts of ``schedule`` as ints >= 1; 1.5 or "2" is refused, never rounded.

    >>> check_schedule((1, 2.0, 4))
    [1, 2, 4]
    >>> check_schedule([1.5, 2])
    Traceback (most recent call last):
    ...
    ValueError: `schedule` repetition counts must be integers >= 1, got [1.5, 2]
    """
    try:
        values = list(schedule)
    except TypeError:
        raise ValueError(f"`schedule` must be a sequence of integers >= 1, got {schedule!r}") from None
    counts = []
    for value in values:
        try:
            counts.append(check_count(value, "schedule", minimum=1, maximum=MAX_REPETITIONS))
        except ValueError:
            raise ValueError(f"`schedule` repetition counts must be integers >= 1, got {values!r}") from None
    if not counts:
        raise ValueError("`schedule` must hold at least one repetition count, got none")
    return counts


def insert_canaries(
    corpus_lines: Sequence[str],
    canary_format: CanaryFormat,
    *,
    schedule: Sequence[int] = (1, 2, 4, 8, 16, 32),
    canaries_per_count: int = 1,
    seed: int | None = 0,
    secure: bool = False,
) -> InsertedCorpus:
    """Insert fresh canaries, ``canaries_per_count`` for each repetition count in ``schedule``.

    Copies go at uniformly random line positions (seeded). Canaries are
    distinct draws from the format's randomness space.

    >>> corpus = insert_canaries(["a", "b"], CanaryFormat("pin {digits:4}"), schedule=(1, 2), seed=0)
    >>> len(corpus.lines), [c["repetitions"] for c in corpus.provenance.canaries]
    (5, [1, 2])
    """
    lines = list(corpus_lines)
    if not lines:
        raise ValueError("`corpus_lines` must not be empty")
    counts = check_schedule(schedule)
    canaries_per_count = check_count(canaries_per_count, "canaries_per_count", minimum=1)
    rng = np.random.default_rng(seed)
    drawn = canary_format.sample_many(len(counts) * canaries_per_count, seed=rng, secure=secure)
    plan = [(canary, count) for canary, count in zip(drawn, [c for c in counts for _ in range(canaries_per_count)], strict=True)]

    tagged: list[tuple[str, int | None]] = [(line, None) for line in lines]
    for index, (canary, count) in enumerate(plan):
        for _ in range(count):
            tagged.insert(int(rng.integers(len(tagged) + 1)), (canary.text, index))
    where: dict[int, list[int]] = {index: [] for index in range(len(plan))}
    for position, (_, tag) in enumerate(tagged):
        if tag is not None:
            where[tag].append(position)
    records = tuple(
        {"text": canary.text, "secret": canary.secret, "repetitions": count, "lines": tuple(where[index])} for index, (canary, count) in enumerate(plan)
    )
    provenance = Provenance(template=canary_format.template, canaries=records, seed=seed, num_original_lines=len(lines))
    return InsertedCorpus(lines=[line for line, _ in tagged], provenance=provenance)


def remove_canaries(lines: Sequence[str], provenance: Provenance) -> list[str]:
    """Undo :func:`insert_canaries`: drop exactly the recorded lines, after checking them.

    >>> corpus = insert_canaries(["a", "b"], CanaryFormat("pin {digits:4}"), schedule=(3,), seed=1)
    >>> remove_canaries(corpus.lines, corpus.provenance)
    ['a', 'b']
    """
    drop = set()
    for record in provenance.canaries:
        for position in record["lines"]:
            if position >= len(lines) or lines[position] != record["text"]:
                raise ValueError(f"`lines` do not match the provenance at line {position}: expected {record['text']!r}")
            drop.add(position)
    return [line for position, line in enumerate(lines) if position not in drop]
