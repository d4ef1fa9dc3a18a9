"""What a report shows beside the numbers: the seeds a results file records and the conventions its result decided.

Seeds live wherever the family put them: the config's ``seed``, a top-level
``seed`` (``privaudit bound``), a nested bound's ``seed``, ``inclusion_seed``,
``canary_seed``, the demo's ``child_seeds`` or one seed per run in a list.
:func:`seeds_in` finds them all by name, at any depth, and names each by its
path in ``results.json``; a long list of per-run seeds is summarised in one
row. :func:`conventions_in` reads the result's ``conventions`` field as
:class:`~privaudit._core.conventions.Convention` values.

>>> data = {"seed": 0, "bound": {"seed": 0}, "config": {"seed": 3, "num_noise_seeds": 100}, "child_seeds": {"fl": 7}}
>>> seeds_in(data)
{'seed': 0, 'bound.seed': 0, 'config.seed': 3, 'child_seeds.fl': 7}
>>> conventions_in({"conventions": [{"name": "label column", "value": "y", "decided": "explicit", "evidence": "--label-col"}]})[0].describe()
'label column: y (explicit: --label-col)'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._core.capture import CapturedWarning
from .._core.conventions import Convention, conventions_from_dicts

__all__ = ["MAX_LISTED_SEEDS", "conventions_in", "is_seed_name", "provenance", "seeds_in", "warnings_in"]

# a list of more per-run seeds than this is one row: how many, and the first few
MAX_LISTED_SEEDS = 8

_SEED_NAME = re.compile(r"(?:^|_)seeds?$")
_INDEX = re.compile(r"\[\d+\]")
_NOT_SEEDS = frozenset({"machine", "versions"})  # provenance the report shows in its own tables


def is_seed_name(key: Any) -> bool:
    """Whether a results field of this name holds a seed: ``seed``, ``*_seed``, ``seeds``, ``*_seeds``, but not a count (``num_*``).

    >>> [is_seed_name(name) for name in ("seed", "inclusion_seed", "child_seeds", "num_noise_seeds", "seedling")]
    [True, True, True, False, False]
    """
    key = str(key)
    return bool(_SEED_NAME.search(key)) and not key.startswith("num_")


def _leaves(value: Any, name: str) -> dict[str, Any]:
    """Every value under a seed field: a number as it is, a mapping of seeds by key, a list of numbers as one list."""
    if isinstance(value, Mapping):
        found: dict[str, Any] = {}
        for key, item in value.items():
            found.update(_leaves(item, f"{name}.{key}"))
        return found
    if isinstance(value, (list, tuple)) and any(isinstance(item, (Mapping, list, tuple)) for item in value):
        found = {}
        for index, item in enumerate(value):
            found.update(_leaves(item, f"{name}[{index}]"))
        return found
    if isinstance(value, (list, tuple)) and len(value) > MAX_LISTED_SEEDS:
        return {name: f"{len(value)} seeds: {', '.join(str(item) for item in value[:3])}, … (all in results.json)"}
    return {name: list(value) if isinstance(value, tuple) else value}


def _walk(data: Any, prefix: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if isinstance(data, Mapping):
        for key, value in data.items():
            if key in _NOT_SEEDS:
                continue
            name = f"{prefix}{key}"
            found.update(_leaves(value, name) if is_seed_name(key) else _walk(value, f"{name}."))
    elif isinstance(data, (list, tuple)):
        stem = prefix[:-1] if prefix.endswith(".") else prefix
        for index, item in enumerate(data):
            found.update(_walk(item, f"{stem}[{index}]."))
    return found


def _summarised(seeds: dict[str, Any]) -> dict[str, Any]:
    """``seeds`` with each group of more than MAX_LISTED_SEEDS list entries (``runs[0].seed``, ``runs[1].seed``, ...) as one row."""
    groups: dict[str, list[str]] = {}
    for name in seeds:
        groups.setdefault(_INDEX.sub("[*]", name), []).append(name)
    summary: dict[str, Any] = {}
    for pattern, members in groups.items():
        if len(members) <= MAX_LISTED_SEEDS:
            summary.update((name, seeds[name]) for name in members)
        else:
            shown = ", ".join(str(seeds[name]) for name in members[:3])
            summary[pattern] = f"{len(members)} seeds, one per entry: {shown}, … (all in results.json)"
    return summary


def seeds_in(data: Any) -> dict[str, Any]:
    """Every seed recorded in a results dict, at any depth, by its path in the file (``config.seed``, ``bound.seed``, ``runs[*].seed``).

    >>> seeds_in({"runs": [{"seed": s, "score": 0.5} for s in range(20)], "inclusion_seed": 4})["runs[*].seed"]
    '20 seeds, one per entry: 0, 1, 2, … (all in results.json)'
    >>> seeds_in({"epsilon": 1.0})
    {}
    """
    return _summarised(_walk(data, ""))


def conventions_in(data: Any) -> tuple[Convention, ...]:
    """The conventions a results dict records; ValueError naming the field when it is not a list of conventions."""
    items = data.get("conventions") if isinstance(data, Mapping) else None
    if items is None:
        return ()
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, Mapping) for item in items):
        raise ValueError(f"`run`: results field `conventions` must be a list of {{name, value, decided, evidence}} objects, got {items!r:.80}")
    try:
        return conventions_from_dicts(items)
    except (TypeError, ValueError) as error:
        raise ValueError(f"`run`: results field `conventions`: {error}") from None


def warnings_in(data: Any) -> tuple[CapturedWarning, ...]:
    """What libraries warned about while the audit ran (``captured_warnings``); ValueError naming the field when it is damaged.

    >>> warnings_in({"captured_warnings": [{"source": "opacus/privacy_engine.py:98", "category": "UserWarning", "message": "Secure RNG turned off"}]})[0].count
    1
    """
    items = data.get("captured_warnings") if isinstance(data, Mapping) else None
    if items is None:
        return ()
    try:
        if not isinstance(items, (list, tuple)):
            raise TypeError(f"got {items!r:.80}")
        return tuple(CapturedWarning(**dict(item)) for item in items)
    except (TypeError, ValueError) as error:
        raise ValueError(f"`run`: results field `captured_warnings` must be a list of {{source, category, message, count, note}} objects: {error}") from None


def provenance(data: Mapping[str, Any]) -> dict[str, Any]:
    """The ReportSection fields every family shares: configuration, seeds, conventions, captured warnings, versions and machine."""
    return {
        "configuration": data.get("config") or {},
        "seeds": seeds_in(data),
        "conventions": conventions_in(data),
        "captured_warnings": warnings_in(data),
        "versions": data.get("versions") or {},
        "machine": data.get("machine") or {},
    }
