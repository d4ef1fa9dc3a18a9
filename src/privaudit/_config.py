"""Read an audit's JSON configuration file into its frozen config dataclass, checking every key.

One loader for every ``--config``: the file must exist and hold a JSON
object, every key must be a field of the dataclass, and each value must have
the type of the field's default (an integer where the default is an integer,
a list where it is a tuple, ...). Ranges are then checked by the dataclass
itself. Every failure is a ValueError that names ``--config`` and the key.

>>> import dataclasses, tempfile, os
>>> @dataclasses.dataclass(frozen=True)
... class Example:
...     epochs: int = 3
...     rate: float = 0.1
>>> path = os.path.join(tempfile.mkdtemp(), "c.json")
>>> _ = open(path, "w").write('{"epochs": "ten"}')
>>> load_config(Example, path)
Traceback (most recent call last):
...
ValueError: `--config`: `epochs` must be an integer, got 'ten'
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

__all__ = ["check_config_values", "load_config", "read_json"]


def _expected(default: Any) -> tuple[tuple[type, ...], str] | None:
    """Accepted JSON types for a field with this default, and their name; None: anything."""
    if isinstance(default, bool):
        return (bool,), "true or false"
    if isinstance(default, int):
        return (int,), "an integer"
    if isinstance(default, float):
        return (int, float), "a number"
    if isinstance(default, str):
        return (str,), "a string"
    if isinstance(default, (tuple, list)):
        return (list, tuple), "a list"
    if isinstance(default, dict):
        return (dict,), "an object"
    return None


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


_BY_ANNOTATION = (("float", 0.0), ("int", 0), ("str", ""), ("bool", False))


def _example(field: dataclasses.Field) -> Any:
    """The default, or for an optional field (default None) a value of its annotated type."""
    default = _default(field)
    if default is None:
        annotation = str(field.type)
        for type_name, example in _BY_ANNOTATION:
            if annotation.startswith(type_name):
                return example
    return default


def check_config_values(cls, values: Any, name: str = "--config") -> dict[str, Any]:
    """``values`` checked against the fields of dataclass ``cls`` (keys and JSON types); lists become tuples where the default is a tuple."""
    if not isinstance(values, dict):
        raise ValueError(f"`{name}` must hold a JSON object, got {type(values).__name__}")
    fields = {field.name: field for field in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"`{name}`: unknown keys {', '.join(unknown)}; allowed: {', '.join(fields)}")
    checked = {}
    for key, value in values.items():
        default = _default(fields[key])
        expected = _expected(_example(fields[key]))
        is_bool_for_number = isinstance(value, bool) and expected is not None and bool not in expected[0]
        if value is not None and expected is not None and (not isinstance(value, expected[0]) or is_bool_for_number):
            raise ValueError(f"`{name}`: `{key}` must be {expected[1]}, got {value!r}")
        if value is None and default is not None:
            raise ValueError(f"`{name}`: `{key}` must be {expected[1] if expected else 'set'}, got null")
        checked[key] = tuple(value) if isinstance(default, tuple) and isinstance(value, list) else value
    return checked


def load_config(cls, path, name: str = "--config"):
    """An instance of dataclass ``cls`` from the JSON file ``path`` (see the module docstring)."""
    values = read_json(path, name)
    try:
        return cls(**check_config_values(cls, values, name))
    except TypeError as error:  # a value of the right JSON type that the dataclass still cannot use
        raise ValueError(f"`{name}`: {error}") from None


def read_json(path, name: str = "--config") -> Any:
    """The parsed contents of the JSON file ``path``; a ValueError naming ``name`` if it cannot be read."""
    path = Path(path)
    if not path.is_file():
        reason = "is a directory" if path.is_dir() else "file not found"
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {reason}")
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"`{name}`: cannot read {str(path)!r}: {error}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"`{name}`: {str(path)!r} is not valid JSON: {error}") from None
    return values
