"""The hidden-state one-run audit: gradient canaries inserted in every step, only the final parameters observed.

Each Dirac canary owns an audit coordinate that the reference trainer holds as
a parameter (``ReferenceDPSGD.audit_params``) and descends with the released
update; no real example touches it and the loss does not depend on it, so
along it the final model is exactly the linear model of Steinke et al.: for
a correct DP-SGD, K + N(0, Tσ²) with K ~ Binomial(T, q_c) for an included
canary and K = 0 otherwise, independent across canaries
(:mod:`privaudit.stats.last_iterate`). Two tests run on these scores:

* the headline, against DP-SGD composed (``DPSGD(q_c, T, δ)`` at the claim's
  σ, μ-GDP when q_c = 1), as the white-box audit does
  (:mod:`.family`): valid, since the final model is a post-processing of the
  transcript; it bounds DP-SGD's ε;
* ``last_iterate``, against the heuristic's own pair (Binomial mixture vs
  Gaussian) at the σ that ran: the observation *is* that pair here, so the
  test has its full power, but it refutes only the heuristic, never DP-SGD
  (it is reported beside the bound, never as one).

With q_c = 1 the two nulls coincide (μ = √T/σ): hiding the iterates gives
nothing (Cebere, Bellet and Papernot 2025). With Poisson sampling the
heuristic is far below the composed ε, and a final-model bound on DP-SGD's ε
stays below the heuristic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...observation.one_run import collect_final_model_observations
from ...stats.last_iterate import LastIterateDP, LastIterateHeuristic, last_iterate_heuristic
from ...stats.one_run_combined import OneRunLowerBound, one_run_lower_bound
from ...stats.order_statistics import design_num_guesses

__all__ = ["final_model_observations", "final_model_rows", "heuristic_and_test"]


def final_model_observations(trainer: Any, *, included: np.ndarray, config: Any, canary: Any, seed: int, progress: Any) -> np.ndarray:
    """Train with the canaries in every step as the white-box audit inserts them, and score them from the final audit coordinates alone."""
    done = [0]

    def step(rows: np.ndarray) -> None:
        trainer.step(rows)  # the released update is dropped: only the final parameters are observed
        done[0] += 1
        progress("training with DP-SGD (one run, final model observed)", completed=done[0], total=config.num_steps)

    return collect_final_model_observations(
        step,
        trainer.audit_params.copy,
        included=included,
        num_steps=config.num_steps,
        clip_norm=config.clip_norm,
        learning_rate=config.learning_rate,
        denominator=trainer.denominator,
        canary=canary,
        canary_rate=config.effective_canary_rate,
        seed=seed,
    )


def heuristic_and_test(config: Any, scores: np.ndarray, included: np.ndarray) -> tuple[LastIterateHeuristic, OneRunLowerBound | None]:
    """The heuristic at the σ, q_c and T that ran, and the order-statistics test against its pair (None off the guessing game's ½).

    >>> from privaudit.audits.one_run.config import OneRunAuditConfig
    >>> config = OneRunAuditConfig(noise_multiplier=1.0, num_steps=4, num_canaries=400, observe="final")
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(400) < 0.5
    >>> heuristic, test = heuristic_and_test(config, 4.0 * member + rng.normal(0, 2.0, 400), member)
    >>> heuristic.kind, round(heuristic.epsilon, 2), 0.0 < test.epsilon < heuristic.epsilon
    ('heuristic', 10.0, True)
    """
    rate, steps, sigma = config.effective_canary_rate, config.num_steps, config.noise_multiplier
    heuristic = last_iterate_heuristic(sigma, sampling_prob=rate, num_steps=steps, delta=config.delta)
    if config.inclusion_prob != 0.5:
        return heuristic, None
    null = LastIterateDP(rate, steps, config.delta)
    r = design_num_guesses(null, sigma, len(scores), confidence=config.confidence)
    return heuristic, one_run_lower_bound(scores, included, delta=config.delta, confidence=config.confidence, null=null, claim=sigma, num_guesses=r)


def final_model_rows(result: Any) -> list[tuple[str, Any]]:
    """The hidden-state rows of the console table and the report (none for a run that observed every update)."""
    heuristic = getattr(result, "heuristic", None)
    if heuristic is None:
        return []
    rows: list[tuple[str, Any]] = [
        ("observed", "the final parameters only (hidden state)"),
        (f"last-iterate heuristic ε (Steinke et al.; a heuristic, not a bound or a claim; δ = {heuristic.delta:g})", heuristic.epsilon),
        ("headline bound ÷ heuristic", "—" if result.bound_over_heuristic is None else result.bound_over_heuristic),
    ]
    if result.last_iterate is not None:
        rows.append(
            (
                f"test of the heuristic's pair ({result.last_iterate.refuted or 'nothing refuted'}; refutes the heuristic, not DP-SGD)",
                result.last_iterate.epsilon,
            )
        )
    return rows
