"""An audit of canary losses the user computed: exposure per canary, the random-guessing baselines and the ε they imply.

This is what ``privaudit exposure`` runs. The user inserted canaries into
their training data, trained their model, and scored each canary and a set
of references (sequences of the same format, never inserted) with it; the
losses (log-perplexities: lower = more likely) come in, and privaudit never
sees the model.

* exposure of each canary among the n references (Secret Sharer §4), ties
  counted against the canary;
* the random-guessing baselines: the mean, median and 75th percentile of the
  exposure of a canary the model did not memorise, and the exposure that no
  unmemorised canary reaches, over all canaries, with 95% probability;
* when the insertions are known, the ε lower bound of Jagielski's note
  (:func:`~privaudit.stats.exposure.epsilon_from_exposure`) for a group of
  the largest insertion count. Without them no ε is given: a canary inserted
  k times bounds kε, so assuming one insertion could overstate ε k-fold.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> run = audit_exposure(rng.normal(-4, 1, 8), rng.normal(0, 1, 1000), insertions=[4] * 8)
>>> result = run.result
>>> result.headline().kind, result.epsilon_bound["duplicates"], len(result.canaries)
('statistic', 4, 8)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..._core.messages import describe_value
from ..._core.readers import read_csv_rows
from ..._core.validation import as_scores, check_count, check_probability
from ...stats.exposure import epsilon_from_exposure, exposure, exposure_extrapolated, random_guessing_exposure
from ..base import AuditResult, AuditRun, Headline
from ..verdicts import check_claim_fields, exposure_verdict

__all__ = ["CanaryExposure", "ExposureAuditResult", "audit_exposure", "read_canary_table", "sampled_guessing_upper"]


@dataclasses.dataclass(frozen=True)
class CanaryExposure:
    """One canary: its position in the input, its text or id and insertions when given, its loss, rank and exposure (bits)."""

    index: int
    text: str | None
    insertions: int | None
    loss: float
    rank: int
    exposure: float
    exposure_extrapolated: float | None = None


@dataclasses.dataclass(frozen=True)
class ExposureAuditResult(AuditResult):
    """Exposure of the user's canaries among references, the baselines, and (insertions known) the ε lower bound."""

    source: dict[str, str]
    num_references: int
    confidence: float
    canaries: tuple[CanaryExposure, ...]
    baselines: dict[str, float]
    epsilon_bound: dict[str, Any] | None
    extrapolation: dict[str, Any] | None = None
    threat_model: str = (
        "black-box access to the model's losses on the canaries and on references of the same format never inserted; "
        "the canaries were inserted into the training data"
    )

    def headline(self) -> Headline:
        top = max(canary.exposure for canary in self.canaries)
        return Headline(
            value=top,
            label="largest canary exposure (sampled, bits)",
            kind="statistic",
            confidence=None,
            valid=True,
            flag=top > self.baselines["sampled_upper_95_all_canaries"],
        )


def sampled_guessing_upper(num_references: int, num_canaries: int, alpha: float = 0.05) -> float:
    """Sampled exposure that no unmemorised canary exceeds with probability > 1 - alpha, over all canaries.

    Without memorisation a canary's rank among n references is uniform on
    {1, ..., n + 1}, so P(rank <= r) = r/(n + 1); a union bound over the
    canaries puts r at floor(alpha (n + 1)/k), at least 1.

    >>> round(sampled_guessing_upper(99, 1), 6)  # rank 5 of 100: log2 99 - log2 5
    4.307429
    """
    r = max(1, math.floor(alpha * (num_references + 1) / num_canaries))
    return float(np.log2(num_references) - np.log2(r))


