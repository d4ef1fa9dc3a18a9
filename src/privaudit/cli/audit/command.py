"""``privaudit audit FAMILY``: one command per registered audit, all built by one function.

Every command takes the same options (``--output``, ``--config``,
``--print-config``, ``--seed``, the history options, ``--json``) plus the
family's own flags from :data:`FLAGS`, each of which either overrides a key
of the config or is handed to ``Audit.run``. The command loads the config
(the embedded default when ``--config`` is absent), checks the output path
and opens the history before any work, runs the audit, writes it with
:func:`privaudit.report.runs.write_run` (results.json, figures and
report.html, all or nothing), records it, and prints the
family's table (:mod:`privaudit.cli.tables`) or ``--json``.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..._core.extras import check_installed
from ..._core.files import check_output_apart, check_output_dir
from ..._core.imports import directory_last
from ..._core.resources import check_memory
from ...audits.base import run_capturing
from ...audits.registry import get_audit, names
from ..app import audit_app, interruptible
from ..flag_names import flags_for, flags_in_messages
from ..options import (
    HistoryOption,
    JsonOption,
    ModelIdOption,
    NoHistoryOption,
    ReleaseOption,
    VerboseOption,
    emit,
    history_recorder,
    progress_bars,
    report_captured,
)
from . import blackbox, dpsgd, fl, lm, mechanism, mia, one_run, panoramia, secret_sharer, synthetic_data, synthetic_text
from .flags import Flag

__all__ = ["FLAGS", "flags_for", "flags_in_messages", "make_audit_command", "merged_config"]


FLAGS: dict[str, tuple[Flag, ...]] = {
    "secret-sharer": secret_sharer.FLAGS,
    "dpsgd": dpsgd.FLAGS,
    "blackbox": blackbox.FLAGS,
    "fl": fl.FLAGS,
    "panoramia": panoramia.FLAGS,
    "one-run": one_run.FLAGS,
    "lm-one-run": lm.FLAGS,
    "synthetic-text": synthetic_text.FLAGS,
    "mechanism": mechanism.FLAGS,
    "mia": mia.FLAGS,
    "synthetic-data": synthetic_data.FLAGS,
}

# defaults of the flags that are not optional (the rest default to None: "not given")
_FLAG_DEFAULTS = {
    "--backend": "local",
    "--generator": "mst",
    "--helper-epochs": 10,
    "--model-kind": "privaudit",
    "--model-output": "auto",
    "--audit-size": 1000,
    "--confidence": 0.95,
    "--inclusion-randomised": False,
    "--secure-canaries": False,
}


def merged_config(audit: Any, path: Path | None, overrides: dict[str, Any]) -> Any:
    """The config that runs: the ``--config`` file's values (else the embedded default's), each flag's key replaced, then checked once.

    One precedence rule: a flag overrides the same key of the config, and a
    config value alone is enough. The config is checked only after the
    merge, so a key that needs another (``label_col`` needs ``dataset``) may
    come from either side; a flag's dotted key (``training.epochs``)
    replaces one key of a nested config.
    """
    from ...audits.config import config_to_dict, read_config_values

    for key, value in overrides.items():  # a flag's NaN or infinity, named before the config (which holds only plain JSON) sees it
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"`{key}` must be a finite number, got {value}")
    values = read_config_values(path) if path is not None else config_to_dict(audit.default_config())
    if isinstance(values, dict):  # anything else is refused, with its type, by config_from_dict
        for key, value in overrides.items():
            _set_key(values, key, list(value) if isinstance(value, tuple) else value)
    return audit.config_from_dict(values, "--config")


def _set_key(values: dict[str, Any], key: str, value: Any) -> None:
    """Set the dotted ``key`` of plain config values, creating the nested objects a config file left out."""
    *parents, leaf = key.split(".")
    for parent in parents:
        values = values.setdefault(parent, {})
        if not isinstance(values, dict):
            return  # the file's non-object value is refused by config_from_dict, which names its key
    values[leaf] = value


# the options that name a callable by its import path, per family
_IMPORT_PATH_OPTIONS = {
    "dpsgd": ("model",),
    "blackbox": ("train",),
    "panoramia": ("factory",),
    "one-run": ("train",),
    "mechanism": ("mechanism",),
    "mia": ("train", "factory"),
    "synthetic-text": ("synthetic_train",),
    "synthetic-data": ("generator",),
}


def _names_user_code(name: str, flags: tuple[Flag, ...], options: dict[str, Any], config: Any) -> bool:
    """Whether the run names the user's code by import path, as a flag or as its key in the ``--config`` file: both are found the same way."""
    wanted = _IMPORT_PATH_OPTIONS.get(name, ())
    for flag in flags:
        if flag.parameter not in wanted:
            continue
        if options.get(flag.parameter):
            return True
        value: Any = config
        for part in (flag.config or "").split(".") if flag.config else ():
            value = getattr(value, part, None)
        if flag.config and isinstance(value, str) and ":" in value:  # 'package.module:fn', where a built-in choice is a plain name
            return True
    return False


