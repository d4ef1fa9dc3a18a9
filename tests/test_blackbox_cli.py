"""`privaudit audit blackbox`: killed with SIGKILL mid-audit, it resumes without repeating finished runs and ends with an uninterrupted run's numbers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from privaudit.audits.blackbox.audit import run_blackbox_audit, run_configs, train_one
from privaudit.audits.blackbox.config import BlackBoxConfig
from privaudit.runner import RunStore

# 12 models of 60 full-batch steps: about 0.2 s each on one worker, so the audit is still running when 3 have finished
CONFIG = {"dataset": "breast-cancer", "noise_multiplier": 0.5, "num_steps": 60, "num_models_per_side": 6, "seed": 3}
TOTAL = 2 * CONFIG["num_models_per_side"]


def command(config: Path, output: Path, *extra) -> list[str]:
    return [sys.executable, "-m", "privaudit", "audit", "blackbox", "--config", str(config), "--output", str(output), "--workers", "1", "--no-history", *extra]


def snapshot(runs: Path) -> dict[str, tuple]:
    """Each finished run file's identity: inode, modification time and content (an atomic rewrite changes the inode)."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_text()) for p in runs.glob("run-*.json")}


def test_kill_and_resume_gives_the_uninterrupted_numbers(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}

    killed = tmp_path / "killed"
    process = subprocess.Popen(command(config, killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment, start_new_session=True)
    deadline = time.monotonic() + 240
    try:
        while len(list((killed / "runs").glob("run-*.json"))) < 3:
            assert process.poll() is None, "the audit ended before it could be killed"
            assert time.monotonic() < deadline, "no runs finished in time"
            time.sleep(0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the command and its worker processes
        process.wait()
    before = snapshot(killed / "runs")
    assert 3 <= len(before) < TOTAL
    assert not (killed / "results.json").exists()
    assert RunStore(killed / "runs").done() == {int(name[4:10]) for name in before}

    resumed = subprocess.run(command(config, killed, "--json"), capture_output=True, text=True, env=environment, check=False)
    assert resumed.returncode == 0, resumed.stderr
    after = snapshot(killed / "runs")
    assert len(after) == TOTAL
    assert {name: after[name] for name in before} == before  # finished runs were neither repeated nor rewritten
    resumed_data = json.loads(resumed.stdout)
    assert resumed_data["num_trained"] == TOTAL - len(before)

    # the uninterrupted audit, in this process: every run trained here, then bounded by the same code
    settings = BlackBoxConfig(**CONFIG)
    fresh_store = RunStore(tmp_path / "fresh")
    for index, run_config in enumerate(run_configs(settings)):
        fresh_store.save(index, train_one(run_config), config=run_config)
        assert fresh_store.load(index) == RunStore(killed / "runs").load(index)
    fresh = run_blackbox_audit(settings, tmp_path / "fresh").to_dict()
    for key in ("epsilon_lower_bound", "epsilon_lower_bound_eps_delta", "claimed_epsilon", "mean_in_score", "mean_out_score", "num_in", "num_out", "bound"):
        assert resumed_data[key] == json.loads(json.dumps(fresh[key])), key
    # results.json on disk is what was printed, and it follows the results schema
    on_disk = json.loads((killed / "results.json").read_text())
    assert on_disk == resumed_data and on_disk["schema_version"] == 1 and on_disk["audit"] == "blackbox"
    for path in killed.rglob("*.json"):
        json.loads(path.read_text(encoding="utf-8"))  # every file is JSON text: no pickle anywhere


def test_a_different_config_retrains_every_run_and_never_mixes_in_stored_ones(cli, tmp_path):
    small = BlackBoxConfig(**{**CONFIG, "num_steps": 2, "num_models_per_side": 5})
    store = RunStore(tmp_path / "out" / "runs")
    for index, run_config in enumerate(run_configs(small)):  # an earlier audit's finished runs
        store.save(index, train_one(run_config), config=run_config)
    changed = {**CONFIG, "num_steps": 2, "num_models_per_side": 5, "noise_multiplier": 0.7}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(changed))
    code, stdout, stderr = cli(["audit", "blackbox", "--config", config, "--output", tmp_path / "out", "--no-history"])
    assert code == 0, stderr
    assert json.loads((tmp_path / "out" / "results.json").read_text())["num_trained"] == 10 and "reused" not in stdout
    expected = run_configs(BlackBoxConfig(**changed))
    assert [store.load_config(index) for index in range(10)] == json.loads(json.dumps(expected))  # every stored run is the new config's
