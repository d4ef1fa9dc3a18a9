"""The runner: atomic JSON store, resume after a kill, local and Ray backends agree."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from privaudit.runner import RunStore, reusable_runs, run_all


def noisy_task(config: dict) -> dict:
    """A seeded task that records each call in a marker file."""
    marker = config.get("marker")
    if marker:
        with open(marker, "a", encoding="utf-8") as file:
            file.write(f"{config['index']}\n")
    rng = np.random.default_rng(np.random.SeedSequence((config["seed"], config["index"])))
    return {"index": config["index"], "value": float(rng.normal())}


def warning_task(config: dict) -> dict:
    """A task whose library warns and logs, as scikit-learn's optimiser does when it stops before converging."""
    import logging
    import warnings

    warnings.warn(f"not converged in run {config['index'] % 2}", UserWarning, stacklevel=1)
    logging.getLogger("somelibrary").warning("a log record")
    return {"index": config["index"]}


def failing_task(config: dict) -> dict:
    if config["index"] == 1:
        raise ValueError("boom")
    return {"index": config["index"]}


def crashing_task(config: dict) -> dict:
    if config["index"] == 1:
        raise TypeError("bug")
    return {"index": config["index"]}


def dying_task(config: dict) -> dict:
    if config["index"] == 1:
        os._exit(3)  # the worker process ends without a result
    return {"index": config["index"]}


def _configs(n, marker=None):
    return [{"index": i, "seed": 11, "marker": marker} for i in range(n)]


def _calls(marker):
    with open(marker, encoding="utf-8") as file:
        return sorted(int(line) for line in file)


def test_store_round_trip_is_atomic(tmp_path):
    store = RunStore(tmp_path / "runs")
    result = {"score": -1.25, "with_canary": True, "nested": {"a": [1, 2]}}
    store.save(7, result, config={"seed": 3})
    assert store.load(7) == result
    assert store.load_config(7) == {"seed": 3}
    assert store.done() == {7}
    assert os.listdir(tmp_path / "runs") == ["run-000007.json"]  # no temp file left behind
    assert json.loads((tmp_path / "runs" / "run-000007.json").read_text())["result"] == result
    with pytest.raises(KeyError):
        store.load(8)


