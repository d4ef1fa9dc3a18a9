"""Run many independent, seeded jobs (one model each) locally or on Ray, resumably.

:func:`run_all` runs ``task(config)`` for every config, saving each result in
a :class:`RunStore` as soon as it finishes; runs already in the store are
skipped, so a killed job restarts where it stopped. Each config carries its
own seed, so a run gives the same result wherever and whenever it runs.

>>> import tempfile
>>> store = RunStore(tempfile.mkdtemp())
>>> run_all(dict, [{"seed": 0}, {"seed": 1}], store=store, max_workers=1)
[{'seed': 0}, {'seed': 1}]
>>> sorted(store.done())
[0, 1]
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from .._core.capture import record_elsewhere
from .._core.validation import check_choice, check_count
from .digests import input_digests
from .local import WARNINGS_KEY, RunsInterrupted, WorkerDiedError, call_task, run_local
from .store import RunStore

__all__ = [
    "BACKENDS",
    "ResumePlan",
    "RunStore",
    "RunsInterrupted",
    "WorkerDiedError",
    "call_task",
    "check_backend",
    "input_digests",
    "resume_plan",
    "reusable_runs",
    "run_all",
]

BACKENDS = ("local", "ray")


def check_backend(backend: str, max_workers: int | None, address: str | None) -> None:
    """Refuse runner settings that do not fit together, naming the option; Ray must be installed for ``--backend ray``.

    >>> check_backend("local", 2, None)
    >>> check_backend("local", None, "auto")
    Traceback (most recent call last):
    ...
    ValueError: `--address` needs `--backend ray`, got --backend local
    """
    check_choice(backend, "--backend", BACKENDS)
    if max_workers is not None:
        check_count(max_workers, "--workers", minimum=1)
    if address is not None and backend != "ray":
        raise ValueError(f"`--address` needs `--backend ray`, got --backend {backend}")
    if backend == "ray":
        from .._core.extras import require

        require("ray", purpose="`--backend` ray")


def _normalised(config: Any) -> Any:
    return json.loads(json.dumps(config, sort_keys=True))


def _changed_keys(stored: Any, new: Any, prefix: str = "") -> list[str]:
    """The dotted keys where two stored configs differ (``inputs.train.helpers``: that module's source)."""
    if isinstance(stored, dict) and isinstance(new, dict):
        keys = sorted(set(stored) | set(new))
        return [key for name in keys for key in _changed_keys(stored.get(name), new.get(name), f"{prefix}{name}.")]
    return [] if stored == new else [prefix.rstrip(".")]


#: inputs of a run's key that are not a flag's file
_INPUT_NAMES = {"pool": "the shadow pool (the records of --train and --holdout it is drawn from)"}


def _what_changed(key: str) -> str:
    """A changed key in words: an input's contents, a module of the user's code, or a setting."""
    parts = key.split(".")
    if parts[0] == "inputs" and len(parts) >= 3:
        return f"the source of {'.'.join(parts[2:])!r} (--{parts[1]}'s code)"
    if parts[0] == "inputs" and len(parts) == 2:
        return _INPUT_NAMES.get(parts[1], f"the contents of --{parts[1]}")
    return f"the setting {parts[0]!r}"  # a nested setting (the encoder's fitted scales) by its name


@dataclasses.dataclass(frozen=True)
class ResumePlan:
    """Which stored runs are reused (their key, the whole config, is unchanged) and why the others run again.

    ``rerun`` maps what changed (in words) to how many stored runs it made stale.
    """

    reused: frozenset[int]
    rerun: dict[str, int]

    def explanation(self) -> str:
        """``"ran 8 stored runs again: the source of 'gen' (--generator's code) changed"``, or "" when none was stale."""
        if not self.rerun:
            return ""
        count = sum(self.rerun.values())
        reasons = sorted(self.rerun, key=lambda reason: (-self.rerun[reason], reason))
        shown = "; ".join(reasons[:3]) + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")
        return f"ran {count} stored run{'s' if count != 1 else ''} again: {shown}"


def resume_plan(store: RunStore, configs: list[dict]) -> ResumePlan:
    """The runs of ``store`` that :func:`run_all` reuses for ``configs``, and what changed for each stored run it runs again.

    >>> import tempfile
    >>> store = RunStore(tempfile.mkdtemp())
    >>> _ = run_all(dict, [{"seed": 0, "inputs": {"data": "aa"}}], store=store, max_workers=1)
    >>> resume_plan(store, [{"seed": 0, "inputs": {"data": "bb"}}]).explanation()
    'ran 1 stored run again: the contents of --data changed'
    """
    reused: set[int] = set()
    rerun: dict[str, int] = {}
    for index in sorted(store.done()):
        if index >= len(configs):
            continue
        stored, new = store.load_config(index), _normalised(configs[index])
        if stored is None or stored == new:  # None: stored without its config
            reused.add(index)
            continue
        changed = sorted({_what_changed(key) for key in _changed_keys(stored, new)}, key=lambda what: (what.startswith("the setting"), what))
        reason = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "") + " changed"
        rerun[reason] = rerun.get(reason, 0) + 1
    return ResumePlan(frozenset(reused), rerun)


