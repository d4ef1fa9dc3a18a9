"""`audit one-run --train`: the user's claim is the claim, σ/10 after make_private is flagged, --data is the user's table, and `train` in a config works.

The user's Opacus function (tests/own_models/opacus_train.py) trains at
σ 0.94, q 0.05, 100 steps: ε ≈ 3.99 at δ = 1e-5, so a claim of 4.5 holds;
``train_sigma_tenth`` divides σ by 10 after make_private and reports it.
A one-run black-box bound on 100 canaries is far too weak to show either,
so the evidence (the σ that ran against σ_min, the least σ the claim allows
at the q and T that ran) is what must flag the second.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli, subprocess_env

from privaudit.stats.conversions import gaussian_epsilon
from privaudit.stats.dpsgd_claims import least_noise_for_claim

pytest.importorskip("torch")
pytest.importorskip("sklearn")

CLAIM = 4.5
RAN = {"threat_model": "black-box", "sampling_rate": 0.05}


def _opacus_run(tmp_path, train: str, sigma: float):
    pytest.importorskip("opacus")
    config = tmp_path / f"{train}.json"
    config.write_text(json.dumps(dict(RAN, noise_multiplier=sigma)))
    output = tmp_path / train
    argv = ["audit", "one-run", "--config", config, "--canaries", "100", "--steps", "100", "--train", f"own_models.opacus_train:{train}"]
    code, stdout, stderr = run_cli([*argv, "--claimed-epsilon", CLAIM, "--output", output, "--no-history"])
    assert code == 0, stderr
    return json.loads((output / "results.json").read_text()), " ".join(stdout.split())


def test_sigma_divided_after_make_private_is_flagged_with_its_cause_and_the_users_claim_is_the_claim(tmp_path):
    sigma_min = least_noise_for_claim(CLAIM, 1e-5, sampling_prob=0.05, num_steps=100)
    assert 0.094 < sigma_min < 0.94  # the claim holds at 0.94 and fails at 0.094 (lower end of the bisection: at most the exact least σ)
    assert gaussian_epsilon(0.94, 1e-5, sampling_prob=0.05, num_steps=100) < CLAIM  # dp_accounting's PLD, pessimistic: the claim is true

    bug, stdout = _opacus_run(tmp_path, "train_sigma_tenth", 0.094)
    assert bug["claimed_epsilon"] == CLAIM and bug["claim_verdict"]["claim"] == {"epsilon": CLAIM, "delta": 1e-5, "quantity": "end-to-end", "source": "user"}
    assert bug["flagged"] and bug["bound"]["epsilon"] < CLAIM  # flagged by the evidence, not by the weak bound
    assert bug["model"]["observed"] == {"noise_multiplier": pytest.approx(0.094), "sampling_rate": 0.05, "num_steps": 100}
    [finding] = bug["findings"]
    assert finding.startswith("σ observed 0.094 (the optimizer's noise_multiplier, reported by --train") and f"σ ≥ {sigma_min:.4g}" in finding
    assert "q = 0.05 and T = 100" in finding and "lowered after make_private" in finding
    assert bug["accountant_epsilon"] is None  # not computed below σ_min: the finding says it, and that PLD takes minutes
    assert "finding (flags the run)" in stdout and "flagged (bound exceeds the claim, or a finding) │ yes" in stdout

    correct, stdout = _opacus_run(tmp_path, "train_reported", 0.94)
    assert correct["claimed_epsilon"] == CLAIM and not correct["flagged"] and correct["findings"] == []
    assert correct["accountant_epsilon"] == pytest.approx(gaussian_epsilon(0.94, 1e-5, sampling_prob=0.05, num_steps=100))
    assert "accountant's ε for the config's settings (evidence" in stdout


def test_a_typed_sigma_nobody_observed_warns_and_flags_nothing():
    """Typed values may be the config's defaults: below σ_min they warn and say how to have the σ that ran checked."""
    from privaudit.audits.one_run.config import OneRunAuditConfig
    from privaudit.audits.one_run.evidence import noise_evidence
    from privaudit.stats.verdict import Claim

    config = OneRunAuditConfig(threat_model="black-box", train="m:f", noise_multiplier=0.5, sampling_rate=1.0, num_steps=1)
    findings, warnings, computed = noise_evidence(config, Claim(4.0, 1e-5), None)
    assert findings == () and not computed and "as given, not observed" in warnings[0] and "report_opacus" in warnings[0]
    # one full-batch step is exactly (1/σ)-GDP: σ_min for ε = 4 is 1.081 (closed form: tests/test_opacus_verdict.py), and 1.2 meets it
    assert noise_evidence(
        OneRunAuditConfig(threat_model="black-box", train="m:f", noise_multiplier=1.2, sampling_rate=1.0, num_steps=1), Claim(4.0, 1e-5), None
    ) == ((), (), True)
    own = OneRunAuditConfig(noise_multiplier=0.5, sampling_rate=1.0, num_steps=1)
    findings, warnings, computed = noise_evidence(own, Claim(4.0, 1e-5), None)  # privaudit's own DP-SGD ran σ: a finding
    assert "privaudit's DP-SGD ran" in findings[0] and warnings == () and not computed
    assert noise_evidence(own, None, None) == ((), (), True)  # no claim, nothing to hold σ against


