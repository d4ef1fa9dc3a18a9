"""The mechanism audit's checks before any sampling: the claim, the relation, the datasets, a probe of the mechanism, the memory.

:func:`prepare` makes every check that can be made before the audit draws
its samples, so that bad input is refused (one line, exit status 2) before
any work: the claim (the config's: the user's ``epsilon``/``rho`` and
``delta``; a mechanism's own ``claim`` attribute is evidence, named in a
warning, never the yardstick: :mod:`privaudit._core.stated_claims`),
the neighbouring relation (the given pair's, the config's, or the
mechanism's ``neighbouring`` attribute), the datasets, the mechanism's
output on ``PROBE_SIZE`` samples per dataset, and the memory the budget needs.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._core.conventions import Convention, checked, default, explicit
from ..._core.resources import check_memory
from ..._core.stated_claims import missing_claim, stated_warning
from ..._core.validation import as_real_array, check_choice
from ...mechanisms.data import read_dataset
from ...mechanisms.examples import DEFAULT_DATASET
from ...mechanisms.neighbours import RELATIONS, check_pair, widened_domain
from ...mechanisms.sampling import load_mechanism, probe

if TYPE_CHECKING:
    from .config import MechanismAuditConfig

__all__ = ["Prepared", "prepare"]


@dataclasses.dataclass(frozen=True, eq=False)
class Prepared:
    """What every check before sampling produced."""

    mechanism: Any
    dataset: np.ndarray
    neighbour: np.ndarray | None
    relation: str
    shape: tuple[int, ...]
    low: np.ndarray
    high: np.ndarray
    given_pair: tuple[tuple[float, ...], str] | None
    claim: Any
    conventions: tuple[Convention, ...]
    warnings: tuple[str, ...] = ()


def _claim(config: MechanismAuditConfig, mechanism: Any) -> tuple[Any, Convention, tuple[str, ...]]:
    """The claim under test: the user's (``epsilon``/``rho`` and ``delta``), and a warning when the mechanism states another of itself.

    The mechanism's own ``claim`` attribute is never the yardstick: without a
    user's claim the audit is refused, naming what the mechanism states.
    """
    if config.epsilon is None and config.rho is None:
        raise ValueError(missing_claim(mechanism, f"`mechanism` {config.mechanism}", epsilon_flag="`epsilon`", delta_flag="`delta`", rho_flag="`rho`"))
    claim = config.claim()
    warning = stated_warning(mechanism, config.mechanism, user_epsilon=claim.epsilon, user_delta=claim.delta, user_rho=claim.rho)
    return claim, explicit("claim", claim.describe(), "`epsilon`/`rho` and `delta` (--epsilon/--rho, --delta)"), () if warning is None else (warning,)


def _relation(config: MechanismAuditConfig, mechanism: Any, given: str | None) -> tuple[str, Convention]:
    name = "neighbouring relation"
    if given is not None:
        if config.relation is not None and config.relation != given:
            raise ValueError(
                f"`relation` {config.relation!r} does not match the given pair, which differs by one record {'added or removed' if given == 'add-remove' else 'replaced'}"
            )
        declared = getattr(mechanism, "neighbouring", None)
        if declared is not None and declared != given:  # its claim says nothing about pairs of the other relation
            raise ValueError(
                f"`neighbour`: {config.mechanism} claims its privacy under `neighbouring` = {declared!r}, but the given pair differs by one record "
                f"{'added or removed' if given == 'add-remove' else 'replaced'}; give a pair of its relation"
            )
        return given, checked(name, given, "the given neighbour differs from the dataset in one record")
    if config.relation is not None:
        return config.relation, explicit(name, config.relation, "`relation` (--relation)")
    declared = getattr(mechanism, "neighbouring", None)
    if declared is not None:
        check_choice(declared, "the mechanism's `neighbouring` attribute", RELATIONS)
        return str(declared), explicit(name, str(declared), f"the `neighbouring` attribute of {config.mechanism}")
    raise ValueError("`relation` must be 'add-remove' or 'replace' when no `neighbour` is given (the claim is made under one of them), got none")


def prepare(config: MechanismAuditConfig, *, mechanism: Any = None, dataset: Any = None, neighbour: Any = None) -> Prepared:
    """Every check that can be made before sampling; a ValueError naming the option when one fails.

    ``mechanism``, ``dataset`` and ``neighbour`` given as objects replace the
    config's import path and files (the Python API, :func:`audit_mechanism`).
    """
    if mechanism is None:
        mechanism = load_mechanism(config.mechanism, "--mechanism")
    elif not callable(mechanism):
        raise ValueError(f"`mechanism` must be a callable fn(dataset, size, rng), got {type(mechanism).__name__}")
    if dataset is not None:
        dataset = _records(dataset, "dataset")
    else:
        dataset = DEFAULT_DATASET.copy() if config.dataset is None else read_dataset(config.dataset, "--dataset")
    if neighbour is not None:
        neighbour = _records(neighbour, "neighbour")
    elif config.neighbour is not None:
        neighbour = read_dataset(config.neighbour, "--neighbour")
    conventions: list[Convention] = []
    given_pair, relation_seen = None, None
    if neighbour is not None:
        relation_seen, record, how = check_pair(dataset, neighbour, "--neighbour")
        given_pair = (record, how)
    claim, stated, warnings = _claim(config, mechanism)
    relation, convention = _relation(config, mechanism, relation_seen)
    conventions += [stated, convention]
    low, high, domain = _domain(config, mechanism, dataset)
    if neighbour is None:
        conventions.append(domain)
    shape = probe(mechanism, dataset, dataset if neighbour is None else neighbour, "--mechanism")
    conventions.append(checked("output shape", str(shape), "probed on both datasets: the same shape, finite numbers"))
    prepared = Prepared(mechanism, dataset, neighbour, relation, shape, low, high, given_pair, claim, tuple(conventions), warnings)
    check_memory(_memory(config, shape), f"`samples` + `pilot_samples` = {config.samples} + {config.pilot_samples} outputs of shape {shape} per side")
    return prepared


def _domain(config: MechanismAuditConfig, mechanism: Any, dataset: np.ndarray) -> tuple[np.ndarray, np.ndarray, Convention]:
    """The range of a record's fields that the search draws from: ``--domain``, the mechanism's declared ``domain``, else the data's range widened.

    The default reaches past the data's range by its width on each side, so
    that a forgotten clip shows; a declared clipping range is the claim's
    domain (records outside it are outside the claim).
    """
    name, size = "record domain", dataset[0].size
    declared = getattr(mechanism, "domain", None)
    if config.domain is not None:
        bounds, how = config.domain, "`domain` (--domain)"
    elif declared is not None:
        if not (isinstance(declared, (tuple, list)) and len(declared) == 2 and float(declared[0]) < float(declared[1])):
            raise ValueError(f"the `domain` attribute of `--mechanism` must be (low, high) with low < high, got {declared!r}")
        bounds, how = (float(declared[0]), float(declared[1])), f"the `domain` attribute of {config.mechanism} (its claim's domain)"
    else:
        low, high = widened_domain(dataset)
        evidence = "the dataset's range widened by its own width on each side, so that a record a forgotten clip lets through is tried"
        return low, high, default(name, f"[{low.min():g}, {high.max():g}]", evidence)
    low, high = np.full(size, float(bounds[0])), np.full(size, float(bounds[1]))
    return low, high, explicit(name, f"[{bounds[0]:g}, {bounds[1]:g}]", how)


def _records(values: Any, name: str) -> np.ndarray:
    """A copy of an in-memory dataset as a 1-D or 2-D array of finite numbers (integers kept)."""
    array = np.array(values, copy=True)
    checked_values = as_real_array(array, name)
    if checked_values.ndim not in (1, 2) or checked_values.shape[0] == 0 or not np.all(np.isfinite(checked_values)):
        raise ValueError(f"`{name}` must be a non-empty 1-D or 2-D array of finite numbers, got shape {checked_values.shape}")
    return array if array.dtype.kind in "iu" else checked_values


def _memory(config: MechanismAuditConfig, shape: tuple[int, ...]) -> int:
    outputs = 2 * (config.samples + config.pilot_samples) + 2 * config.search_samples
    return 3 * 8 * outputs * int(np.prod(shape, dtype=np.int64))  # samples, their features, their scores