def test_store_rejects_results_that_are_not_json(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(ValueError, match="JSON"):
        store.save(0, {"score": float("nan")})
    with pytest.raises(ValueError, match="JSON"):
        store.save(1, {"model": object()})
    assert store.done() == set()
    assert os.listdir(tmp_path) == []


def test_store_done_after_partial_runs(tmp_path):
    store = RunStore(tmp_path)
    for index in (0, 2, 5):
        store.save(index, {"index": index})
    (tmp_path / "notes.txt").write_text("not a run")
    assert store.done() == {0, 2, 5}
    assert list(store.load_all()) == [0, 2, 5]


def test_resume_runs_only_missing_runs(tmp_path):
    clean = [noisy_task(config) for config in _configs(6)]  # a clean, uninterrupted run

    marker = str(tmp_path / "calls.txt")
    configs = _configs(6, marker)
    store = RunStore(tmp_path / "resumed")
    run_all(noisy_task, configs[:3], store=store, max_workers=2)  # the job is "killed" after 3 runs
    assert _calls(marker) == [0, 1, 2]
    progress = []
    resumed = run_all(noisy_task, configs, store=store, max_workers=2, progress=lambda done, total: progress.append((done, total)))
    assert _calls(marker) == [0, 1, 2, 3, 4, 5]  # runs 0-2 were not run again
    assert sorted(progress) == [(4, 6), (5, 6), (6, 6)]
    assert resumed == clean
    assert store.done() == set(range(6))
    # a finished store runs nothing at all
    assert run_all(noisy_task, configs, store=store) == clean
    assert _calls(marker) == [0, 1, 2, 3, 4, 5]


def test_resume_reruns_a_run_whose_config_changed_and_never_mixes_it_in(tmp_path):
    store = RunStore(tmp_path)
    run_all(noisy_task, _configs(2), store=store, max_workers=1)
    changed = [_configs(2)[0], dict(_configs(2)[1], seed=12)]
    assert reusable_runs(store, changed) == {0}
    assert run_all(noisy_task, changed, store=store, max_workers=1) == [noisy_task(config) for config in changed]
    assert store.load_config(1) == changed[1]


def test_local_backend_matches_in_process(tmp_path):
    configs = _configs(5)
    expected = [noisy_task(config) for config in configs]
    assert run_all(noisy_task, configs, store=RunStore(tmp_path), max_workers=2) == expected


def test_failure_keeps_finished_runs_and_names_the_run(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(RuntimeError, match="run 1 failed: TypeError: bug"):
        run_all(crashing_task, _configs(3), store=store, max_workers=1)
    assert 0 in store.done() and 1 not in store.done()


def test_a_value_error_is_the_tasks_own_message(tmp_path):
    """Bad input that the task names (a ValueError) reaches the caller unchanged: the CLI prints it as its one line."""
    store = RunStore(tmp_path)
    with pytest.raises(ValueError, match="^boom$"):
        run_all(failing_task, _configs(3), store=store, max_workers=1)
    assert 0 in store.done() and 1 not in store.done()


def test_a_dead_worker_is_named_and_the_pool_is_joined_before_the_error_reaches_the_caller(tmp_path):
    """The caller (the CLI) exits right after this error: the pool's manager thread must have ended by then, or CPython 3.11's exit hook
    can write to the pipe that thread closes, and a traceback follows the CLI's one error line."""
    import concurrent.futures.process
    import threading

    from privaudit.runner.local import WorkerDiedError

    with pytest.raises(WorkerDiedError, match=r"a worker process died while running the task \(run 1\)"):
        run_all(dying_task, _configs(3), store=RunStore(tmp_path), max_workers=1)
    managers = [thread for thread in threading.enumerate() if isinstance(thread, concurrent.futures.process._ExecutorManagerThread)]
    assert managers == []  # joined, so every wakeup pipe it owned is closed before the interpreter's exit hook runs


def test_bad_arguments(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(ValueError, match="`backend`"):
        run_all(noisy_task, _configs(1), store=store, backend="dask")
    with pytest.raises(ValueError, match="`max_workers`"):
        run_all(noisy_task, _configs(1), store=store, max_workers=0)
    with pytest.raises(ValueError, match="`index`"):
        store.save(-1, {})


def test_ray_backend_matches_local(tmp_path):
    ray = pytest.importorskip("ray")
    configs = [{"index": i, "seed": 5} for i in range(4)]
    local = run_all(noisy_task, configs, store=RunStore(tmp_path / "local"), max_workers=2)
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": os.path.dirname(__file__)}})
    try:
        store = RunStore(tmp_path / "ray")
        assert run_all(noisy_task, configs, store=store, backend="ray") == local
        assert store.done() == set(range(4))
    finally:
        ray.shutdown()


def test_local_workers_end_after_run_all_returns(tmp_path):
    import multiprocessing
    import time

    results = run_all(noisy_task, _configs(3), store=RunStore(tmp_path), max_workers=2)
    assert results == [noisy_task(config) for config in _configs(3)]
    # the pool is shut down without waiting: its workers exit on their own, none is left behind
    deadline = time.monotonic() + 60
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def test_workers_library_warnings_reach_the_callers_capture_not_the_store(tmp_path, capfd):
    from privaudit._core.capture import capture_library_output

    with capture_library_output() as captured:
        results = run_all(warning_task, _configs(3), store=RunStore(tmp_path), max_workers=2)
    assert results == [{"index": index} for index in range(3)]  # the warnings are not part of a result
    counts = {(item.category, item.message): item.count for item in captured.items}
    assert counts == {("UserWarning", "not converged in run 0"): 2, ("UserWarning", "not converged in run 1"): 1, ("WARNING", "a log record"): 3}
    assert "not converged" not in capfd.readouterr().err  # nothing printed by the workers
    assert all("_library_warnings" not in json.loads(path.read_text()) for path in tmp_path.glob("run-*.json"))