def _table(folder):
    """A 3-class CSV (label column 'kind' in the middle), features far apart per class."""
    rng = np.random.default_rng()
    y = np.arange(90) % 3
    x = rng.normal(size=(90, 4)) + 5.0 * y[:, None]
    header = "a,kind,b,c,d"
    rows = [header] + [",".join([repr(float(r[0])), str(label), *(repr(float(v)) for v in r[1:])]) for r, label in zip(x, y, strict=True)]
    (folder / "pool.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return x.astype(np.float32), y


def _module(folder, logs=None) -> str:
    """A module in ``folder`` whose fn(x_train, y_train, *, seed) returns a 1-nearest-neighbour memoriser (and saves what it saw into ``logs``)."""
    name = f"memo_{uuid.uuid4().hex}"
    save = f"    np.savez({str(logs)!r} + '/seen.npz', x=x_train, y=y_train)\n" if logs else ""
    (folder / f"{name}.py").write_text(
        "import numpy as np\n\n\nclass Memoriser:\n"
        "    def __init__(self, x, y):\n        self.x, self.y, self.k = x, y, int(y.max()) + 1\n\n"
        "    def predict_proba(self, x):\n"
        "        out = np.full((len(x), self.k), 0.01 / (self.k - 1))\n"
        "        out[np.arange(len(x)), self.y[((x[:, None, :] - self.x[None]) ** 2).sum(-1).argmin(1)]] = 0.99\n"
        "        return out\n\n\n"
        "def fn(x_train, y_train, *, seed):\n" + save + "    return Memoriser(x_train, y_train)\n",
        encoding="utf-8",
    )
    return name


def test_the_training_function_trains_on_the_users_table_with_the_canaries_as_brute_force_says(tmp_path, monkeypatch):
    features, labels = _table(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    module = _module(tmp_path, logs)
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["audit", "one-run", "--threat-model", "black-box", "--canaries", "20", "--train", f"{module}:fn", "--data", tmp_path / "pool.csv"]
    code, _, stderr = run_cli([*argv, "--label-col", "kind", "--output", tmp_path / "out", "--no-history"])
    assert code == 0, stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["config"]["data"] == str(tmp_path / "pool.csv") and data["config"]["label_col"] == "kind" and "dataset" not in data["config"]
    seen = np.load(logs / "seen.npz")
    known = {row.tobytes(): label for row, label in zip(features, labels, strict=True)}
    wrong = [known[row.tobytes()] != label for row, label in zip(seen["x"], seen["y"], strict=True)]  # KeyError: a row not in the user's table
    assert sum(wrong) == data["num_in"] and len(seen["y"]) == data["model"]["num_train"]  # the included canaries, relabelled, and nothing else
    assert data["model"]["num_train"] + data["model"]["num_test"] + data["num_canaries"] - data["num_in"] == len(labels)
    # brute force: the memoriser gives an included canary (its own nearest row) its wrong label, 0.99; an excluded one gets its nearest
    # training row's label, its true class unless that row is another canary relabelled the same way
    scores, member = np.array(data["observations"]), np.array(data["included"])
    assert np.allclose(scores[member], np.log(0.99))
    assert np.all(np.isclose(scores[~member], np.log(0.005)) | np.isclose(scores[~member], np.log(0.99)))


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--label-col", "kind"], "`--label-col` needs `--data`"),
        (["--data", "pool.txt"], "`--data` must be a .npz, .csv or .parquet file"),
        (["--data", "missing.csv"], "`--data`: cannot read"),
        (["--data", "pool.csv", "--label-col", "nope"], "`--label-col`: "),
    ],
)
def test_bad_data_is_one_line_before_the_training_function_runs(tmp_path, monkeypatch, flags, match):
    _table(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    module = _module(tmp_path, logs)
    monkeypatch.syspath_prepend(str(tmp_path))
    flags = [str(tmp_path / flag) if flag.endswith((".csv", ".txt")) else flag for flag in flags]
    output = tmp_path / "out"
    argv = ["audit", "one-run", "--threat-model", "black-box", "--canaries", "20", "--train", f"{module}:fn", *flags, "--output", output, "--no-history"]
    assert_refused(argv, output, match)
    assert not any(logs.iterdir())


@pytest.mark.parametrize("where", ["flag", "config"])
def test_train_in_a_config_finds_the_module_of_the_working_directory_as_the_flag_does(tmp_path, where):
    """``python -m privaudit`` takes the working directory off the front of sys.path; --train's module there must be found either way."""
    module = _module(tmp_path)
    config = {"threat_model": "black-box", "num_canaries": 20, **({"train": f"{module}:fn"} if where == "config" else {})}
    (tmp_path / "config.json").write_text(json.dumps(config))
    argv = [sys.executable, "-m", "privaudit", "audit", "one-run", "--config", "config.json", "--output", "out", "--no-history"]
    argv += ["--train", f"{module}:fn"] if where == "flag" else []
    done = subprocess.run(argv, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "out" / "results.json").read_text())["model"]["train"] == f"{module}:fn"
