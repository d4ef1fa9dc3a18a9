"""Black-box audit of DP-SGD (Tight Auditing, Algorithm 1) through the runner."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from privaudit.audits.blackbox.audit import _score, run_blackbox_audit, run_configs, train_one  # noqa: E402
from privaudit.audits.blackbox.config import BlackBoxConfig, BlackBoxResult
from privaudit.runner import RunStore  # noqa: E402


def test_mislabeled_canary_is_detected(tmp_path):
    config = BlackBoxConfig(noise_multiplier=0.5, num_steps=10, num_models_per_side=40, canary="mislabeled")
    result = run_blackbox_audit(config, tmp_path, max_workers=2)
    assert isinstance(result, BlackBoxResult)
    assert (result.num_in, result.num_out, result.num_trained) == (40, 40, 80)
    assert result.mean_in_score > result.mean_out_score
    for epsilon in (result.epsilon_lower_bound, result.epsilon_lower_bound_eps_delta):
        assert math.isfinite(epsilon) and epsilon >= 0
    assert result.epsilon_lower_bound <= result.claimed_epsilon
    assert result.threat_model == "black-box: final model only, canary loss/confidence"
    assert result.backend == "local" and result.models_per_minute > 0
    out = result.to_dict()
    assert out["config"]["num_models_per_side"] == 40 and out["bound"]["method"] == "gdp"

    # resuming a finished audit trains nothing and gives the same bound
    again = run_blackbox_audit(config, tmp_path, max_workers=2)
    assert again.num_trained == 0
    assert again.epsilon_lower_bound == result.epsilon_lower_bound


def test_train_one_is_deterministic_and_in_process_matches_store(tmp_path):
    config = BlackBoxConfig(noise_multiplier=1.0, num_steps=3, num_models_per_side=5, score="logit", canary="blank")
    runs = run_configs(config)
    first = train_one(runs[1])
    assert first == train_one(runs[1])
    assert first["with_canary"] is False and first["index"] == 1
    assert train_one(runs[0])["seed"] != train_one(runs[2])["seed"]  # each run has its own seed
    run_blackbox_audit(config, tmp_path, max_workers=1)
    assert RunStore(tmp_path).load(1) == pytest.approx(first)


def test_logit_score_is_stable():
    torch = pytest.importorskip("torch")
    logits = torch.tensor([[800.0, 0.0, -5.0]], dtype=torch.float64)
    assert _score(logits, 0, "logit") == pytest.approx(800.0 - np.log1p(np.exp(-5.0)), rel=1e-12)
    assert _score(logits, 1, "logit") == pytest.approx(-800.0, rel=1e-9)
    p = np.exp([1.0, 0.5]) / np.exp([1.0, 0.5]).sum()
    assert _score(torch.tensor([1.0, 0.5]), 0, "logit") == pytest.approx(np.log(p[0] / (1 - p[0])))
    assert _score(torch.tensor([1.0, 0.5]), 0, "loss") == pytest.approx(np.log(p[0]))


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"score": "margin"}, "score"),
        ({"num_models_per_side": 0}, "num_models_per_side"),
        ({"noise_multiplier": 0}, "noise_multiplier"),
        ({"dataset": "mnist"}, "dataset"),
        ({"architecture": "cnn"}, "architecture"),
        ({"canary": "random"}, "canary"),
        ({"delta": 0.0}, "delta"),
        ({"num_steps": 0}, "num_steps"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        BlackBoxConfig(**kwargs)


def test_bad_backend(tmp_path):
    with pytest.raises(ValueError, match="`backend`"):
        run_blackbox_audit(BlackBoxConfig(num_models_per_side=5, num_steps=1), tmp_path, backend="spark")
