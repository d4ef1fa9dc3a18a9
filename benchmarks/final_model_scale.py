"""The final-model audit's training runs on the runner, killed with SIGKILL half-way and resumed, locally and on Ray: ``PYTHONPATH=src python benchmarks/final_model_scale.py [--runs 400] [--backends local,ray]``.

Each backend runs ``privaudit audit blackbox --init worst-case`` with ``--runs``
training runs (half with the canary) at 2 workers, three ways:

* uninterrupted, timed: ``runs_per_minute``;
* killed: started in its own process group, SIGKILLed (the command and every
  worker) once half the runs are stored, then the same command again. Checked:
  every stored run file is left as it was (inode, time and bytes), the rerun
  trains exactly the missing ones (``num_trained``), all ``--runs`` end up
  stored, and the resumed audit's numbers equal the uninterrupted one's;
* for the efficiency, the local backend also runs uninterrupted at 1 worker
  (after an untimed warm-up audit that loads the libraries from disk):
  efficiency = runs per minute at 2 workers / (2 × at 1 worker), for Ray
  against the same local 1-worker rate.

The runs are short on purpose (breast-cancer, 60 full-batch DP-SGD steps, a
few tenths of a second each), so the runner's cost per run (start-up, the
content-keyed store, the pool or Ray) shows; the tightness rows
(``benchmarks/tightness.py --only final-model``) time the heavy setting.
Writes ``benchmarks/results/final_model_scale.json`` (or ``--output``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_io import write_results  # benchmarks/results_io.py: the script's own folder is on sys.path

from privaudit._core.results import library_versions

ROOT = Path(__file__).resolve().parents[1]
CONFIG = {"dataset": "breast-cancer", "noise_multiplier": 0.5, "num_steps": 60, "seed": 3}
NUMBERS = ("epsilon_lower_bound", "epsilon_lower_bound_eps_delta", "mean_in_score", "mean_out_score", "num_in", "num_out")


def _command(config: Path, output: Path, workers: int, backend: str) -> list[str]:
    return [sys.executable, "-m", "privaudit", "audit", "blackbox", "--config", str(config), "--init", "worst-case", "--output", str(output),
            "--workers", str(workers), "--backend", backend, "--no-history", "--json"]  # fmt: skip


def _environment() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}


def _timed(config: Path, output: Path, workers: int, backend: str) -> tuple[dict, float]:
    started = time.perf_counter()
    done = subprocess.run(_command(config, output, workers, backend), capture_output=True, text=True, env=_environment(), check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout), time.perf_counter() - started


def _snapshot(runs: Path) -> dict[str, tuple]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in runs.glob("run-*.json")}


def _killed_and_resumed(config: Path, output: Path, backend: str, runs: int) -> dict:
    process = subprocess.Popen(
        _command(config, output, 2, backend), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_environment(), start_new_session=True
    )
    deadline = time.monotonic() + 1800
    try:
        while len(list((output / "runs").glob("run-*.json"))) < runs // 2:
            if process.poll() is not None:
                raise RuntimeError("the audit ended before it could be killed")
            if time.monotonic() > deadline:
                raise RuntimeError("half the runs did not finish in 30 minutes")
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the command and every worker it started
        process.wait()
    before = _snapshot(output / "runs")
    resumed, seconds = _timed(config, output, 2, backend)
    after = _snapshot(output / "runs")
    return {
        "stored_at_kill": len(before),
        "trained_on_resume": resumed["num_trained"],
        "stored_after": len(after),
        "stored_runs_untouched": all(after.get(name) == value for name, value in before.items()),
        "no_run_lost": len(after) == runs and resumed["num_trained"] == runs - len(before),
        "resume_seconds": round(seconds, 1),
        "numbers": {key: resumed[key] for key in NUMBERS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--backends", default="local,ray")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "final_model_scale.json")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "config.json"
        warm = Path(folder) / "warm.json"  # a first audit loads torch and the data from disk: no timed row should pay for that
        warm.write_text(json.dumps({**CONFIG, "num_models_per_side": 5}))
        _timed(warm, Path(folder) / "warm", 1, "local")
        config.write_text(json.dumps({**CONFIG, "num_models_per_side": args.runs // 2}))
        _, one_worker = _timed(config, Path(folder) / "local-1", 1, "local")
        for backend in args.backends.split(","):
            data, seconds = _timed(config, Path(folder) / f"{backend}-2", 2, backend)
            killed = _killed_and_resumed(config, Path(folder) / f"{backend}-killed", backend, args.runs)
            killed["numbers_equal_uninterrupted"] = killed.pop("numbers") == {key: data[key] for key in NUMBERS}
            rows.append(
                {
                    "backend": backend,
                    "runs": args.runs,
                    "seconds_2_workers": round(seconds, 1),
                    "runs_per_minute": round(60 * args.runs / seconds, 1),
                    "efficiency_vs_local_1_worker": round(one_worker / (2 * seconds), 3),
                    **killed,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    out = {
        "benchmark": "final_model_scale",
        "command": "PYTHONPATH=src python benchmarks/final_model_scale.py",
        "settings": vars(args) | {"output": str(args.output), "config": CONFIG},
        "local_1_worker_seconds": round(one_worker, 1),
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
        "load_average_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "versions": library_versions(),
    }
    write_results(out, args.output)


if __name__ == "__main__":
    main()