def audit_exposure(
    canary_losses,
    reference_losses,
    *,
    texts=None,
    insertions=None,
    confidence: float = 0.95,
    extrapolate: bool = False,
    source: dict[str, str] | None = None,
    claimed_epsilon: float | None = None,
    claimed_delta: float | None = None,
) -> AuditRun:
    """Exposure of each canary among the references, the baselines and, with ``insertions``, the ε lower bound.

    ``texts`` (a string per canary, or None) and ``insertions`` (an integer
    >= 1 per canary, a single integer for all, or None) are carried into the
    result; losses are lower for more likely sequences.
    """
    check_claim_fields(claimed_epsilon, claimed_delta)
    canaries = as_scores(canary_losses, "canary_losses")
    references = as_scores(reference_losses, "reference_losses")
    confidence = check_probability(confidence, "confidence")
    m = canaries.size
    if texts is not None:
        texts = [None if text is None else str(text) for text in texts]
        if len(texts) != m:
            raise ValueError(f"`texts` must have one entry per canary ({m}), got {len(texts)}")
    counts = None
    if insertions is not None:
        given = [insertions] * m if np.isscalar(insertions) else list(insertions)
        if len(given) != m:
            raise ValueError(f"`insertions` must have one entry per canary ({m}), got {len(given)}")
        counts = [check_count(count, "insertions", minimum=1) for count in given]
    ranked = exposure(canaries, references)
    fitted = exposure_extrapolated(canaries, references) if extrapolate else None
    guessing = random_guessing_exposure(references.size)
    baselines = {
        "mean": guessing.mean,
        "median": guessing.median,
        "quantile_75": guessing.quantile_75,
        "max_exposure": float(np.log2(references.size)),
        "sampled_upper_95_all_canaries": sampled_guessing_upper(references.size, m),
    }
    bound = None
    if counts is not None:
        found = epsilon_from_exposure(canaries, references, confidence=confidence, duplicates=max(counts))
        bound = {key: value for key, value in found.to_dict().items() if key not in ("result_type", "versions")}
    rows = tuple(
        CanaryExposure(
            index=index,
            text=None if texts is None else texts[index],
            insertions=None if counts is None else counts[index],
            loss=float(canaries[index]),
            rank=int(ranked.ranks[index]),
            exposure=float(ranked.exposures[index]),
            exposure_extrapolated=None if fitted is None else float(fitted.exposures[index]),
        )
        for index in range(m)
    )
    extrapolation = None
    if fitted is not None:
        extrapolation = {
            "shape": fitted.shape,
            "loc": fitted.loc,
            "scale": fitted.scale,
            "ks_statistic": fitted.ks_statistic,
            "ks_pvalue": fitted.ks_pvalue,
            "kind": fitted.kind,
        }
    result = ExposureAuditResult(
        source=dict(source or {}),
        num_references=int(references.size),
        confidence=confidence,
        canaries=rows,
        baselines=baselines,
        epsilon_bound=bound,
        extrapolation=extrapolation,
    )
    result = exposure_verdict(result, bound, claimed_epsilon=claimed_epsilon, claimed_delta=claimed_delta)
    config = {"confidence": confidence, "extrapolate": bool(extrapolate), "insertions_known": counts is not None}
    return AuditRun("exposure", config, result, observations={"ranked": ranked, "fitted": fitted})


def read_canary_table(
    path, loss_column: str, text_column: str | None = None, insertions_column: str | None = None, name: str = "--canaries"
) -> tuple[np.ndarray, list[str] | None, list[int] | None]:
    """Losses, texts (or ids) and insertions from a CSV file with a header row, one row per canary.

    The loss column must hold finite numbers and the insertions column
    integers >= 1; the text column may hold anything. Every failure is a
    ValueError naming the option, the column and the line.

    >>> import tempfile, os
    >>> file = os.path.join(tempfile.mkdtemp(), "c.csv")
    >>> _ = open(file, "w").write("text,insertions,loss\\nmy pin is 1234,4,12.5\\nmy pin is 9876,1,30\\n")
    >>> read_canary_table(file, "loss", "text", "insertions")
    (array([12.5, 30. ]), ['my pin is 1234', 'my pin is 9876'], [4, 1])
    """
    header, rows = read_csv_rows(path, name)
    positions: dict[str, int] = {}
    for column, option in ((loss_column, "--loss-col"), (text_column, "--text-col"), (insertions_column, "--insertions-col")):
        if column is None:
            continue
        if column not in header:
            raise ValueError(f"`{option}`: {str(path)!r} has no column {describe_value(column)}; its columns are {describe_value(header)}")
        positions[option] = header.index(column)
    losses: list[float] = []
    texts: list[str] = []
    counts: list[int] = []
    for line, row in enumerate(rows[1:], 2):
        if len(row) != len(header):
            raise ValueError(f"`{name}`: {str(path)!r} line {line} has {len(row)} cells, the header {len(header)}")
        cell = row[positions["--loss-col"]].strip()
        try:
            value = float(cell)
        except ValueError:
            raise ValueError(f"`{name}`: {str(path)!r} line {line}: column `{loss_column}` must be a number, got {describe_value(cell)}") from None
        if not math.isfinite(value):
            raise ValueError(f"`{name}`: {str(path)!r} line {line}: column `{loss_column}` must be finite, got {describe_value(cell)}")
        losses.append(value)
        if "--text-col" in positions:
            texts.append(row[positions["--text-col"]])
        if "--insertions-col" in positions:
            cell = row[positions["--insertions-col"]].strip()
            if not (cell.isascii() and cell.isdigit()) or int(cell) < 1:
                raise ValueError(f"`{name}`: {str(path)!r} line {line}: column `{insertions_column}` must be an integer >= 1, got {describe_value(cell)}")
            counts.append(int(cell))
    if not losses:
        raise ValueError(f"`{name}`: {str(path)!r} has a header but no rows")
    return np.asarray(losses, dtype=np.float64), (texts if text_column is not None else None), (counts if insertions_column is not None else None)
