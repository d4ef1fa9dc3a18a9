"""``privaudit bound`` imports only what it uses, and what replaced scipy.stats on its path gives scipy.stats' numbers.

Oracles: scipy.stats itself (``norm``, ``rankdata``, ``beta``), brute force
over all pairs for the AUC, and the bound computed in process for the
command's output. Which modules a command imports is read from
``sys.modules`` in a fresh interpreter; no timing is asserted here (the
whole-process times are in benchmarks/cli_startup.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import typer
from scipy import special, stats

import privaudit
from privaudit.cli import app
from privaudit.cli.app import MODULE_OF_COMMAND
from privaudit.stats.families import GaussianDP
from privaudit.stats.metrics import roc_auc
from privaudit.stats.tradeoff import tradeoff_gdp

SRC = Path(privaudit.__file__).resolve().parents[1]

PROBE = """
import json, sys
from privaudit.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
heavy = ("scipy.stats", "scipy.optimize", "privaudit.audits.registry", "privaudit.cli.audit", "privaudit.cli.runs", "dp_accounting", "pydantic", "jsonschema")
sys.stderr.write("PROBE " + json.dumps({"code": code, "imported": [name for name in heavy if name in sys.modules]}) + "\\n")
"""


def test_bound_imports_neither_scipy_stats_nor_scipy_optimize_nor_the_audit_machinery(tmp_path):
    rng = np.random.default_rng(7)
    in_scores, out_scores = rng.normal(1.0, 1.0, 3000), rng.normal(0.0, 1.0, 3000)
    np.savetxt(tmp_path / "in.txt", in_scores)
    np.savetxt(tmp_path / "out.txt", out_scores)
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "bound", "--in", str(tmp_path / "in.txt"), "--out", str(tmp_path / "out.txt"), "--json"],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    probe = json.loads(done.stderr.split("PROBE ", 1)[1])
    assert probe == {"code": 0, "imported": []}
    # the command's bound is the library's, computed here in full
    expected = privaudit.epsilon_lower_bound(np.loadtxt(tmp_path / "in.txt"), np.loadtxt(tmp_path / "out.txt"), delta=1e-5, seed=0)
    assert json.loads(done.stdout)["epsilon"] == expected.epsilon


def test_the_app_registers_every_command_once_read():
    group = typer.main.get_command(app)
    assert set(MODULE_OF_COMMAND) <= set(group.commands)
    assert {"dpsgd", "one-run", "panoramia"} <= set(group.commands["audit"].commands)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_roc_auc_is_the_rank_sum_statistic_and_the_pair_count(seed):
    rng = np.random.default_rng(seed)
    in_scores, out_scores = np.round(rng.normal(0.5, 1.0, 700), 1), np.round(rng.normal(0.0, 1.0, 900), 1)  # many ties
    ranks = stats.rankdata(np.concatenate([in_scores, out_scores]))
    rank_sum = (ranks[: in_scores.size].sum() - in_scores.size * (in_scores.size + 1) / 2.0) / (in_scores.size * out_scores.size)
    pairs = (np.sum(in_scores[:, None] > out_scores[None, :]) + 0.5 * np.sum(in_scores[:, None] == out_scores[None, :])) / (in_scores.size * out_scores.size)
    assert roc_auc(in_scores, out_scores) == rank_sum == pytest.approx(pairs, abs=1e-15)


def test_normal_and_beta_quantiles_are_scipy_stats_bit_for_bit():
    rng = np.random.default_rng(3)
    fpr, fnr = np.concatenate([[0.0, 1.0, 1e-300], rng.random(5000)]), np.concatenate([[1.0, 0.0, 0.5], rng.random(5000)])
    expected_mu = np.maximum(stats.norm.isf(fpr) - stats.norm.ppf(fnr), 0.0)
    np.testing.assert_array_equal(GaussianDP(1e-5).parameter_from_errors(fpr, fnr), expected_mu)
    alpha = rng.random(5000)
    np.testing.assert_array_equal(tradeoff_gdp(alpha, 1.3), stats.norm.cdf(stats.norm.isf(alpha) - 1.3))
    # the Bayesian posterior's beta quantiles and the Clopper-Pearson bounds: betaincinv is what beta.ppf computes
    a, b, level = rng.uniform(0.5, 5000, 5000), rng.uniform(0.5, 5000, 5000), rng.uniform(0.5, 1.0, 5000)
    np.testing.assert_array_equal(special.betaincinv(a, b, level), stats.beta.ppf(level, a, b))


def test_after_main_ran_one_command_the_app_still_offers_every_command(tmp_path):
    # in a fresh interpreter: main() loads the score commands only, then the app is read in full
    probe = (
        "import sys, typer\n"
        "from privaudit.cli import app, main\n"
        "try:\n    main(['bound', '--help'])\nexcept SystemExit:\n    pass\n"
        "loaded = 'privaudit.cli.audit' in sys.modules\n"
        "group = typer.main.get_command(app)\n"
        "sys.stderr.write('PROBE %s %s\\n' % (loaded, sorted(group.commands)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)}, check=False)
    line = done.stderr.split("PROBE ", 1)[1].strip()
    assert line.startswith("False ") and all(repr(name) in line for name in MODULE_OF_COMMAND)
