"""From a ``results.json`` (and the folder of its plots) to a :class:`~privaudit.report.html.ReportSection`.

One adapter per audit family, ``section(data, directory)`` in the family's
own report module beside its figures, named in :data:`ADAPTERS` and looked
up by the ``audit`` field that every results file carries
(:mod:`privaudit.schemas`); a family module is imported only when a results
file of that family is read. New families plug in with
:func:`register_adapter`; a family without an
adapter gets a generic section built from its ``epsilon`` and ``kind``
fields. The history store (:mod:`privaudit.history`) records the same
headline through :func:`section_for`, so the report and the history never
disagree on what an audit's number is. A registered family's adapter reads
its typed result (``result_type.validate``); a file that lacks some of the
result's fields gets the generic section, as a family without an adapter.

>>> data = {"audit": "new-family", "result_type": "R", "epsilon": 0.8, "kind": "lower bound", "confidence": 0.95, "config": {"seed": 3}}
>>> section = section_for(data)
>>> section.value, section.kind, section.seeds
(0.8, 'lower bound', {'config.seed': 3})
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..audits.registry import FAMILIES
from .html import KINDS, ReportSection, plots_in
from .provenance import provenance

__all__ = [
    "ADAPTERS",
    "FAMILY_OF_RESULT_TYPE",
    "family_of",
    "generic_section",
    "headline_fields",
    "headline_of",
    "load_results",
    "register_adapter",
    "section_for",
    "typed_result",
]

Adapter = Callable[[dict, Path | None], ReportSection]
# audit family -> its adapter, or "module:function" naming it (imported on first use): from the registry's family table
ADAPTERS: dict[str, Adapter | str] = {name: family.section for name, family in FAMILIES.items() if family.section is not None}


def register_adapter(audit: str, adapter: Adapter) -> Adapter:
    """Make ``adapter(data, directory)`` build the sections of results with ``data["audit"] == audit``."""
    ADAPTERS[audit] = adapter
    return adapter


def _adapter(family: str) -> Adapter:
    adapter = ADAPTERS.get(family, generic_section)
    if isinstance(adapter, str):
        module, attribute = adapter.split(":")
        adapter = getattr(importlib.import_module(module), attribute)
    return adapter


def headline_fields(headline) -> dict[str, Any]:
    """The ReportSection fields a result's headline decides: value, label, kind, confidence and validity."""
    return {"value": headline.value, "label": headline.label, "kind": headline.kind, "confidence": headline.confidence, "valid": headline.valid}


def _number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def generic_section(data: dict, directory: Path | None) -> ReportSection:
    """The section of a family without an adapter, or of a partial results file: its ``epsilon``, ``kind`` and every PNG beside it."""
    kind = str(data.get("kind")) if data.get("kind") in KINDS else "estimate"
    return ReportSection(
        title=f"{data.get('audit', 'audit')} ({data.get('result_type', 'result')})",
        audit=family_of(data),
        value=_number(data.get("epsilon")),
        label="ε",
        kind=kind,
        confidence=_number(data.get("confidence")) if kind != "statistic" else None,
        valid=bool(data.get("valid", True)),
        meaning="See the audit's guide for how to read this number.",
        not_meaning="Unless labelled a lower bound, the number carries no confidence guarantee.",
        threat_model=str(data.get("threat_model", "not recorded")),
        plots=plots_in(directory, {path.name: path.stem.replace("_", " ") for path in sorted(Path(directory).glob("*.png"))} if directory else {}),
        **provenance(data),
    )


# results written before the ``audit`` field existed, or by writers that do not stamp it
FAMILY_OF_RESULT_TYPE = {
    "SecretSharerResult": "secret-sharer",
    "DPSGDAuditResult": "dpsgd",
    "BlackBoxResult": "blackbox",
    "FLAuditResult": "fl",
    "PanoramiaResults": "panoramia",
    "ExtractionResult": "extraction",
    "ScoresResult": "scores",
    "ExposureAuditResult": "exposure",
    "OneRunAuditResult": "one-run",
    "MechanismAuditResult": "mechanism",
    "LMOneRunResult": "lm-one-run",
    "MIAResult": "mia",
    "SyntheticTextResult": "synthetic-text",
    "SyntheticDataResult": "synthetic-data",
    "OpacusInLoopResult": "opacus-inloop",
    "OpacusHiddenStateResult": "opacus-hidden",
    "OpacusAuditResult": "opacus",
}


def family_of(data: dict) -> str:
    """The audit family of a results dict: its ``audit`` field, else inferred from ``result_type``.

    >>> family_of({"result_type": "FLAuditResult"})
    'fl'
    """
    return str(data.get("audit") or FAMILY_OF_RESULT_TYPE.get(str(data.get("result_type")), "unknown"))


def typed_result(result_type, data: dict):
    """The typed result of a results dict; None for a partial file (fields missing); ValueError for a field of the wrong type."""
    from pydantic import ValidationError

    try:
        return result_type.validate(data)
    except ValidationError as error:
        problems = error.errors(include_url=False)
        tolerated = ("missing", "unexpected_keyword_argument")  # results may lack fields, or carry ones added within schema v1
        if all(problem["type"] in tolerated for problem in problems):
            return None  # a partial or older results file: the family's section reads what it has
        problem = next(problem for problem in problems if problem["type"] not in tolerated)
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in problem["loc"]).lstrip(".")  # conventions[8].value
        raise ValueError(f"`run`: its results.json holds a wrong value at `{where}`: {problem['msg']}") from None


def headline_of(data: dict):
    """The headline of a registered family's results dict, read through its typed result; None for other results."""
    from ..audits.registry import AUDITS, get_audit

    family = family_of(data)
    if family not in AUDITS:
        return None
    result = typed_result(get_audit(family).result_type, data)
    return None if result is None else result.headline()


def section_for(data: dict, directory=None) -> ReportSection:
    """The report section of one results dict; ``directory`` holds its plots (None: no plots).

    The headline (value, label, kind, confidence, valid) is the typed result's
    :meth:`~privaudit.audits.base.AuditResult.headline`, so the report, the
    demo and the history read the same number.
    """
    import dataclasses

    if not isinstance(data, dict):
        raise ValueError(f"`data` must be a results dict, got {type(data).__name__}")
    adapter = _adapter(family_of(data))
    headline = headline_of(data)  # refuses a field of the wrong type, naming it
    try:
        section = adapter(data, None if directory is None else Path(directory))
    except (AttributeError, TypeError, KeyError) as error:  # a partial file whose fields have the wrong JSON types
        raise ValueError(f"`run`: a results field has the wrong type for a {family_of(data)} audit ({type(error).__name__}: {error})") from None
    from .blind import blind_rows
    from .verdict import verdict_lines

    section = dataclasses.replace(section, verdict=verdict_lines(data), details=tuple(section.details) + blind_rows(data))
    if headline is None:
        return section
    return dataclasses.replace(section, **headline_fields(headline))


def load_results(directory) -> dict:
    """The checked ``results.json`` of a run directory (ValueError naming the file if it is unusable).

    >>> import tempfile
    >>> load_results(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    ValueError: `run` ... has no results.json
    """
    from .._core.files import check_own_file, read_json
    from ..schemas import check_results

    path = Path(directory) / "results.json"
    if not os.path.lexists(path):
        raise ValueError(f"`run` {str(directory)!r} has no results.json")
    data = read_json(check_own_file(path, directory, "run"), "run")  # never a link to another run's (or any) file
    try:
        return check_results(data, source="run")
    except ValueError as error:
        raise ValueError(f"{error} (in {str(path)!r})") from None
