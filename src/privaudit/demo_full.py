"""``privaudit demo``: every audit family on its embedded default, in one report.

The audits run with small configurations (minutes on a 2-core CPU, no
download), each in a folder of its own under the output directory, and
:func:`run_full_demo` writes ``report.html`` (:mod:`privaudit.report.html`)
and ``results.json`` (a summary holding every audit's results) beside them.

* **Secret Sharer**: canaries inserted 1, 4, 16 and 64 times into the first
  characters of the default corpus; a small character LSTM; exact exposure.
* **DP-SGD**: the reference DP-SGD audited with gradient canaries twice: as
  implemented, and with the "clipping after averaging" bug of Tight Auditing
  §6.3, which the audit must catch (its bound exceeds the claimed ε).
* **One-shot FL**: DP-FedAvg on digits with random canary clients that
  join 1, 2, 4 or 8 times (the family's embedded default config).
* **PANORAMIA**: three targets on statsmodels' ``fair`` data, audited with
  generated non-members (the family's embedded default config).

Each demo run is a family of the audit registry, run from its embedded default\nconfig, and written by :func:`privaudit.report.runs.write_run`; further\nfamilies join through :func:`register_demo_audit`.

The root seed gives each audit a child seed (``numpy.random.SeedSequence``),
recorded in that audit's configuration. The whole output directory appears
at once, when everything was written (:func:`privaudit._core.files.staged_output`).

>>> list(DEMO_AUDITS)[:2]
['secret-sharer', 'dpsgd']
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._core.files import staged_output
from ._core.results import library_versions
from ._core.seeding import child_seeds
from .audits.base import Progress, run_capturing
from .audits.registry import get_audit
from .report.html import ReportSection, write_report
from .report.runs import write_run
from .report.sections import section_for
from .schemas import stamp_results, write_results

__all__ = ["DEMO_AUDITS", "DemoAudit", "DemoOutcome", "DemoRun", "register_demo_audit", "run_full_demo"]


@dataclasses.dataclass(frozen=True)
class DemoRun:
    """One run of a family in the demo: its folder, and its config from the family's default and the child seed."""

    folder: str
    configure: Callable[[Any, int], Any]


@dataclasses.dataclass(frozen=True)
class DemoAudit:
    """A registered audit family in the demo, with its runs in report order."""

    name: str
    runs: tuple[DemoRun, ...]

    @property
    def requires(self) -> tuple[str, ...]:
        return (*get_audit(self.name).requires, "matplotlib")


DEMO_AUDITS: dict[str, DemoAudit] = {}


def register_demo_audit(audit: DemoAudit) -> DemoAudit:
    """Add a registered family to the demo (runs in registration order)."""
    if not isinstance(audit, DemoAudit):
        raise ValueError(f"`audit` must be a DemoAudit, got {type(audit).__name__}")
    get_audit(audit.name)  # a family of the audit registry
    DEMO_AUDITS[audit.name] = audit
    return audit


@dataclasses.dataclass(frozen=True)
class DemoOutcome:
    """What the demo wrote: each audit's results dict and report section, the summary, and the report's path."""

    results: tuple
    sections: tuple
    summary: dict
    report_path: Path
    seconds: float


def _seeded(config: Any, seed: int, **changes: Any) -> Any:
    return dataclasses.replace(config, seed=seed, **changes)


register_demo_audit(
    DemoAudit(
        "secret-sharer",
        (
            DemoRun(
                "secret-sharer",
                lambda config, seed: _seeded(
                    config,
                    seed,
                    template="my pin is {digits:5}",
                    schedule=(1, 4, 16, 64),
                    max_corpus_chars=150_000,
                    epochs=10,
                    hidden=128,
                    num_references=5_000,
                    patience=2,
                    max_extraction_queries=20_000,
                ),
            ),
        ),
    )
)
register_demo_audit(
    DemoAudit(
        "dpsgd",
        (
            DemoRun("dpsgd", lambda config, seed: _seeded(config, seed, bug="none")),
            DemoRun("dpsgd-bug", lambda config, seed: _seeded(config, seed, bug="clip-after-averaging")),
        ),
    )
)
register_demo_audit(DemoAudit("fl", (DemoRun("fl", _seeded),)))
register_demo_audit(DemoAudit("panoramia", (DemoRun("panoramia", _seeded),)))


def _available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _check_requirements(names: list[str]) -> None:
    """Fail before the first audit, not minutes into the demo, when an optional library is missing."""
    needed = dict.fromkeys(module for name in names for module in DEMO_AUDITS[name].requires)
    missing = [module for module in needed if not _available(module)]
    if missing:
        raise ValueError(f"`privaudit demo` needs {', '.join(missing)}: install them with pip install 'privaudit[demo]'")


def _run_family(name: str, directory: Path, seed: int, say: Progress) -> list[Path]:
    audit = get_audit(name)
    written = []
    for demo_run in DEMO_AUDITS[name].runs:
        config = demo_run.configure(audit.default_config(), seed)

        def progress(stage, completed=None, total=None, detail="", title=audit.title):
            say(f"{title}: {stage}", completed, total, detail)

        write_run(directory / demo_run.folder, run_capturing(audit, config, progress=progress))
        written.append(directory / demo_run.folder)
    return written


def run_full_demo(output, *, seed: int = 0, audits=None, progress: Progress | None = None) -> DemoOutcome:
    """Run the demo audits (all registered by default) and write ``report.html`` and ``results.json`` into ``output``."""
    from ._core.validation import check_count

    seed = check_count(seed, "seed")
    names = list(DEMO_AUDITS) if audits is None else list(audits)
    unknown = [name for name in names if name not in DEMO_AUDITS]
    if unknown or not names:
        raise ValueError(f"`audits` must be among {', '.join(map(repr, DEMO_AUDITS))}, got {unknown[0] if unknown else 'none'!r}")
    _check_requirements(names)
    say = progress or (lambda *args, **kwargs: None)
    seeds = child_seeds(seed, DEMO_AUDITS)  # fixed per family, whichever subset runs
    started = time.perf_counter()
    output = Path(output)
    with staged_output(output) as scratch:
        folders = []
        for position, name in enumerate(names):
            say("privaudit demo", position, len(names), name)
            folders += _run_family(name, scratch, seeds[name], say)
        say("privaudit demo", len(names), len(names), "writing report.html")
        results = [json.loads((folder / "results.json").read_text(encoding="utf-8")) for folder in folders]  # as written
        sections = [section_for(data, folder) for data, folder in zip(results, folders, strict=True)]
        seconds = time.perf_counter() - started
        summary = stamp_results(
            {
                "result_type": "DemoResults",
                "seed": seed,
                "child_seeds": {name: seeds[name] for name in names},
                "seconds": seconds,
                "audits": [
                    {"directory": folder.name, **_headline(section), "results": data} for folder, section, data in zip(folders, sections, results, strict=True)
                ],
                "versions": dict(library_versions()),
            },
            audit="demo",
        )
        write_results(scratch / "results.json", summary, "the demo's summary")  # checked against the schema, then written atomically
        write_report(sections, scratch / "report.html", title=f"privaudit demo (seed {seed})")
    return DemoOutcome(results=tuple(results), sections=tuple(sections), summary=summary, report_path=output / "report.html", seconds=seconds)


def _headline(section: ReportSection) -> dict:
    return {
        "audit": section.audit,
        "title": section.title,
        "label": section.label,
        "value": section.value,
        "kind": section.kind,
        "confidence": section.confidence,
        "valid": section.valid,
        "flag": section.flag,
    }
