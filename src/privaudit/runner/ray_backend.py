"""The Ray backend: one remote task per run, collected with ``ray.wait`` so each run is saved as it finishes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.extras import require
from .local import call_task

__all__ = ["check_address", "require_ray", "run_ray"]


def require_ray():
    """Import Ray lazily, with an actionable error when it is missing."""
    return require("ray", purpose="the 'ray' backend")


def check_address(address: str | None, name: str = "--address", *, timeout: float = 3.0) -> None:
    """Refuse, within ``timeout`` seconds, a ``host:port`` (or ``ray://host:port``) where nothing accepts a connection.

    Ray itself retries an unreachable cluster for minutes before it fails;
    ``auto``, ``local`` and addresses without a port are left to Ray.

    >>> check_address("127.0.0.1:1")
    Traceback (most recent call last):
    ...
    ValueError: `--address` '127.0.0.1:1': nothing accepts a connection there (...); start the Ray cluster or check the address
    """
    import socket

    if address is None:
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return
    except (OSError, ValueError, OverflowError) as error:
        reason = f"no answer within {timeout:g} s" if isinstance(error, TimeoutError) else (getattr(error, "strerror", None) or str(error))
        raise ValueError(f"`{name}` {address!r}: nothing accepts a connection there ({reason}); start the Ray cluster or check the address") from None


def run_ray(
    task,
    jobs: list[tuple[int, dict]],
    save: Callable[[int, dict], None],
    *,
    max_workers: int | None = None,
    address: str | None = None,
) -> None:
    """Run ``task`` on each (index, config) of ``jobs`` as Ray tasks; ``save(index, result)`` as each finishes.

    Ray is started with ``ray.init(address=address, num_cpus=max_workers)``
    when it is not initialised yet (``num_cpus`` only for a new local
    instance), and shut down again at the end in that case. An already
    initialised Ray (e.g. a cluster the caller connected to) is used as is.
    On the first failure the remaining runs are cancelled and a RuntimeError
    naming the failed run is raised.

    A local instance started here dies with the command even on ``kill -9``:
    Ray ties its servers and workers to the driver (fate sharing), and its
    dashboard and runtime-env agents exit when they find the raylet gone,
    within about a minute (``tests/test_orphans.py``, opt-in with
    ``PRIVAUDIT_SLOW_TESTS=1``). A cluster given by ``address`` is not ours
    and is left running; only our tasks on it end with the driver.
    """
    if not jobs:
        return
    ray = require_ray()
    started = False
    if not ray.is_initialized():
        options: dict[str, Any] = {"address": address}
        if address is None:
            options.update(num_cpus=max_workers, include_dashboard=False)
        ray.init(**options)
        started = True
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(call_task)
        task_ref = ray.put(task)
        pending = {remote.remote(task_ref, config): index for index, config in jobs}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as error:
                    for other in pending:
                        ray.cancel(other)
                    raise RuntimeError(f"run {index} failed: {type(error).__name__}: {error}") from error
                save(index, result)
    finally:
        if started:
            ray.shutdown()
