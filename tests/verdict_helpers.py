"""The like-for-like check every family's result must pass, shared by the contract test and the verdict tests."""

from __future__ import annotations

from privaudit.stats.ceiling import at_ceiling


def assert_like_for_like(result) -> None:
    """A verdict compares a bound with a claim on the same quantity (never a per-step bound with an end-to-end claim); the flag and ratio follow."""
    verdict = result.claim_verdict
    headline = result.headline()
    if verdict is not None:
        assert verdict.quantity == verdict.claim.quantity, (verdict.quantity, verdict.claim.quantity)
        assert not (verdict.quantity == "per-step" and verdict.claim.quantity == "end-to-end")
        assert verdict.bound_delta >= verdict.claim.delta
        assert verdict.flagged == (verdict.bound > verdict.claim.epsilon) and verdict.ratio == verdict.bound / verdict.claim.epsilon
        assert "per-step" not in headline.label or verdict.quantity == "per-step", (headline.label, verdict.quantity)
        if headline.flag is not None:
            assert headline.flag == verdict.flagged
    if result.ceiling is not None:
        assert result.ceiling.value >= result.ceiling.bound - 1e-9, (result.ceiling.value, result.ceiling.bound)
        assert result.ceiling.at_ceiling == at_ceiling(result.ceiling.bound, result.ceiling.value)
