"""The local backend: a process pool (``spawn`` context) that saves each run as it finishes."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from collections.abc import Callable
from typing import Any

__all__ = ["call_task", "run_local"]


def call_task(task: Callable[[dict], dict], config: dict[str, Any]) -> dict[str, Any]:
    """Run ``task(config)`` in a worker, with PyTorch (if importable) limited to one thread.

    Several workers each running a multi-threaded PyTorch would oversubscribe
    the cores, so every run sets ``torch.set_num_threads(1)`` first.

    >>> call_task(dict, {"seed": 1})
    {'seed': 1}
    """
    try:
        import torch
    except ImportError:  # pragma: no cover - depends on the environment
        pass
    else:
        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)
    result = task(config)
    if not isinstance(result, dict):
        raise TypeError(f"the task must return a dict, got {type(result).__name__}")
    return result


def run_local(task, jobs: list[tuple[int, dict]], save: Callable[[int, dict], None], *, max_workers: int | None = None) -> None:
    """Run ``task`` on each (index, config) of ``jobs`` in spawned processes; ``save(index, result)`` as each finishes.

    On the first failure, runs not yet started are cancelled, runs already
    started are still saved as they finish, and a RuntimeError naming the
    failed run is raised from the worker's error.
    """
    if not jobs:
        return
    workers = min(max_workers or multiprocessing.cpu_count() or 1, len(jobs))
    context = multiprocessing.get_context("spawn")
    failure = None
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as executor:
        futures = {executor.submit(call_task, task, config): index for index, config in jobs}
        for future in concurrent.futures.as_completed(futures):
            if future.cancelled():
                continue
            index = futures[future]
            error = future.exception()
            if error is not None:
                if failure is None:
                    failure = (index, error)
                    for other in futures:
                        other.cancel()
                continue
            save(index, future.result())
    if failure is not None:
        index, error = failure
        raise RuntimeError(f"run {index} failed: {type(error).__name__}: {error}") from error
