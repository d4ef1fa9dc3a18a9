"""Short, safe renderings of user values for error messages and terminal output.

An error message quotes the value it refuses, but a 5 MB config string or a
value holding terminal escape sequences must not end up on the user's
terminal as is: :func:`describe_value` cuts the quoted value to about 80
characters, and :func:`printable` escapes control characters.

>>> len(describe_value("x" * 5_000_000)) <= 110, describe_value("x" * 200)[-16:]
(True, '(202 characters)')
>>> printable("v1\\x1b[2J")
'v1\\\\x1b[2J'
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_ECHO", "describe_value", "error_line", "has_control_characters", "printable"]

MAX_ECHO = 80

# C0 and C1 controls, DEL, and the Unicode format characters that reorder text (bidi overrides, ...)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")  # and lone surrogates


def describe_value(value: Any, limit: int = MAX_ECHO) -> str:
    """``repr(value)``, cut to about ``limit`` characters with the full length noted.

    The repr escapes control characters, so the result is safe to print.

    >>> describe_value(1.5), describe_value([1, 2])
    ('1.5', '[1, 2]')
    >>> describe_value(list(range(100)), limit=10)
    '[0, 1, 2, … (390 characters)'
    """
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not turn an error message into a traceback
        text = f"<{type(value).__name__}>"
    if len(text) <= limit:
        return printable(text)
    return f"{printable(text[:limit])}… ({len(text)} characters)"


def has_control_characters(text: str) -> bool:
    """True when ``text`` holds a control or bidi-override character (ESC, CR, BEL, U+202E, ...).

    >>> has_control_characters("v1.2"), has_control_characters("v1\\x1b[31m"), has_control_characters("a\\u202eb")
    (False, True, True)
    """
    return bool(_CONTROL.search(text))


def printable(text: Any) -> str:
    """``str(text)`` with every control character written as an escape (``\\x1b``, ``\\u202e``): safe on a terminal.

    >>> printable("ok"), printable("a\\rb"), printable(None)
    ('ok', 'a\\\\x0db', 'None')
    """
    text = str(text)

    def escape(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNPRINTABLE.sub(escape, text)  # lone surrogates too: a UTF-8 terminal cannot encode them


def error_line(text: Any) -> str:
    """``text`` as one terminal-safe line: whitespace runs (newlines included) made one space, control and bidi characters escaped.

    Every ``error: ...`` line the command line prints goes through it, so a
    CSV header or a file name holding ``ESC[2J`` or U+202E cannot repaint
    or reorder the user's terminal.

    >>> error_line("`--data` has no column 'a\\x1b[2Jb'\\n  (line 2)")
    "`--data` has no column 'a\\\\x1b[2Jb' (line 2)"
    >>> error_line("column 'abc\\u202etxt.exe'")
    "column 'abc\\\\u202etxt.exe'"
    """
    return printable(" ".join(str(text).split()))
