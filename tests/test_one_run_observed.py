"""`audit one-run --train`: σ, q and the steps typed beside a training function are stated as fact only when observed.

The user's function (tests/own_models/opacus_train.py) trains with Opacus at
σ 0.94, q 0.05, 100 steps; the user typed σ 0.86, q 0.035 and 145 steps. A
function that reports its Opacus objects (report_opacus) and ran other values
than typed is refused in one line naming the options and the values that ran;
one that reports nothing gets every typed value labelled "as given, not observed".
"""

from __future__ import annotations

import json

import pytest

from privaudit.integrations.observed import AS_GIVEN, OBSERVED, observing_training, report_opacus, typed_settings_status

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")
pytest.importorskip("sklearn")

TYPED = {"threat_model": "black-box", "noise_multiplier": 0.86, "sampling_rate": 0.035}


def _run(cli, tmp_path, train: str, config: dict, steps: int):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    output = tmp_path / "run"
    flags = ["--config", path, "--canaries", "100", "--steps", str(steps), "--train", f"own_models.opacus_train:{train}"]
    code, stdout, stderr = cli(["audit", "one-run", "--output", output, "--no-history", *flags])
    return code, stdout, stderr, output


def test_a_function_that_ran_other_settings_is_refused_naming_them(cli, tmp_path):
    code, _, stderr, output = _run(cli, tmp_path, "train_reported", TYPED, 145)
    assert code == 2 and not output.exists()
    line = stderr.strip()
    assert "\n" not in line
    for typed in ("config `noise_multiplier` 0.86", "config `sampling_rate` 0.035", "`--steps` 145"):
        assert typed in line
    assert "σ 0.94, q 0.05, 100 steps" in line


def test_settings_nobody_observed_are_labelled_as_given(cli, tmp_path):
    code, stdout, stderr, output = _run(cli, tmp_path, "train_silent", TYPED, 145)
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text())
    assert data["model"]["settings"] == {key: AS_GIVEN for key in ("noise_multiplier", "sampling_rate", "num_steps")}
    assert "noise_multiplier 0.86 (as given, not observed)" in " ".join(stdout.split())
    assert "as given, not observed" in (output / "report.html").read_text()


def test_settings_that_ran_as_typed_are_observed(cli, tmp_path):
    code, _, stderr, output = _run(cli, tmp_path, "train_reported", dict(TYPED, noise_multiplier=0.94, sampling_rate=0.05), 100)
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text())
    assert set(data["model"]["settings"].values()) == {OBSERVED}


def test_the_status_of_typed_settings():
    from privaudit.integrations.opacus import OpacusSettings

    def ran(sigma, rate, steps):
        return OpacusSettings(sigma, 1.0, rate, steps, 10, "mean", "accountant")

    typed = {"noise_multiplier": ("config `noise_multiplier`", 0.86), "num_steps": ("`--steps`", 145)}
    assert typed_settings_status(typed, []) == {"noise_multiplier": AS_GIVEN, "num_steps": AS_GIVEN}
    assert typed_settings_status(typed, [ran(0.859375, 0.05, 145)]) == {"noise_multiplier": OBSERVED, "num_steps": OBSERVED}  # 0.86 typed to 2 digits
    with pytest.raises(ValueError, match=r"`--steps` 145 differ from what the training function ran: 144"):
        typed_settings_status(typed, [ran(0.86, 0.05, 144)])
    with pytest.raises(ValueError, match="reported 2 different Opacus runs"):
        typed_settings_status(typed, [ran(0.86, 0.05, 145), ran(0.9, 0.05, 145)])


def test_report_opacus_records_only_inside_an_audit():
    module = opacus.GradSampleModule(torch.nn.Linear(3, 2))
    optimizer = opacus.optimizers.DPOptimizer(torch.optim.SGD(module.parameters(), lr=0.1), noise_multiplier=1.3, max_grad_norm=1.0, expected_batch_size=4)
    accountant = opacus.accountants.RDPAccountant()
    accountant.history = [(1.3, 0.02, 7)]
    assert report_opacus(optimizer, accountant=accountant).steps == 7  # outside: read and returned, recorded nowhere
    with observing_training() as seen:
        report_opacus(optimizer, accountant=accountant)
    assert [(s.noise_multiplier, s.sample_rate, s.steps) for s in seen] == [(1.3, 0.02, 7)]