def _run_command(name: str, audit: Any, flags: tuple[Flag, ...], overrides: dict[str, Any], options: dict[str, Any]) -> None:
    """Merge the config, run the audit into ``--output``, record it and print its table."""
    from ...report.runs import write_run
    from ...report.verdict import console_lines
    from ..tables import table_for

    config = audit.with_seed(merged_config(audit, options["config"], overrides), options["seed"])
    if options["print_config"]:
        from ...audits.config import config_text

        emit(config_text(config).rstrip("\n"))
        return
    output: Path = options["output"]
    run_options = {flag.run: options[flag.parameter] for flag in flags if flag.run and options[flag.parameter] is not None}
    check_output_dir(output)
    given = [("--config", options["config"])] + [(flag.option, options[flag.parameter]) for flag in flags if isinstance(options[flag.parameter], Path)]
    check_output_apart(output, given)  # never written over the user's data, model or config
    if _names_user_code(name, flags, options, config):
        directory_last()  # a module of the current directory is found, after every installed one: never in its place
    if run_options.get("address") and run_options.get("backend") == "ray":  # Ray retries an unreachable cluster for minutes: say so within seconds
        from ...runner.ray_backend import check_address

        check_address(run_options["address"])
    check_memory(*audit.memory_estimate(config))  # refused up front, with the estimate
    check_installed(("matplotlib",), purpose="the report's figures, drawn after the audit")  # refused before the work, not after it
    record = history_recorder(options["history"], options["no_history"], options["model_id"], options["release"], output)
    with progress_bars() as progress:
        if audit.checkpointed:  # finished pieces are kept under the output and resumed on a rerun
            run_options["checkpoints"] = output / "runs"
        run = run_capturing(audit, config, progress=progress, **run_options)  # libraries' warnings go to the record, not between the bars
        progress("writing results.json, figures and report.html")
        data = write_run(output, run, report=True, title=f"privaudit audit {name}")
    record(data)
    report_captured(run.result.captured_warnings, verbose=options["verbose"])
    emit(json.dumps(data, indent=2) if options["as_json"] else table_for(run, output))
    if not options["as_json"]:
        for line in console_lines(data):
            emit(line)
    status = getattr(audit, "exit_status", None)  # a family whose verdict is the exit status, as a test runner's
    if status is not None and status(run.result):
        raise typer.Exit(status(run.result))


def make_audit_command(name: str) -> Callable[..., None]:
    """The ``privaudit audit NAME`` command function, with the common options and the family's flags."""
    from ...audits.registry import AUDITS

    flags = FLAGS.get(name, ())

    def command(**options: Any) -> None:
        audit = get_audit(name)
        given: dict[str, Flag] = {}
        for flag in flags:  # two spellings of one key (mechanism's --epsilon and --claimed-epsilon) must agree
            if flag.config and options[flag.parameter] is not None and options[flag.parameter] is not False:
                other = given.setdefault(flag.config, flag)
                if other is not flag and options[other.parameter] != options[flag.parameter]:
                    raise ValueError(
                        f"`{other.option}` and `{flag.option}` are one setting: give one of them, got {options[other.parameter]!r} and {options[flag.parameter]!r}"
                    )
        overrides = {
            flag.config: (flag.parse or (lambda v: v))(options[flag.parameter])
            for flag in flags
            if flag.config and options[flag.parameter] is not None and options[flag.parameter] is not False
        }
        with interruptible(Path(options["output"]) / "runs" if audit.checkpointed else None), flags_in_messages(flags, options["config"]):
            _run_command(name, audit, flags, overrides, options)

    common = [
        (
            "output",
            Annotated[Path, typer.Option("--output", help="Directory for results.json, report.html, figures and the audit's files.")],
            Path(f"privaudit-{name}"),
        ),
        ("config", Annotated[Optional[Path], typer.Option("--config", help="JSON or YAML config (default: the embedded default; see --print-config).")], None),
        (
            "print_config",
            Annotated[bool, typer.Option("--print-config", help="Print the config that would run (the default, or --config's) as JSON and exit.")],
            False,
        ),
        ("seed", Annotated[Optional[int], typer.Option("--seed", help="Override the config's seed.")], None),
        ("history", HistoryOption, None),
        ("no_history", NoHistoryOption, False),
        ("model_id", ModelIdOption, None),
        ("release", ReleaseOption, None),
        ("as_json", JsonOption, False),
        ("verbose", VerboseOption, False),
    ]
    # an Optional flag defaults to None ("not given"), whatever another family's flag of the same name defaults to
    family = [
        (flag.parameter, Annotated[flag.type, typer.Option(flag.option, help=flag.help)], None if _optional(flag.type) else _FLAG_DEFAULTS.get(flag.option))
        for flag in flags
    ]
    parameters = [
        inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default) for key, annotation, default in common + family
    ]
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    command.__name__ = f"audit_{name.replace('-', '_')}"
    module, _ = AUDITS[name].split(":")
    command.__doc__ = _description(module)
    return command


def _optional(annotation: Any) -> bool:
    """Whether ``annotation`` is ``Optional[...]``."""
    return type(None) in getattr(annotation, "__args__", ())


def _description(module: str) -> str:
    """The first line of the family module's docstring, without importing optional dependencies."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    import ast

    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    return (ast.get_docstring(tree) or "").split("\n")[0]


for _name in names():
    audit_app.command(_name)(make_audit_command(_name))
