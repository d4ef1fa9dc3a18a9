"""The audit interface every family implements: a config, ``run()`` and a typed result.

* an :class:`Audit` names its frozen config type, its result type and its
  embedded default config (package data under ``privaudit/configs``);
* ``Audit.run(config, *, progress=None)`` returns an :class:`AuditRun` and
  writes no files; :func:`privaudit.report.runs.write_run` is the one writer;
* every result is an :class:`AuditResult`: ``to_dict()`` and ``from_dict()``
  round-trip, ``headline()`` gives the one number to read first, and
  ``threat_model`` says what the auditor observed;
* ``progress(stage, completed=None, total=None, detail="")`` is the one
  progress protocol (:class:`Progress`).

>>> import dataclasses
>>> @dataclasses.dataclass(frozen=True)
... class Example(AuditResult):
...     epsilon: float
...     def headline(self):
...         return Headline(self.epsilon, "epsilon lower bound", "lower bound", 0.95, True, None)
>>> result = Example(epsilon=1.5)
>>> Example.from_dict(result.to_dict()) == result
True
>>> result.headline().kind
'lower bound'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import cache
from typing import Any, ClassVar, Protocol

from .._core.capture import CapturedWarning, capture_library_output
from .._core.conventions import Convention
from .._core.resources import torch_threads
from .._core.results import Result
from .._core.seeding import check_seed
from ..runner import check_backend
from ..stats.ceiling import Ceiling
from ..stats.verdict import Verdict
from .config import config_from_dict, default_config, load_config, with_overrides

__all__ = ["Audit", "AuditResult", "BackendAudit", "AuditRun", "Headline", "Progress", "PROVENANCE_KEYS", "no_progress", "run_capturing"]

# fields that the writer and Result.to_dict add around a result's own fields
PROVENANCE_KEYS = frozenset({"result_type", "versions", "schema_version", "audit", "machine", "created_at", "reproducible"})


class Progress(Protocol):
    """``progress(stage, completed=None, total=None, detail="")``: called as an audit advances."""

    def __call__(self, stage: str, completed: int | None = None, total: int | None = None, detail: str = "") -> None: ...


def no_progress(stage: str, completed: int | None = None, total: int | None = None, detail: str = "") -> None:
    """The progress callback that reports nothing."""


@dataclasses.dataclass(frozen=True)
class Headline:
    """The number to read first: its value, what it is, and whether it can be trusted.

    ``kind`` is "lower bound", "estimate", "statistic", ...; ``valid`` is False
    for optimistic numbers; ``flag`` is True when the number contradicts a
    claim (None when there is no claim to check).
    """

    value: float | None
    label: str
    kind: str
    confidence: float | None
    valid: bool
    flag: bool | None = None


@cache
def _result_adapter(cls: Any) -> Any:
    from pydantic import ConfigDict, TypeAdapter

    if "__pydantic_config__" not in vars(cls):
        cls.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
    return TypeAdapter(cls)


@dataclasses.dataclass(frozen=True)
class AuditResult(Result):
    """Base class of the families' results: typed fields, JSON round trip, headline, threat model.

    ``conventions`` records each convention of the user's model or data that
    the numbers rest on, and how it was decided
    (:mod:`privaudit._core.conventions`); ``captured_warnings`` what the
    libraries it called warned about while it ran
    (:mod:`privaudit._core.capture`). The report shows both.

    ``claim_verdict`` is the headline bound held against the user's claim on
    the same quantity (None: no claim given, or no bound to hold against
    one); ``ceiling`` the largest value the bound's design could have shown;
    ``sanity_warnings`` checks of the inputs that warn and change no number
    (:mod:`privaudit.audits.verdicts`). A family whose membership the user
    may give holds a ``blind_baseline`` field too (:mod:`privaudit.audits.blind`),
    left out of :meth:`to_dict` where it is None (privaudit drew the membership).
    """

    conventions: tuple[Convention, ...] = dataclasses.field(default=(), kw_only=True)
    captured_warnings: tuple[CapturedWarning, ...] = dataclasses.field(default=(), kw_only=True)
    claim_verdict: Verdict | None = dataclasses.field(default=None, kw_only=True)
    ceiling: Ceiling | None = dataclasses.field(default=None, kw_only=True)
    sanity_warnings: tuple[str, ...] = dataclasses.field(default=(), kw_only=True)

    def headline(self) -> Headline:
        raise NotImplementedError

    def inert_config_fields(self) -> frozenset[str]:
        """Config fields that did not apply to this run: the embedded default's, beside the user's data or model.

        :meth:`to_dict` leaves them out of ``config``, so that results.json
        records what ran and nothing that did not (reading it back fills them
        with their defaults, which did not apply either).
        """
        return frozenset()

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        inert = self.inert_config_fields()
        if inert and isinstance(out.get("config"), dict):
            out["config"] = {key: value for key, value in out["config"].items() if key not in inert}
        for key in (
            "blind_baseline",
            "family_test",
            "dataset_inference",
        ):  # None (privaudit drew the membership; no family named): results.json stays as it was before the field
            if out.get(key, 0) is None:
                del out[key]
        return out

    @classmethod
    def validate(cls, data: Mapping[str, Any]):
        """The result from a results dict; pydantic's ValidationError when a field is missing or of the wrong type."""
        if not isinstance(data, Mapping):
            raise ValueError(f"`results` must be a JSON object, got {type(data).__name__}")
        fields = {key: value for key, value in data.items() if key not in PROVENANCE_KEYS}
        return _result_adapter(cls).validate_python(fields)  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "results"):
        """The result from ``to_dict()``'s output (or a stamped results.json); a ValueError names the bad field."""
        from pydantic import ValidationError

        if not isinstance(data, Mapping):
            raise ValueError(f"`{source}` must be a JSON object, got {type(data).__name__}")
        try:
            return cls.validate(data)
        except ValidationError as error:
            problem = error.errors(include_url=False)[0]
            where = ".".join(str(part) for part in problem["loc"]) or "(top level)"
            got = repr(problem.get("input"))
            got = got if len(got) <= 80 else got[:77] + "..."
            raise ValueError(f"`{source}`: field `{where}`: {problem['msg']}, got {got}") from None


