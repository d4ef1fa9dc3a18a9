"""The one writer of an audit's output directory: :func:`write_run`.

It stamps the result (schema version, audit, machine, time), validates it
against the JSON Schema, writes ``results.json`` and the audit's artifacts
into a staging directory, draws the figures from the run, with ``report=True``
builds ``report.html`` from them (the page ``privaudit report`` builds), and
only then moves everything into place: a failure at any step leaves nothing
behind.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._core.files import staged_output
from ..audits.base import AuditRun
from ..audits.registry import FAMILIES
from ..schemas import stamp_results, validate_results, write_results

__all__ = ["FIGURES", "LOOSE_RESULTS", "REPORT_NAME", "as_run", "figures_for", "run_to_dict", "write_run"]

REPORT_NAME = "report.html"

# audit name -> "module:function" returning {file name: draw(path)} for a run: from the registry's family table
FIGURES: dict[str, str] = {name: family.figures for name, family in FAMILIES.items() if family.figures is not None}


# results made outside an Audit's run (in the user's own loop) -> the audit name their results.json carries
LOOSE_RESULTS: dict[str, str] = {"OpacusInLoopResult": "opacus-inloop", "OpacusHiddenStateResult": "opacus-hidden", "OpacusAuditResult": "opacus"}


def as_run(run: Any) -> AuditRun:
    """``run`` itself, or the AuditRun of a result made in the user's own loop (:data:`LOOSE_RESULTS`)."""
    if isinstance(run, AuditRun):
        return run
    audit = LOOSE_RESULTS.get(type(run).__name__)
    if audit is None:
        raise ValueError(f"`run` must be an AuditRun or one of {', '.join(sorted(LOOSE_RESULTS))}, got {type(run).__name__}")
    return AuditRun(audit, None, run)


def figures_for(run: AuditRun) -> dict[str, Callable[[Path], Any]]:
    """The figures of ``run``: file name -> a function that draws it to a path."""
    if run.audit not in FIGURES:
        return {}
    module, attribute = FIGURES[run.audit].split(":")
    return getattr(importlib.import_module(module), attribute)(run)


def run_to_dict(run: AuditRun) -> dict[str, Any]:
    """The stamped, schema-valid results dict of ``run`` (what results.json holds)."""
    data = stamp_results(run.result.to_dict(), audit=run.audit)
    data["reproducible"] = run.reproducible
    return validate_results(data, f"results of {run.audit}")


def _write_report_page(folder: Path, title: str) -> None:
    """``folder/report.html`` from ``folder``'s results.json and figures, exactly as ``privaudit report folder`` reads them."""
    from .html import write_report
    from .sections import load_results, section_for

    write_report([section_for(load_results(folder), folder)], folder / REPORT_NAME, title=title)


def write_run(directory: Any, run: Any, *, figures: bool = True, report: bool | None = None, title: str = "privaudit report") -> dict[str, Any]:
    """Write ``results.json``, the artifacts and the figures of ``run`` into ``directory``; return the results dict.

    With ``report``, also ``report.html`` (titled ``title``): the self-contained
    page that ``privaudit report directory`` builds, staged with the rest.
    ``run`` is an :class:`~privaudit.audits.base.AuditRun`, or the result of an
    audit in the user's own loop (``OpacusInLoopAuditor.result()``,
    ``audit_opacus``), which gets its report by default, as a CLI audit does.

    >>> import dataclasses, tempfile, os
    >>> from privaudit.audits.base import AuditResult, Headline
    >>> @dataclasses.dataclass(frozen=True)
    ... class Example(AuditResult):
    ...     epsilon: float
    ...     def headline(self):
    ...         return Headline(self.epsilon, "epsilon", "lower bound", 0.95, True)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     data = write_run(os.path.join(folder, "run"), AuditRun("example", None, Example(1.5), artifacts={"notes.txt": b"hi"}))
    ...     sorted(os.listdir(os.path.join(folder, "run"))), data["schema_version"], data["epsilon"]
    (['notes.txt', 'results.json'], 1, 1.5)
    """
    if report is None:
        report = not isinstance(run, AuditRun)
    run = as_run(run)
    data = run_to_dict(run)  # refused by the schema before anything is created
    drawings = figures_for(run) if figures else {}
    with staged_output(directory) as scratch:
        write_results(scratch / "results.json", data, f"results of {run.audit}")
        for name, payload in run.artifacts.items():
            (scratch / name).write_bytes(payload)
        for name, draw in drawings.items():
            draw(scratch / name)
        if report:
            _write_report_page(scratch, title)
    return data
