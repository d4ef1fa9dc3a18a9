"""`privaudit audit dpsgd`: results.json and plots, --json, a caught bug, and bad input → exit 2, one stderr line, no output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from privaudit.audits.dpsgd.config import DPSGDAuditConfig, claimed_step_epsilon
from privaudit.cli import app

SMALL = {"num_steps": 10, "canaries_per_step": 50, "num_slots": 200}
PLOTS = ("observations.png", "tradeoff.png", "bound_vs_observations.png")
CONFIGS = Path(__file__).resolve().parents[1] / "configs"
DEFAULTS = Path(__file__).resolve().parents[1] / "src" / "privaudit" / "configs"


def _runner():
    try:  # click < 8.2 mixes stderr into stdout unless told not to
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def run(argv):
    """(exit code, stdout, stderr) through typer's CliRunner."""
    result = _runner().invoke(app, [str(arg) for arg in argv])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback would be a bug: surface it
    return result.exit_code, result.stdout, result.stderr


def write_config(directory: Path, name: str = "config.json", **values) -> Path:
    path = directory / name
    path.write_text(json.dumps({**SMALL, **values}))
    return path


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """One small correct run, shared: (config values, output directory, stdout)."""
    directory = tmp_path_factory.mktemp("dpsgd")
    config = write_config(directory, noise_multiplier=2.0)
    output = directory / "run"
    code, stdout, stderr = run(["audit", "dpsgd", "--config", config, "--output", output])
    assert code == 0, stderr
    return json.loads(config.read_text()), output, stdout


def test_writes_results_and_plots(audited):
    values, output, stdout = audited
    data = json.loads((output / "results.json").read_text())
    assert isinstance(data["flagged"], bool)
    assert data["claimed_step_epsilon"] == pytest.approx(claimed_step_epsilon(values["noise_multiplier"], 1e-5))
    assert data["num_in"] == 500
    assert data["config"]["noise_multiplier"] == 2.0 and data["config"]["num_steps"] == 10
    assert data["bound_vs_observations"] and data["bound_vs_observations"][-1]["num_in"] == 500
    for name in PLOTS:
        assert (output / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # only the four files, and no scratch directory left beside the output
    assert sorted(p.name for p in output.iterdir()) == sorted(("results.json", "report.html", *PLOTS))
    assert [p.name for p in output.parent.iterdir() if p.name.startswith(".")] == []
    assert "per-step" in stdout and "flagged" in stdout and "test accuracy" in stdout


def test_json_output_and_seed_override(tmp_path):
    config = write_config(tmp_path, noise_multiplier=2.0)
    code, stdout, stderr = run(["audit", "dpsgd", "--config", config, "--output", tmp_path / "out", "--seed", "7", "--json"])
    assert code == 0, stderr
    data = json.loads(stdout)
    assert data["claimed_step_epsilon"] == pytest.approx(claimed_step_epsilon(2.0, 1e-5))
    assert data["config"]["seed"] == 7
    assert json.loads((tmp_path / "out" / "results.json").read_text()) == data


def test_clip_after_averaging_is_flagged(tmp_path):
    config = write_config(tmp_path, bug="clip-after-averaging", canary_norm=100)
    code, stdout, stderr = run(["audit", "dpsgd", "--config", config, "--output", tmp_path / "out", "--json"])
    assert code == 0, stderr
    data = json.loads(stdout)
    assert data["flagged"] is True
    assert data["step_bounds"]["gdp_clopper_pearson"]["epsilon"] > data["claimed_step_epsilon"]


@pytest.mark.parametrize(
    ("values", "named"),
    [
        (None, "missing.json"),
        ({"canary_rate": 1.5}, "canary_rate"),
        ({"clip_norm": 0}, "clip_norm"),
        ({"noise_multiplier": -1}, "noise_multiplier"),
        ({"canary_kind": "spike"}, "canary_kind"),
        ({"canary_colour": "red"}, "canary_colour"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_output(tmp_path, values, named):
    config = tmp_path / "missing.json" if values is None else write_config(tmp_path, **values)
    output = tmp_path / "out"
    code, stdout, stderr = run(["audit", "dpsgd", "--config", config, "--output", output])
    assert code == 2
    assert stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and named in lines[0]
    assert not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if values is None else ["config.json"])


def test_without_config_the_embedded_default_runs_and_prints(tmp_path):
    code, stdout, stderr = run(["audit", "dpsgd", "--print-config", "--output", tmp_path / "out"])
    assert code == 0, stderr
    shipped = json.loads((DEFAULTS / "dpsgd.json").read_text())
    printed = json.loads(stdout)
    assert {key: printed[key] for key in shipped} == shipped and not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["dpsgd.json", "dpsgd_bug.json"])
def test_shipped_configs_load(name):
    config = DPSGDAuditConfig.from_json((DEFAULTS if name == "dpsgd.json" else CONFIGS) / name)
    assert (config.noise_multiplier, config.num_steps, config.canaries_per_step, config.num_slots) == (3.0023, 100, 100, 1000)
    assert (config.dataset, config.architecture, config.canary_norm, config.seed) == ("digits", "mlp", 100.0, 0)
    if name == "dpsgd_bug.json":
        assert (config.bug, config.noise_factor) == ("small-noise", 0.8255)
    else:
        assert (config.bug, config.noise_factor) == ("none", 1.0)


def test_table_shows_the_rank_bound_of_results_json_beside_clopper_pearson(audited, tmp_path):
    _, output, stdout = audited
    bounds = json.loads((output / "results.json").read_text())["step_bounds"]
    assert bounds["gdp_rank"]["kind"] == "approximate lower bound"
    lines = stdout.splitlines()
    exact = next(i for i, line in enumerate(lines) if "Clopper–Pearson" in line)
    rank = next(i for i, line in enumerate(lines) if "rank-based" in line)
    flagged = next(i for i, line in enumerate(lines) if "flagged" in line)
    assert exact < rank < flagged
    assert f"{bounds['gdp_rank']['epsilon']:.6g}" in lines[rank]
    # with q_c < 1 the observations are not two Gaussians: no rank bound, no row
    config = write_config(tmp_path, noise_multiplier=2.0, canary_rate=0.5)
    code, stdout, stderr = run(["audit", "dpsgd", "--config", config, "--output", tmp_path / "out"])
    assert code == 0, stderr
    assert "rank-based" not in stdout
    assert "gdp_rank" not in json.loads((tmp_path / "out" / "results.json").read_text())["step_bounds"]
