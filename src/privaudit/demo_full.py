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
  join 1, 2, 4 or 8 times (the embedded default of ``configs/fl.json``).
* **PANORAMIA**: three targets on statsmodels' ``fair`` data, audited with
  generated non-members (the embedded default of ``configs/panoramia.json``).

Further families join through :func:`register_demo_audit`.

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

import numpy as np

from ._core.files import staged_output
from .report.html import ReportSection, write_report
from .report.sections import section_for
from .schemas import stamp_results
from ._core.results import library_versions
from ._core.seeding import child_seeds

__all__ = ["DEMO_AUDITS", "DemoAudit", "DemoOutcome", "register_demo_audit", "run_full_demo"]

Progress = Callable[..., None]


@dataclasses.dataclass(frozen=True)
class DemoAudit:
    """One family in the demo: ``run(directory, seed, progress)`` writes its runs under ``directory``.

    It returns the output folders it wrote (each with a ``results.json``
    stamped by :func:`privaudit.schemas.stamp_results`), in report order.
    ``requires`` names the optional libraries it imports, checked before
    anything runs.
    """

    name: str
    run: Callable[[Path, int, Progress], list[Path]]
    requires: tuple = ()


DEMO_AUDITS: dict[str, DemoAudit] = {}


def register_demo_audit(audit: DemoAudit) -> DemoAudit:
    """Add a family to the demo (runs in registration order)."""
    if not isinstance(audit, DemoAudit):
        raise ValueError(f"`audit` must be a DemoAudit, got {type(audit).__name__}")
    DEMO_AUDITS[audit.name] = audit
    return audit


@dataclasses.dataclass(frozen=True)
class DemoOutcome:
    """What the demo wrote: every audit's results, their report sections, the summary, and where."""

    results: tuple
    sections: tuple
    summary: dict
    report_path: Path
    seconds: float


def _secret_sharer(directory: Path, seed: int, progress: Progress) -> list[Path]:
    from .audits.secret_sharer import SecretSharerConfig, run_secret_sharer

    config = SecretSharerConfig(
        template="my pin is {digits:5}",
        schedule=(1, 4, 16, 64),
        max_corpus_chars=150_000,
        epochs=10,
        hidden=128,
        num_references=5_000,
        patience=2,
        max_extraction_queries=20_000,
        seed=seed,
    )
    target = directory / "secret-sharer"
    run_secret_sharer(config, target, progress=lambda stage, *a, **k: progress(f"Secret Sharer: {stage}", *a, **k))
    return [target]


def _dpsgd(directory: Path, seed: int, progress: Progress) -> list[Path]:
    from .audits.dpsgd import DPSGDAuditConfig, run_dpsgd_audit
    from .audits.dpsgd_report import write_dpsgd_outputs

    written = []
    for bug, name in (("none", "dpsgd"), ("clip-after-averaging", "dpsgd-bug")):
        config = DPSGDAuditConfig(canary_norm=100.0, bug=bug, seed=seed)
        progress(f"DP-SGD audit (bug: {bug})", None, None, f"{config.num_steps} steps, {config.canaries_per_step} canaries per step")
        result, observations = run_dpsgd_audit(config)
        (directory / name).mkdir()
        write_dpsgd_outputs(result, observations, directory / name)
        written.append(directory / name)
    return written


def _stamp_in_place(folder: Path, data: dict, audit: str) -> None:
    """Rewrite a writer's ``results.json`` with the schema stamp, for writers that do not add it themselves."""
    if "schema_version" not in data:
        (folder / "results.json").write_text(json.dumps(stamp_results(data, audit=audit), indent=2) + "\n", encoding="utf-8")


# the embedded default of configs/fl.json: digits, 500 observed and 500 unobserved canaries, 80 rounds
FL_DEFAULT = {
    "participations": [1, 2, 4, 8],
    "num_canaries": 500,
    "num_unobserved": 500,
    "training": {"num_rounds": 80, "sampling": "fixed", "examples_per_client": 5, "hidden": 128, "client_learning_rate": 0.5,
                 "server_optimizer": "sgd", "server_learning_rate": 1.0, "noise_multiplier": 0.5, "clip_norm": 1.0},
}


def _fl(directory: Path, seed: int, progress: Progress) -> list[Path]:
    from .audits.fl import FLAuditConfig, run_fl_audit
    from .audits.fl_report import write_fl_outputs

    config = FLAuditConfig.from_dict({**FL_DEFAULT, "seed": seed})
    progress("One-shot FL: DP-FedAvg with canary clients", None, None, f"{len(config.participations)} runs of {config.training.num_rounds} rounds")
    result, runs = run_fl_audit(config)
    target = directory / "fl"
    target.mkdir()
    _stamp_in_place(target, write_fl_outputs(result, runs, target), "fl")
    return [target]


def _panoramia(directory: Path, seed: int, progress: Progress) -> list[Path]:
    from .audits.panoramia_demo import PanoramiaDemoConfig, run_panoramia_demo
    from .audits.panoramia_report import write_panoramia_outputs

    config = PanoramiaDemoConfig(seed=seed)  # the embedded default: statsmodels' fair data, three targets
    results, scores = run_panoramia_demo(config, progress=lambda stage, *a, **k: progress(f"PANORAMIA: {stage}", *a, **k))
    target = directory / "panoramia"
    target.mkdir()
    data = write_panoramia_outputs(results, scores, target, config=config)
    _stamp_in_place(target, {"result_type": "PanoramiaResults", **data}, "panoramia")
    return [target]


def _available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


_TRAINING = ("torch", "matplotlib")
register_demo_audit(DemoAudit("secret-sharer", _secret_sharer, requires=_TRAINING))
register_demo_audit(DemoAudit("dpsgd", _dpsgd, requires=(*_TRAINING, "sklearn")))
if _available("privaudit.audits.fl"):
    register_demo_audit(DemoAudit("fl", _fl, requires=(*_TRAINING, "sklearn")))
if _available("privaudit.audits.panoramia_demo"):
    register_demo_audit(DemoAudit("panoramia", _panoramia, requires=(*_TRAINING, "statsmodels", "mbi")))


def _check_requirements(names: list[str]) -> None:
    """Fail before the first audit, not minutes into the demo, when an optional library is missing."""
    needed = dict.fromkeys(module for name in names for module in DEMO_AUDITS[name].requires)
    missing = [module for module in needed if not _available(module)]
    if missing:
        raise ValueError(f"`privaudit demo` needs {', '.join(missing)}: install them with pip install 'privaudit[demo]'")


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
            folders += DEMO_AUDITS[name].run(scratch, seeds[name], say)
        say("privaudit demo", len(names), len(names), "writing report.html")
        results = [json.loads((folder / "results.json").read_text(encoding="utf-8")) for folder in folders]
        sections = [section_for(data, folder) for data, folder in zip(results, folders, strict=True)]
        seconds = time.perf_counter() - started
        summary = stamp_results(
            {
                "result_type": "DemoResults",
                "seed": seed,
                "child_seeds": {name: seeds[name] for name in names},
                "seconds": seconds,
                "audits": [
                    {"directory": folder.name, **_headline(section), "results": data}
                    for folder, section, data in zip(folders, sections, results, strict=True)
                ],
                "versions": dict(library_versions()),
            },
            audit="demo",
        )
        (scratch / "results.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
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
