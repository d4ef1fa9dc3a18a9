"""Audit configs: frozen dataclasses read from JSON or YAML and checked by pydantic.

One loader for every ``--config`` and every embedded default. Each key is
checked against the dataclass's annotations in pydantic's strict mode (an
integer where an ``int`` is declared, a list where a tuple is, never a
string for a number, never ``true`` for a number), nested configs are checked
recursively, unknown keys are refused, and every message names the key's
path. The dataclass's own ``__post_init__`` then checks ranges.

>>> from privaudit.audits.fl import FLAuditConfig
>>> config_from_dict(FLAuditConfig, {"training": {"num_rounds": 20}}).training.num_rounds
20
>>> config_from_dict(FLAuditConfig, {"training": {"num_rounds": "ten"}})
Traceback (most recent call last):
...
ValueError: `--config`: `training.num_rounds` must be an integer, got 'ten'
>>> config_from_dict(FLAuditConfig, {"training": {"rounds": 5}})
Traceback (most recent call last):
...
ValueError: `--config: training`: unknown keys rounds; allowed: num_rounds, ...
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, TypeVar

from .._core.extras import require
from .._core.files import read_json, read_text_limited
from .._core.messages import printable
from .._core.results import to_plain

__all__ = ["config_from_dict", "config_to_dict", "default_config", "config_text", "load_config", "parse_config_text", "read_config_values", "with_overrides"]

T = TypeVar("T")

_EXPECTED = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "tuple_type": "a list",
    "list_type": "a list",
    "dict_type": "an object",
    "dataclass_type": "an object",
    "dataclass_exact_type": "an object",
    "finite_number": "a finite number",
}
_MAX_ECHO = 80
MAX_YAML_BYTES = 2**20  # PyYAML reads about 1 MB a second; a config is a few hundred bytes


def _echo(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_ECHO else text[: _MAX_ECHO - 3] + "..."


def _field_types(cls: type) -> list[Any]:
    """The annotated types of a dataclass's fields; where they cannot be resolved, the types of the defaults."""
    import typing

    try:
        return list(typing.get_type_hints(cls).values())
    except NameError:  # a class defined where its annotations' names are not global (a doctest, a function)
        return [type(field.default) for field in dataclasses.fields(cls) if field.default is not dataclasses.MISSING]


def _dataclasses_in(cls: type) -> list[type]:
    """``cls`` and every dataclass reachable through its field annotations."""
    import typing

    seen: list[type] = []

    def visit(candidate: Any) -> None:
        if dataclasses.is_dataclass(candidate) and isinstance(candidate, type) and candidate not in seen:
            seen.append(candidate)
            for hint in _field_types(candidate):
                visit(hint)
        for argument in typing.get_args(candidate):
            visit(argument)

    visit(cls)
    return seen


@cache
def _adapter(cls: Any) -> Any:
    from pydantic import ConfigDict, TypeAdapter

    for nested in _dataclasses_in(cls):
        if "__pydantic_config__" not in vars(nested):
            nested.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
    return TypeAdapter(cls)


def _allowed_keys(cls: type, path: tuple) -> list[str]:
    import typing

    current: Any = cls
    for key in path:
        fields = {field.name: field for field in dataclasses.fields(current)} if dataclasses.is_dataclass(current) else {}
        field = fields.get(key)
        current = None if field is None else (type(field.default) if dataclasses.is_dataclass(field.default) else field.type)
        for argument in typing.get_args(current):
            if dataclasses.is_dataclass(argument):
                current = argument
    return [field.name for field in dataclasses.fields(current)] if dataclasses.is_dataclass(current) else []


