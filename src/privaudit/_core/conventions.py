"""Conventions of the user's model and data: what was decided, and how.

Every number privaudit reports about a user's model rests on conventions: the
special tokens the model saw, the label column, whether outputs are logits or
probabilities, which way a score points, which span of a canary is scored. A
wrong guess gives a number that looks right and is wrong, so each one is
decided in one of three ways, and the result records which:

============  =====================================================================
``decided``   meaning
============  =====================================================================
checked       measured on the model or the data (``evidence`` holds the numbers)
explicit      given by the user (``evidence`` names the option), where a guess could be wrong
default       a stated default, where every choice gives a correct number
============  =====================================================================

``docs/conventions.md`` lists every convention with the test that proves it.

>>> convention = checked("output kind", "probabilities", "rows >= 0 summing to 1 (max |sum - 1| = 2e-07)")
>>> convention.decided, convention.describe()
('checked', 'output kind: probabilities (checked: rows >= 0 summing to 1 (max |sum - 1| = 2e-07))')
>>> explicit("score direction", "lower is member", "--lower-is-member").evidence
'--lower-is-member'
>>> Convention("label column", "y", "guessed")
Traceback (most recent call last):
...
ValueError: `decided` must be one of 'checked', 'explicit', 'default', got 'guessed'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from .validation import check_choice

__all__ = ["DECIDED", "Convention", "checked", "conventions_from_dicts", "default", "explicit"]

DECIDED = ("checked", "explicit", "default")


@dataclasses.dataclass(frozen=True)
class Convention:
    """One convention of the user's model or data, its value, and how it was decided.

    ``name`` is what the convention is about ("special tokens", "label
    column", "output kind", "score direction", "scored span"); ``value``
    what was decided; ``decided`` one of :data:`DECIDED`; ``evidence`` the
    check's figures, the user's option, or why the default is safe.
    """

    name: str
    value: str
    decided: str
    evidence: str = ""

    def __post_init__(self) -> None:
        check_choice(self.decided, "decided", DECIDED)
        if not self.name or not self.value:
            raise ValueError(f"`name` and `value` must be non-empty, got {self.name!r} and {self.value!r}")

    def describe(self) -> str:
        """One line: name, value, and how it was decided."""
        how = f"{self.decided}: {self.evidence}" if self.evidence else self.decided
        return f"{self.name}: {self.value} ({how})"


def checked(name: str, value: str, evidence: str) -> Convention:
    """A convention measured on the model or data; ``evidence`` holds the figures."""
    return Convention(name, value, "checked", evidence)


def explicit(name: str, value: str, option: str) -> Convention:
    """A convention the user gave; ``option`` names the option or argument."""
    return Convention(name, value, "explicit", option)


def default(name: str, value: str, why: str) -> Convention:
    """A stated default; ``why`` says why every choice gives a correct number."""
    return Convention(name, value, "default", why)


def conventions_from_dicts(items: Iterable[Mapping[str, Any]] | None) -> tuple[Convention, ...]:
    """Conventions from their ``to_plain`` dicts (what results.json holds); () for None.

    >>> conventions_from_dicts([{"name": "label column", "value": "y", "decided": "explicit", "evidence": "--label-col"}])[0].value
    'y'
    """
    return tuple(Convention(**dict(item)) for item in (items or ()))