def reusable_runs(store: RunStore, configs: list[dict]) -> set[int]:
    """The indices of ``configs`` whose run ``store`` holds with the same config: those :func:`run_all` reuses instead of running.

    >>> import tempfile
    >>> store = RunStore(tempfile.mkdtemp())
    >>> _ = run_all(dict, [{"seed": 0}, {"seed": 1}], store=store, max_workers=1)
    >>> sorted(reusable_runs(store, [{"seed": 0}, {"seed": 5}]))
    [0]
    """
    return set(resume_plan(store, configs).reused)


def run_all(
    task: Callable[[dict], dict],
    configs: list[dict],
    *,
    store: RunStore,
    backend: str = "local",
    max_workers: int | None = None,
    address: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    who: str = "the task",
) -> list[dict]:
    """Run ``task(config)`` for every config not yet in ``store``; return all results in index order.

    Parameters
    ----------
    task : callable
        A top-level (picklable) function ``task(config: dict) -> dict``
        returning a JSON-ready dict. Workers run it with PyTorch limited to
        one thread.
    configs : list of dict
        One JSON-ready config per run, each with its own seed; run ``i`` is
        ``configs[i]``.
    store : RunStore
        Where finished runs are saved (and found again on resume). A stored
        run is reused only when its config equals ``configs[i]`` (put the
        content hash of every input a run reads in its config:
        :func:`input_digests`); one whose config differs is run again and
        replaced, never mixed in.
    backend : {"local", "ray"}
        ``"local"``: a spawn-context process pool; ``"ray"``: Ray tasks.
    max_workers : int or None
        Worker processes (local) or CPUs of a new local Ray instance; default
        all cores.
    address : str or None
        Ray cluster address (``"auto"``, ``"ray://host:10001"``), ray only.
    progress : callable or None
        Called as ``progress(finished, total)`` after each saved run.
    who : str
        The user's code the task runs (e.g. "`--train` 'mytrain:train'"),
        named when a worker dies without a result.

    Ctrl-C stops the workers at once and raises
    :class:`~privaudit.runner.local.RunsInterrupted` (a KeyboardInterrupt)
    whose message says how many runs were kept in the store.
    """
    backend = check_choice(backend, "backend", BACKENDS)
    if max_workers is not None:
        max_workers = check_count(max_workers, "max_workers", minimum=1)
    if not isinstance(store, RunStore):
        raise ValueError(f"`store` must be a RunStore, got {type(store).__name__}")
    configs = list(configs)
    if not all(isinstance(config, dict) for config in configs):
        raise ValueError("`configs` must be a list of dicts")
    total = len(configs)

    done = reusable_runs(store, configs)
    jobs = [(index, config) for index, config in enumerate(configs) if index not in done]
    finished = len(done)

    def save(index: int, result: dict) -> None:
        nonlocal finished
        if WARNINGS_KEY in result:  # the worker's library warnings go to the caller's capture, not into the store
            result = dict(result)
            record_elsewhere(result.pop(WARNINGS_KEY))
        store.save(index, result, config=configs[index])
        finished += 1
        if progress is not None:
            progress(finished, total)

    try:
        if backend == "local":
            run_local(task, jobs, save, max_workers=max_workers, who=who)
        else:
            from .ray_backend import run_ray

            run_ray(task, jobs, save, max_workers=max_workers, address=address)
    except KeyboardInterrupt:
        raise RunsInterrupted(f"{finished} of {total} runs finished and are kept in {str(store.directory)!r}") from None
    return [store.load(index) for index in range(total)]
