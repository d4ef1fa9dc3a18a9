"""Complete results of the registered families, built from their result classes, for the report and history tests.

The report's adapters and the history read typed results (``result_type.validate``),
so a test that needs a results dict with given numbers builds the full result
and stamps it as ``write_run`` would; only the numbers a test is about are set.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from privaudit.schemas import stamp_results

__all__ = ["blackbox_results", "dpsgd_results", "gdp_bound", "secret_sharer_results"]


def gdp_bound(epsilon: float, **changes):
    """A GDP / Clopper–Pearson lower bound (95%) of the statistical core, with ``epsilon`` (and ``changes``) put in."""
    from privaudit.stats.bounds import epsilon_lower_bound

    rng = np.random.default_rng(0)
    bound = epsilon_lower_bound(rng.normal(1.0, 1.0, 400), rng.normal(0.0, 1.0, 400), delta=1e-5)
    return dataclasses.replace(bound, epsilon=float(epsilon), **changes)


def blackbox_results(epsilon: float, *, seed: int = 0, claimed: float = 5.0, dataset: str = "breast-cancer", architecture: str = "linear", **fields) -> dict:
    """A stamped black-box result whose GDP bound is ``epsilon`` (lower bound at 95%) against the claimed ε ``claimed``."""
    from privaudit.audits.blackbox.config import BlackBoxConfig, BlackBoxResult

    config = BlackBoxConfig(dataset=dataset, architecture=architecture, seed=seed)
    result = BlackBoxResult(
        epsilon_lower_bound=float(epsilon),
        epsilon_lower_bound_eps_delta=float(epsilon) / 2,
        claimed_epsilon=claimed,
        delta=config.delta,
        confidence=config.confidence,
        threat_model="black-box",
        num_in=5,
        num_out=5,
        mean_in_score=1.0,
        mean_out_score=0.5,
        num_trained=10,
        wall_time_s=1.0,
        models_per_minute=600.0,
        backend="local",
        bound=gdp_bound(epsilon),
        bound_eps_delta=gdp_bound(float(epsilon) / 2),
        config=config,
    )
    return stamp_results({**result.to_dict(), **fields}, audit="blackbox")


def dpsgd_results(epsilon: float, claimed: float, flagged: bool, *, bug: str = "clip-after-averaging", seed: int = 4) -> dict:
    """A stamped white-box DP-SGD result: per-step bound ``epsilon``, claimed per-step ε ``claimed``, ``flagged``."""
    from privaudit.audits.dpsgd.config import DPSGDAuditConfig, DPSGDAuditResult
    from privaudit.stats.pld import step_to_end_epsilon

    config = DPSGDAuditConfig(bug=bug, seed=seed)
    result = DPSGDAuditResult(
        config=config,
        threat_model="white-box",
        claimed_step_epsilon=claimed,
        step_bounds={"gdp_clopper_pearson": gdp_bound(epsilon)},
        flagged=flagged,
        end_to_end=dataclasses.replace(step_to_end_epsilon(1.0, delta=config.delta, num_steps=10, sampling_prob=0.1), epsilon=9.0),
        claimed_end_to_end_epsilon=8.0,
        num_in=100,
        num_out=900,
        num_twinned_blocks=0,
        test_accuracy=0.9,
    )
    return stamp_results(result.to_dict(), audit="dpsgd")


def secret_sharer_results(text: str, *, seed: int = 11) -> dict:
    """A stamped Secret Sharer result with two canaries, the first with text ``text`` (also in the config's template)."""
    from privaudit.audits.secret_sharer.audit import SecretSharerConfig, SecretSharerResult

    canaries = (
        {"text": text, "repetitions": 1, "log_perplexity_bits": 20.0, "exposure_sampled": 3.0, "exposure_exact": 4.5, "extracted": False},
        {"text": "my pin is 12345", "repetitions": 64, "log_perplexity_bits": 5.0, "exposure_sampled": 12.0, "exposure_exact": 16.6, "extracted": True},
    )
    result = SecretSharerResult(
        config=SecretSharerConfig(template=f"{text} {{digits:5}}", seed=seed),
        canaries=canaries,
        space_size=100_000,
        num_references=1_000,
        baselines={"max_exposure": 16.61, "exact_upper_95_all_canaries": 12.3},
        epsilon_bound={"epsilon": 0.07, "kind": "lower bound", "confidence": 0.95, "duplicates": 64},
        extraction=None,
        skewnorm_fit={},
        training={},
        dp_comparison=None,
        seconds=1.0,
    )
    return stamp_results(result.to_dict(), audit="secret-sharer")