@dataclasses.dataclass(frozen=True, eq=False)
class AuditRun:
    """One finished audit: its config, its result, and what the figures and extra files need.

    ``observations`` holds the arrays the figures are drawn from (not written
    to results.json); ``artifacts`` maps file names to bytes the audit
    produced besides its results (a trained model, a provenance record).
    """

    audit: str
    config: Any
    result: AuditResult
    observations: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    artifacts: Mapping[str, bytes] = dataclasses.field(default_factory=dict)
    reproducible: bool = True


class Audit:
    """One audit family. Subclasses set the class attributes and implement :meth:`run`."""

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    config_type: ClassVar[type]
    result_type: ClassVar[type[AuditResult]]
    default_resource: ClassVar[str]  # file name under privaudit/configs
    requires: ClassVar[tuple[str, ...]] = ()  # optional packages the run imports
    checkpointed: ClassVar[bool] = False  # run() takes ``checkpoints``, a directory of finished pieces to resume from
    # the keys of the default config that :meth:`tiny_config` shrinks (nested configs as nested dicts)
    tiny_overrides: ClassVar[Mapping[str, Any]] = {}

    def default_config(self) -> Any:
        """The embedded default config."""
        return default_config(self.config_type, self.default_resource)

    def load_config(self, path: Any, name: str = "--config") -> Any:
        """A config from a JSON or YAML file."""
        return load_config(self.config_type, path, name)

    def config_from_dict(self, values: Any, name: str = "config") -> Any:
        return config_from_dict(self.config_type, values, name)

    def with_seed(self, config: Any, seed: int | None) -> Any:
        """``config`` with its seed replaced (None: unchanged)."""
        return config if seed is None else dataclasses.replace(config, seed=check_seed(seed, "--seed"))

    def memory_estimate(self, config: Any) -> tuple[int, str]:
        """A rough lower estimate of the bytes ``run(config)`` holds at once, and the settings that drive it (0: negligible)."""
        return 0, ""

    def tiny_config(self) -> Any:
        """A config that runs in seconds, for the contract tests and ``--quick`` smoke runs.

        The embedded default with :attr:`tiny_overrides` applied (nested
        configs merged key by key): the same audit, only smaller.
        """
        if not self.tiny_overrides:
            raise NotImplementedError(f"{type(self).__name__} sets no `tiny_overrides`")
        return with_overrides(self.default_config(), self.tiny_overrides, f"tiny_overrides of {self.name}")

    def run(self, config: Any, *, progress: Progress | None = None) -> AuditRun:
        raise NotImplementedError

    def result_from_dict(self, data: Mapping[str, Any], source: str = "results") -> AuditResult:
        return self.result_type.from_dict(data, source)

    def __repr__(self) -> str:
        return f"<Audit {self.name!r}>"


class BackendAudit(Audit):
    """An audit whose runs go to a backend (a local process pool or Ray) and resume from ``checkpoints``.

    :meth:`run` refuses bad backend options before any work, then calls
    :meth:`run_on`, which subclasses implement.
    """

    def run(
        self,
        config: Any,
        *,
        progress: Progress | None = None,
        checkpoints: Any = None,
        backend: str = "local",
        max_workers: int | None = None,
        address: str | None = None,
    ) -> AuditRun:
        check_backend(backend, max_workers, address)
        return self.run_on(config, progress=progress, checkpoints=checkpoints, backend=backend, max_workers=max_workers, address=address)

    def run_on(self, config: Any, *, progress: Progress | None, checkpoints: Any, backend: str, max_workers: int | None, address: str | None) -> AuditRun:
        raise NotImplementedError


def run_capturing(audit: Audit, config: Any, **options: Any) -> AuditRun:
    """``audit.run(config, **options)``, with what the libraries warned about meanwhile in the result's ``captured_warnings``.

    Nothing reaches stderr during the run (:mod:`privaudit._core.capture`):
    the command line and the demo print the record afterwards.
    """
    _configure_library_loggers(audit.requires)
    with capture_library_output() as captured, torch_threads():  # privaudit's own torch training: the CPUs this process may use
        run = audit.run(config, **options)
    return dataclasses.replace(run, result=dataclasses.replace(run.result, captured_warnings=captured.items))


def _configure_library_loggers(requires: tuple[str, ...]) -> None:
    """Give the libraries an audit imports lazily their loggers now: the capture reroutes loggers that exist when it starts.

    transformers attaches its own stderr handler the first time its logger
    is asked for, which would otherwise happen inside the audit, past the
    capture.
    """
    import importlib.util

    if "transformers" in requires and importlib.util.find_spec("transformers") is not None:
        from transformers.utils import logging as hf_logging

        hf_logging.get_logger("transformers")