def _message(cls: type, error: Any, name: str) -> str:
    problems = error.errors(include_url=False)
    unknown = [problem for problem in problems if problem["type"] == "unexpected_keyword_argument"]
    if unknown:
        parent = tuple(unknown[0]["loc"][:-1])
        keys = sorted(_echo(str(problem["loc"][-1])).strip("'") for problem in unknown if tuple(problem["loc"][:-1]) == parent)
        where = f"`{name}`" if not parent else f"`{name}: {'.'.join(map(str, parent))}`"
        return f"{where}: unknown keys {', '.join(keys)}; allowed: {', '.join(_allowed_keys(cls, parent))}"
    problem = problems[0]
    key = ".".join(str(part) for part in problem["loc"])
    if problem["type"] == "value_error":  # raised by a config's own range checks: already names its argument
        return str(problem["ctx"]["error"]) if "ctx" in problem else problem["msg"]
    if problem["type"] == "missing":
        return f"`{name}`: `{key}` is required"
    expected = _EXPECTED.get(problem["type"])
    if expected is None:
        return f"`{name}`: `{key}`: {problem['msg']}, got {_echo(problem.get('input'))}"
    return f"`{name}`: `{key}` must be {expected}, got {_echo(problem.get('input'))}"


def config_from_dict(cls: type[T], values: Any, name: str = "--config") -> T:
    """An instance of the config dataclass ``cls`` from plain JSON values (see the module docstring)."""
    from pydantic import ValidationError

    if not isinstance(values, dict):
        raise ValueError(f"`{name}` must hold a JSON object, got {type(values).__name__}")
    try:
        text = json.dumps(values, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"`{name}` must hold plain JSON values: {error}") from None
    try:
        return _adapter(cls).validate_json(text, strict=True)  # type: ignore[no-any-return,arg-type]
    except ValidationError as error:
        raise ValueError(_message(cls, error, name)) from None


def _plain_yaml_loader(yaml: Any, source: str, name: str) -> Any:
    """yaml's SafeLoader (no ``!!python`` tags) that also refuses anchors and aliases: 1 KB of aliases can expand to gigabytes."""

    class PlainLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                line = event.start_mark.line + 1
                raise ValueError(
                    f"`{name}`: {source!r} uses a YAML anchor or alias (&name / *name, line {line}), which privaudit does not read "
                    "(a few of them can expand to gigabytes); write the values out"
                )
            return super().compose_node(parent, index)

        def construct_document(self, node: Any) -> Any:
            _check_yaml_nodes(yaml, node, source, name)
            return super().construct_document(node)

    return PlainLoader


# plain scalars that YAML 1.1 reads as something other than what a reader of YAML 1.2 (or JSON) sees
_YAML11_INT = re.compile(r"^[-+]?(0[0-7_]+|0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+|[0-9][0-9_]*(:[0-5]?[0-9])+|[0-9]+_[0-9_]*)$")
_YAML11_FLOAT = re.compile(r"^[-+]?([0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*|[0-9]*_[0-9_]*\.[0-9_]*)$")
_YAML_BOOLEANS = {"true", "false"}


