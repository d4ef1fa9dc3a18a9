"""The report section of the black-box audit (it draws no figures)."""

from __future__ import annotations

from pathlib import Path

from .html import ReportSection
from .provenance import provenance
from .sections import generic_section, headline_fields, typed_result


def section(data: dict, directory: Path | None) -> ReportSection:
    """The report section of a results dict of this family; ``directory`` holds its figures (see :mod:`privaudit.report.sections`)."""
    from ..audits.blackbox.config import BlackBoxResult

    result = typed_result(BlackBoxResult, data)
    if result is None:
        return generic_section(data, directory)
    headline = result.headline()
    return ReportSection(
        title="Black-box DP-SGD audit (many models)",
        audit="blackbox",
        **headline_fields(headline),
        meaning="With the stated confidence, training is no better than ε-DP: models trained with and without the canary were told apart this well from their final losses.",
        not_meaning="A bound far below the claimed ε is expected for a final-model, black-box attacker; it does not show the claim is tight or loose.",
        threat_model=result.threat_model,
        details=(
            *(
                ()
                if result.claimed_epsilon is None
                else (("accountant's ε of the built-in DP-SGD's σ and steps (the claim without --claimed-epsilon)", result.claimed_epsilon),)
            ),
            *(
                ()
                if result.paired_bound is None
                else (
                    ("refuted", result.refuted),
                    ("pairs guessed / right (the test's released guesses)", f"{result.paired_bound.num_guesses} / {result.paired_bound.num_correct}"),
                    ("GDP Clopper–Pearson bound at a held-out split threshold (for comparison; not the verdict's)", result.bound.epsilon),
                )
            ),
            ("(ε, δ) Clopper–Pearson bound at the held-out split threshold", result.epsilon_lower_bound_eps_delta),
            ("models with / without the canary", f"{result.num_in} / {result.num_out}"),
            ("δ", result.delta),
            ("what the bound covers", result.scope),
            *(
                ()
                if result.initialisation is None
                else (
                    (
                        "worst-case start (seed, SHA-256, records crafted on)",
                        f"{result.initialisation.seed}, {result.initialisation.digest}, {result.initialisation.pool_size}",
                    ),
                )
            ),
        ),
        **provenance(data),
    )
