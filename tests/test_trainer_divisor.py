"""DP-SGD's divisor is the design's expected batch size, never the realised data's: its size would tell how many canaries are in.

Opacus divides the noisy sum by q times the dataset size it was given. Where
privaudit's own trainer trains on data whose size depends on the inclusion
draw (the one-run black-box audit appends the included canaries), the
divisor is fixed by the design: q times (the data kept + p times the
canaries), the same for every draw.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privaudit.audits.one_run import audit as one_run_audit  # noqa: E402
from privaudit.audits.one_run.config import OneRunAuditConfig  # noqa: E402
from privaudit.training.dpsgd import DPSGDConfig, ReferenceDPSGD  # noqa: E402


def test_expected_size_sets_the_divisor_and_is_checked():
    model = torch.nn.Linear(3, 2)
    x, y = torch.randn(40, 3), torch.randint(0, 2, (40,))
    config = DPSGDConfig(noise_multiplier=1.0, sampling_rate=0.25)
    assert ReferenceDPSGD(model, x, y, config).denominator == pytest.approx(10.0)
    assert ReferenceDPSGD(model, x, y, config, expected_size=44.5).denominator == pytest.approx(0.25 * 44.5)
    with pytest.raises(ValueError, match="expected_size"):
        ReferenceDPSGD(model, x, y, config, expected_size=0)


def test_the_one_run_black_box_divisor_does_not_depend_on_the_inclusion_draw(monkeypatch):
    seen: list[tuple[int, float]] = []

    class Recording(ReferenceDPSGD):
        def __init__(self, model, x, y, config, **kwargs):
            super().__init__(model, x, y, config, **kwargs)
            seen.append((len(self.x), self.denominator))

    draws = iter([np.arange(40) < k for k in (10, 20, 30)])  # the same canaries, three draws putting 10, 20 and 30 in
    monkeypatch.setattr(one_run_audit, "ReferenceDPSGD", Recording)
    monkeypatch.setattr(one_run_audit, "draw_inclusion", lambda *args: next(draws))
    config = OneRunAuditConfig(threat_model="black-box", num_canaries=40, num_steps=1, seed=0, sampling_rate=0.1)
    for _ in range(3):
        one_run_audit.run_one_run_audit(config)
    (small, first), (_, second), (large, third) = seen
    assert large - small == 20  # the draws put 20 more canaries in the training data
    assert first == second == third == pytest.approx(0.1 * (small - 10 + 0.5 * 40))  # q (data kept + p m): the design's, every draw


def test_the_blackbox_runs_with_and_without_the_canary_divide_by_the_same_size(monkeypatch):
    from privaudit.audits.blackbox import audit as blackbox_audit
    from privaudit.audits.blackbox.config import BlackBoxConfig

    seen: dict[bool, tuple[int, float]] = {}

    class Recording(ReferenceDPSGD):
        def __init__(self, model, x, y, config, **kwargs):
            super().__init__(model, x, y, config, **kwargs)
            seen[len(seen) == 1] = (len(self.x), self.denominator)

    monkeypatch.setattr(blackbox_audit, "ReferenceDPSGD", Recording)
    runs = blackbox_audit.run_configs(BlackBoxConfig(num_steps=1))
    without = next(dict(run) for run in runs if not dict(run)["with_canary"])
    with_canary = next(dict(run) for run in runs if dict(run)["with_canary"])
    blackbox_audit.train_one(without)
    blackbox_audit.train_one(with_canary)
    (size_out, divisor_out), (size_in, divisor_in) = seen[False], seen[True]
    assert size_in == size_out + 1  # the canary is one more training record
    assert divisor_in == divisor_out == pytest.approx(size_out)  # full batch: q = 1 times the audited records, in both worlds
