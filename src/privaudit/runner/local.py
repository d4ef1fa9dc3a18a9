"""The local backend: a process pool (``spawn`` context) that saves each run as it finishes.

Workers die with the command: each one asks the kernel for SIGKILL when its
parent dies (``prctl(PR_SET_PDEATHSIG)`` on Linux) and also watches its
parent's PID from a thread (every other POSIX system), so ``kill -9`` on
``privaudit audit ...`` leaves no worker behind; the multiprocessing
resource tracker then sees its pipe close and exits too.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .._core.capture import capture_library_output
from .._core.resources import threads_per_worker, usable_cpus

__all__ = ["WARNINGS_KEY", "RunsInterrupted", "WorkerDiedError", "call_task", "die_with_parent", "run_local"]

#: The key under which :func:`call_task` returns what the libraries warned about in the worker (taken off before a run is saved).
WARNINGS_KEY = "_library_warnings"

_PR_SET_PDEATHSIG = 1


class WorkerDiedError(RuntimeError):
    """A worker process ended without a result (``os._exit``, ``sys.exit`` outside the task, a crash, the kernel's OOM killer)."""


class RunsInterrupted(KeyboardInterrupt):
    """Ctrl-C while runs were training: the workers are stopped and every finished run is kept in the store."""


WATCH_INTERVAL = 0.5  # seconds between two looks at the parent's PID


def _set_parent_death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its parent dies; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - an unusual libc
        return False


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(WATCH_INTERVAL)
        if os.getppid() != parent_pid:  # re-parented: the parent is gone
            os._exit(1)


def die_with_parent(parent_pid: int) -> None:
    """Make this process end when ``parent_pid``, its parent, dies (even by SIGKILL); a pool's initializer.

    Sets the parent-death signal (Linux), exits at once if the parent is
    already gone, and starts a daemon thread that exits the process when the
    parent changes (a fallback for other systems and for a parent that died
    before the signal was set).

    >>> import subprocess
    >>> code = "import os; from privaudit.runner.local import die_with_parent; die_with_parent(os.getppid()); print('alive')"
    >>> subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    'alive\\n'
    """
    _set_parent_death_signal()
    # Ctrl-C on a terminal reaches the whole process group: the parent alone decides, and stops the workers itself
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="privaudit-parent-watch", daemon=True).start()


def call_task(task: Callable[[dict], dict], config: dict[str, Any], threads: int = 1) -> dict[str, Any]:
    """Run ``task(config)`` in a worker, with PyTorch (if importable) and the BLAS/OpenMP pools loaded so far limited to ``threads``.

    Several workers each running a multi-threaded PyTorch or BLAS would
    oversubscribe the cores, so the runner gives each worker its share of
    the CPUs this process may use (:func:`~privaudit._core.resources.threads_per_worker`):
    ``torch.set_num_threads(threads)`` and ``threadpoolctl.threadpool_limits(threads)``
    (when installed).

    >>> call_task(dict, {"seed": 1})
    {'seed': 1}
    """
    try:
        import torch
    except ImportError:  # pragma: no cover - depends on the environment
        pass
    else:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn brings it
        limits: Any = contextlib.nullcontext()
    else:
        limits = threadpool_limits(threads)
    with limits, capture_library_output() as captured:  # the workers' library warnings reach the caller's record, not stderr
        result = task(config)
    if not isinstance(result, dict):
        raise TypeError(f"the task must return a dict, got {type(result).__name__}")
    if captured.items:
        result = {**result, WARNINGS_KEY: captured.items}
    return result


def _stop_workers(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Kill the pool's worker processes now, without waiting for their runs (Ctrl-C)."""
    for process in list(getattr(pool, "_processes", {}).values()):  # the executor's own table of its workers
        with contextlib.suppress(OSError, ValueError, AttributeError):
            process.kill()


def run_local(task, jobs: list[tuple[int, dict]], save: Callable[[int, dict], None], *, max_workers: int | None = None, who: str = "the task") -> None:
    """Run ``task`` on each (index, config) of ``jobs`` in spawned processes; ``save(index, result)`` as each finishes.

    On the first failure, runs not yet started are cancelled, runs already
    started are still saved as they finish, and the failure is raised: a
    ValueError from the task as itself (bad input, named by the task), any
    other exception as a RuntimeError naming the failed run, and a worker
    that died without a result as :class:`WorkerDiedError` naming ``who``.
    Ctrl-C kills the workers at once, without waiting for their runs, and
    raises :class:`RunsInterrupted`; the runs saved so far stay saved.
    """
    if not jobs:
        return
    workers = min(max_workers or usable_cpus(), len(jobs))  # the CPUs this process may use, not the machine's count
    threads = threads_per_worker(workers)
    context = multiprocessing.get_context("spawn")
    failure = None
    finished = False
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=die_with_parent, initargs=(os.getpid(),))
    try:
        futures = {pool.submit(call_task, task, config, threads): index for index, config in jobs}
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
        finished = failure is None
    except KeyboardInterrupt:
        for other in futures:
            other.cancel()
        _stop_workers(pool)
        raise RunsInterrupted() from None
    finally:
        # every run saved: the workers exit (seconds for a process that imported scikit-learn) while the caller goes
        # on to its attacks and report. On a failure or Ctrl-C the caller is about to exit, so the pool is joined first:
        # its manager thread closes a pipe that CPython 3.11's exit hook writes to without a lock (a race that printed
        # an "OSError: Bad file descriptor" traceback after the CLI's one error line)
        pool.shutdown(wait=not finished, cancel_futures=True)
    if failure is not None:
        index, error = failure
        if isinstance(error, concurrent.futures.process.BrokenProcessPool):
            raise WorkerDiedError(
                f"a worker process died while running {who} (run {index}), without a result: the code called os._exit, crashed, "
                "or the system killed it (out of memory?); the runs finished so far are kept"
            ) from error
        if isinstance(error, ValueError):
            raise error
        raise RuntimeError(f"run {index} failed: {type(error).__name__}: {error}") from error
