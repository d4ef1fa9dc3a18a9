"""The option of a family's ``privaudit audit`` command (:class:`Flag`), and the parsers and options the families share."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

__all__ = ["Flag"]


@dataclasses.dataclass(frozen=True)
class Flag:
    """A family's own option: it overrides config key ``config`` (a dotted path) or is passed to ``run`` as ``run``."""

    option: str
    type: Any
    help: str
    config: str | None = None
    run: str | None = None
    parse: Callable[[Any], Any] | None = None

    @property
    def parameter(self) -> str:
        return self.option.lstrip("-").replace("-", "_")


def _schedule(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"`--schedule` must be comma-separated integers, got {text!r}") from None


def _domain(text: str) -> tuple[float, float]:
    """``LOW,HIGH``: the range of a record's fields that the mechanism audit's search draws from."""
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"`--domain` must be two comma-separated numbers LOW,HIGH with LOW < HIGH, got {text!r}") from None
    if not low < high:
        raise ValueError(f"`--domain` must be two comma-separated numbers LOW,HIGH with LOW < HIGH, got {text!r}")
    return low, high


def _pool_file(path: Path) -> str:
    """mia's pool: a labelled file, or a .txt of texts (one record a line) for --target-kind huggingface."""
    return str(path) if str(path).lower().endswith(".txt") else _dataset_file(path)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _image_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        shape = ()
    if len(shape) != 3:
        raise ValueError(f"`--image-shape` must be three comma-separated integers C,H,W (channels, height, width), got {text!r}")
    return shape


def _import_path(option: str) -> Callable[[str], str]:
    """The parser of an option that names a callable as 'package.module:callable'."""

    def parse(text: str) -> str:
        from ...models.loading import check_import_path

        return check_import_path(text, option)

    return parse


def _dataset_file(path: Path) -> str:
    from ..._core.labelled import LABELLED_SUFFIXES

    if not str(path).lower().endswith(LABELLED_SUFFIXES):
        raise ValueError(f"`--data` must be a .npz, .csv or .parquet file, got {str(path)!r}")
    return str(path)


_LABEL_RULE = "(without it: the one column of whole numbers or named label/labels/y/target/class, else refused)."


_LABEL_COL = Flag("--label-col", Optional[str], "The label column of a .csv (needs a header row) or .parquet --data.", config="label_col")