def _check_yaml_nodes(yaml: Any, root: Any, source: str, name: str) -> None:
    """Refuse a duplicate key (naming its path) and the YAML 1.1 readings that differ from YAML 1.2's.

    ``1:30`` (sexagesimal 90), ``010`` (octal 8), ``0x10`` (16), ``1_000``
    and ``yes``/``on``/``off`` are read by PyYAML as numbers and booleans
    that the text does not say; privaudit asks for them quoted or written
    plainly. Iterative, so a deep document cannot overflow the stack.
    """
    stack = [(root, "")]
    while stack:
        node, path = stack.pop()
        where = f"key {printable(repr(path))}" if path else "the top level"
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is not None and key in seen:
                    raise ValueError(
                        f"`{name}`: {source!r} gives {where} the key {printable(repr(key))} twice (lines {seen[key]} and "
                        f"{key_node.start_mark.line + 1}); keep one"
                    )
                if key is not None:
                    seen[key] = key_node.start_mark.line + 1
                stack.append((value_node, f"{path}.{key}" if path else str(key)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{path}.{index}") for index, item in enumerate(node.value))
        elif isinstance(node, yaml.ScalarNode) and node.style is None:
            text, tag = node.value, node.tag.rsplit(":", 1)[-1]
            ambiguous = (
                (tag == "int" and _YAML11_INT.match(text))
                or (tag == "float" and _YAML11_FLOAT.match(text))
                or (tag == "bool" and text.lower() not in _YAML_BOOLEANS)
            )
            if ambiguous:
                kind = "a boolean" if tag == "bool" else "a number"
                raise ValueError(
                    f"`{name}`: {source!r} line {line}, {where}: {printable(repr(text))} is read by YAML 1.1 as {kind} the text does not say "
                    "(sexagesimal, octal, hexadecimal, underscores or yes/no/on/off); quote it, or write the number in decimal or true/false"
                )


def parse_config_text(text: str, source: str, name: str = "--config") -> Any:
    """The JSON or YAML document in ``text`` (YAML when ``source`` ends in .yaml or .yml)."""
    if source.lower().endswith((".yaml", ".yml")):
        yaml = require("yaml", purpose="YAML configs")
        try:
            return yaml.load(text, Loader=_plain_yaml_loader(yaml, source, name))  # noqa: S506 - a SafeLoader that also refuses aliases
        except RecursionError:
            raise ValueError(f"`{name}`: {source!r} is nested too deeply to read") from None
        except yaml.YAMLError as error:
            raise ValueError(f"`{name}`: {source!r} is not valid YAML: {' '.join(str(error).split())[:200]}") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"`{name}`: {source!r} is nested too deeply to read") from None
    except ValueError as error:
        raise ValueError(f"`{name}`: {source!r} is not valid JSON: {error}") from None


def read_config_values(path: Any, name: str = "--config") -> Any:
    """The plain values of a JSON or YAML config file, before any check (for merging with command-line flags)."""
    if str(path).lower().endswith((".yaml", ".yml")):  # a config is a few lines: the limit comes before PyYAML's slow parser
        return parse_config_text(read_text_limited(path, name, max_bytes=MAX_YAML_BYTES), str(path), name)
    return read_json(path, name)


def load_config(cls: type[T], path: Any, name: str = "--config") -> T:
    """The config dataclass ``cls`` from a JSON or YAML file."""
    return config_from_dict(cls, read_config_values(path, name), name)


def config_to_dict(config: Any) -> dict[str, Any]:
    """A config as plain JSON values; :func:`config_from_dict` reads it back to an equal config."""
    return to_plain(config)


def _merged(config: Any, overrides: Mapping[str, Any]) -> dict[str, Any]:
    merged = config_to_dict(config)
    for key, value in overrides.items():
        current = getattr(config, key, None)
        nested = isinstance(value, Mapping) and dataclasses.is_dataclass(current) and not isinstance(current, type)
        merged[key] = _merged(current, value) if nested else to_plain(value)
    return merged


def with_overrides(config: T, overrides: Mapping[str, Any], name: str = "overrides") -> T:
    """``config`` with the keys of ``overrides`` replaced, checked as any config.

    A nested config (a dataclass field) is merged key by key; any other value,
    a dict field included, is replaced whole.

    >>> from privaudit.audits.fl import FLAuditConfig
    >>> config = with_overrides(FLAuditConfig(), {"num_canaries": 20, "training": {"num_rounds": 3}})
    >>> config.num_canaries, config.training.num_rounds, config.training.hidden == FLAuditConfig().training.hidden
    (20, 3, True)
    """
    return config_from_dict(type(config), _merged(config, overrides), name)


def default_config(cls: type[T], resource: str) -> T:
    """The embedded default config ``privaudit/configs/<resource>`` (package data)."""
    text = resources.files("privaudit.configs").joinpath(resource).read_text(encoding="utf-8")
    return config_from_dict(cls, parse_config_text(text, resource), f"default config {resource}")


def config_text(config: Any) -> str:
    """The config as indented JSON text (what ``--print-config`` prints)."""
    return json.dumps(config_to_dict(config), indent=2) + "\n"
