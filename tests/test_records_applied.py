"""results.json and the stored run records hold only what applied to the run, and wall_time_s is the run's own (issue 44, item 22).

Every family's tiny run is walked by ``tests/test_audit_contract.py`` (its
results hold only config fields, none of :data:`NOT_APPLIED`); here the mia
audit's three modes, with the user's table and training function, where the
embedded dataset, the built-in MLP's epochs and the other modes' settings
did not apply.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from privaudit.audits.mia.audit import run_mia_audit
from privaudit.audits.mia.config import MIAConfig
from privaudit.audits.mia.training import load_pool
from privaudit.report.runs import write_run

pytest.importorskip("sklearn")

#: what the user's model file settings, augmentations and --train's input form are without them (read from MIAConfig's fields)
WITHOUT_A_MODEL_FILE = {"model_kind", "model_output", "factory", "trusted"}
WITHOUT_AUGMENTATIONS = {"image_shape", "shift_pixels"}
#: what each mode does not use, judged from the modes' definitions (docs/guide-mia.md), not from the code under test
NOT_IN_MODE = {
    "attack": {"num_canaries", "num_trial_models", "delta", "claimed_epsilon", "claimed_delta"},
    "canary": {"num_trial_models"},
    "leave-one-out": {"num_canaries"},
}
#: the fields of every family's tiny run (the embedded default, no user files) that did not apply; checked by tests/test_audit_contract.py
NOT_APPLIED = {"mia": NOT_IN_MODE["attack"] | WITHOUT_A_MODEL_FILE | WITHOUT_AUGMENTATIONS | {"train_input"}}


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    data = load_pool("digits", None, None)
    path = tmp_path_factory.mktemp("pool") / "pool.npz"
    np.savez(path, x=data.x[:300], y=data.y[:300])
    return path


@pytest.mark.parametrize("mode", ["attack", "canary", "leave-one-out"])
def test_each_mode_records_only_what_applied(pool, tmp_path, mode):
    config = MIAConfig(mode=mode, data=str(pool), train="own_models.releases:release_private", num_references=4, num_canaries=40, num_trial_models=1)
    run = run_mia_audit(config, tmp_path / "runs", max_workers=1)
    data = write_run(tmp_path / "out", run)
    recorded = set(json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["config"])
    absent = NOT_IN_MODE[mode] | WITHOUT_A_MODEL_FILE | WITHOUT_AUGMENTATIONS | {"dataset", "epochs"}
    assert not recorded & absent, sorted(recorded & absent)
    assert recorded == set(data["config"]) and {"data", "train", "train_input", "num_references", "seed", "mode"} <= recorded
    records = sorted((tmp_path / "runs").glob("run-*.json"))
    assert len(records) == 4 + 1
    for path in records:
        stored = set(json.loads(path.read_text(encoding="utf-8"))["config"])
        assert not stored & ({"dataset", "epochs"} | NOT_IN_MODE[mode]), (path.name, sorted(stored))


class FakeClock:
    """``time.perf_counter`` of the mia audit, advanced by hand: what the audit does after training is made to take 100 s."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


def test_a_rerun_reusing_every_model_records_its_own_wall_time(pool, tmp_path, monkeypatch):
    import privaudit.audits.mia.audit as module

    config = MIAConfig(data=str(pool), train="own_models.releases:release_private", num_references=4)
    first = run_mia_audit(config, tmp_path / "runs", max_workers=1)
    assert first.result.num_trained == 5
    clock = FakeClock()
    monkeypatch.setattr(module, "time", clock)
    evaluate = module.evaluate

    def slow_evaluate(*args, **kwargs):  # the scoring of a rerun, after every model was reused
        clock.now += 100.0
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(module, "evaluate", slow_evaluate)
    rerun = run_mia_audit(config, tmp_path / "runs", max_workers=1)
    assert rerun.result.num_trained == 0  # every model reused: the table says so
    assert rerun.result.wall_time_s == 100.0  # the rerun's own time, not its (empty) training's
