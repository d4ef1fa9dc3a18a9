"""The option of a family's ``privaudit audit`` command (:class:`Flag`), and the parsers and options the families share."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Optional

from ..flag_names import Flag

__all__ = ["Flag", "backend_flags", "data_flag", "delta_flag", "factory_flag", "path_flag"]


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


def data_flag(canaries: str) -> Flag:
    """``--data``: the user's labelled table instead of the embedded dataset (config key ``data``); ``canaries`` says where the canaries come from."""
    return Flag(
        "--data",
        Optional[Path],
        "Your dataset instead of the config's embedded one: .npz with arrays x (n, features) and y (n integer labels), "
        "or .csv/.parquet of numbers, one example per row, label in --label-col " + _LABEL_RULE + " Split 75/25 into train and test by --seed; "
        f"{canaries} Features are used as they are (no scaling).",
        config="data",
        parse=_dataset_file,
    )


def backend_flags(where: str = "") -> tuple[Flag, ...]:
    """``--backend``, ``--address`` and ``--workers``: where a family's runs go (``where`` ends --backend's help)."""
    return (
        Flag("--backend", str, f"local (process pool) or ray{where}.", run="backend"),
        Flag("--address", Optional[str], "Ray cluster address, e.g. auto or ray://host:10001 (with --backend ray).", run="address"),
        Flag("--workers", Optional[int], "Worker processes (local) or CPUs of a new local Ray instance; default: all cores.", run="max_workers"),
    )


def delta_flag(help: str) -> Flag:
    """``--delta``: the δ of a family's bound or claim (config key ``delta``)."""
    return Flag("--delta", Optional[float], help, config="delta")


def factory_flag(kind_option: str, *, config: str | None = None, run: str | None = None) -> Flag:
    """``--factory``, for a torch model of ``kind_option``, overriding config key ``config`` or passed to ``run`` as ``run``."""
    return Flag("--factory", Optional[str], f"package.module:callable that builds your torch module (with {kind_option} torch).", config=config, run=run)


_ONE_RUN_DELTA = delta_flag("δ of the one-run bound (the claim's δ).")


def path_flag(option: str, help: str, config: str) -> Flag:
    """A file or directory option, given to the config as text (key ``config``)."""
    return Flag(option, Optional[Path], help, config=config, parse=str)
