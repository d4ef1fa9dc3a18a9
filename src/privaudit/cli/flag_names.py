"""A family's option (:class:`Flag`), and the one rule for messages: a config key or library argument reads as the flag the user typed.

Light on purpose: the score commands (``privaudit bound``, ``exposure``)
use it without loading the audit commands.

>>> flag_text("`num_canaries` must be in [20, 170], got 300", (Flag("--canaries", int, "", config="num_canaries"),))
'`--canaries` must be in [20, 170], got 300'
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Flag", "flag_text", "flags_for", "flags_in_messages"]


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


def flag_text(message: str, flags: tuple[Flag, ...], keys_in_file: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    """``message`` with each config key quoted as `key` replaced by the flag that sets it, unless the user wrote that key in --config.

    >>> flag_text("`num_canaries` must be in [20, 170], got 300", (Flag("--canaries", int, "", config="num_canaries"),))
    '`--canaries` must be in [20, 170], got 300'
    """
    for flag in flags:
        key = flag.config or flag.run  # a key of the config, or an argument of the audit's run
        if key and key not in keys_in_file:
            flagged = f"`{flag.option}`"
            message = message.replace(f"`{key} ({flag.option})`", flagged).replace(f"`{key}`", flagged)
            # "`--label-col` (`label_col`)" and "--label-col (config `label_col`)" already name the flag once
            for twice in (f"{flagged} ({flagged})", f"{flag.option} (config {flagged})", f"{flag.option} ({flagged})"):
                message = message.replace(twice, flagged if twice.startswith("`") else flag.option)
            if flagged in message:
                message = message.replace(f" ({flag.option})", "")
    return message


def flags_for(**options: str | None) -> tuple[Flag, ...]:
    """Flags for :func:`flags_in_messages` from ``key=option`` pairs: a library argument's name `key` in a message reads as ``option`` (None: kept).

    For the commands outside ``privaudit audit``, whose options reach a library function under its own argument names.

    >>> flag_text("`delta` must be in (0, 1), got 2", flags_for(delta="--delta"))
    '`--delta` must be in (0, 1), got 2'
    """
    return tuple(Flag(option, Any, "", config=key) for key, option in options.items() if option is not None)


@contextlib.contextmanager
def flags_in_messages(flags: tuple[Flag, ...], config_path: Path | None):
    """Rewrite a ValueError's config keys into the flags the user typed (one rule for every message)."""
    try:
        yield
    except ValueError as error:
        keys: set[str] = set()
        if config_path is not None:
            with contextlib.suppress(OSError, ValueError):  # the file was read once already; this only decides which words to keep
                from ..audits.config import read_config_values

                values = read_config_values(config_path)
                keys = set(values) if isinstance(values, dict) else set()
        text = flag_text(str(error), flags, keys)
        if text == str(error):
            raise
        raise ValueError(text) from error
