"""Every result object is frozen and serialises to JSON with its provenance."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

import privaudit

rng = np.random.default_rng(0)
IN, OUT = rng.normal(1.0, 1.0, 500), rng.normal(0.0, 1.0, 500)
MEMBER = rng.random(500) < 0.5

RESULTS = {
    "epsilon_lower_bound": lambda: privaudit.epsilon_lower_bound(IN, OUT, delta=1e-5, seed=3),
    "exposure": lambda: privaudit.exposure(-IN, -OUT),
    "exposure_extrapolated": lambda: privaudit.exposure_extrapolated(-IN, -OUT),
    "random_guessing_exposure": lambda: privaudit.random_guessing_exposure(100),
    "epsilon_from_exposure": lambda: privaudit.epsilon_from_exposure(-IN, -OUT),
    "roc_curve": lambda: privaudit.roc_curve(IN, OUT),
    "step_to_end_epsilon": lambda: privaudit.step_to_end_epsilon(1.0, delta=1e-5, num_steps=10),
    "epsilon_one_shot": lambda: privaudit.epsilon_one_shot(IN / 100, dimension=10_000, delta=1e-5),
    "epsilon_lower_bound_cosines": lambda: privaudit.epsilon_lower_bound_cosines(IN / 100, dimension=10_000, delta=1e-5),
    "epsilon_one_run": lambda: privaudit.epsilon_one_run(100, 50, 40, delta=1e-5),
    "epsilon_one_run_sweep": lambda: privaudit.epsilon_one_run_sweep(IN, MEMBER, delta=1e-5),
    "panoramia_bounds": lambda: privaudit.panoramia_bounds(IN, IN, MEMBER),
}


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_result_is_frozen_and_json_ready(name):
    result = RESULTS[name]()
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(result, dataclasses.fields(result)[0].name, None)
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["result_type"] == type(result).__name__
    assert data["versions"]["privaudit"] == privaudit.__version__


def test_public_names_resolve_lazily_and_core_imports_no_heavy_dependency():
    import subprocess
    import sys

    code = (
        "import sys, privaudit\n"
        "[getattr(privaudit, name) for name in privaudit.__all__]\n"
        "heavy = [m for m in ('torch', 'opacus', 'transformers', 'flwr', 'ray', 'typer', 'matplotlib') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        privaudit.nothing  # noqa: B018
