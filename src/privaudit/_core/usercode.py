"""Calling the user's own code (``--train``, ``--mechanism``, a model factory, ``--synthetic-train``): its failures become one line.

Whatever the user's function does — raise ``KeyError``, ``MemoryError``,
``RecursionError``, call ``sys.exit(0)`` — :func:`call_user` turns it into a
:class:`UserCodeError` (a ValueError, so the CLI prints one ``error:`` line
and exits 2) naming the option, the function and the exception. The original
exception stays the error's ``__cause__``; ``--verbose`` prints its traceback.
Only Ctrl-C (``KeyboardInterrupt``) passes through.

>>> def train(x, *, seed):
...     return {"a": 1}[x]
>>> call_user("--train", "mytrain:train", train, "b", seed=0, context=" on a probe of 8 records")
Traceback (most recent call last):
...
privaudit._core.usercode.UserCodeError: `--train` 'mytrain:train' raised KeyError: 'b' on a probe of 8 records
>>> import sys
>>> call_user("--mechanism", "m:run", sys.exit, 0)
Traceback (most recent call last):
...
privaudit._core.usercode.UserCodeError: `--mechanism` 'm:run' called sys.exit(0); it must return, not exit the process
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["UserCodeError", "call_user", "exception_line", "raised_by_user"]

#: characters of the exception's own message kept in the one line
_MESSAGE_LIMIT = 300


class UserCodeError(ValueError):
    """The user's own code failed or exited; the message names the option, the function and what happened."""


def exception_line(error: BaseException) -> str:
    """``"KeyError: 'mean radius'"``: the exception's type and message on one line, cut to a few hundred characters.

    >>> exception_line(MemoryError()), exception_line(ValueError("a\\n  b"))
    ('MemoryError', 'ValueError: a b')
    """
    try:
        message = " ".join(str(error).split())
    except Exception:  # noqa: BLE001 - a hostile __str__ must not hide the failure it describes
        message = ""
    if len(message) > _MESSAGE_LIMIT:
        message = message[:_MESSAGE_LIMIT] + f"… ({len(message)} characters)"
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def raised_by_user(option: str, path: str, error: BaseException, context: str = "") -> UserCodeError:
    """The :class:`UserCodeError` for ``error`` raised (or ``sys.exit`` called) by the user's ``path`` given as ``option``."""
    if isinstance(error, SystemExit):
        return UserCodeError(f"`{option}` {path!r} called sys.exit({error.code!r}){context}; it must return, not exit the process")
    return UserCodeError(f"`{option}` {path!r} raised {exception_line(error)}{context}")


def call_user(option: str, path: str, function: Callable[..., Any], *args: Any, context: str = "", **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, the user's code given as ``option`` ``path``; any failure or exit is a :class:`UserCodeError`."""
    try:
        return function(*args, **kwargs)
    except (KeyboardInterrupt, UserCodeError):
        raise
    except BaseException as error:  # noqa: BLE001 - the user's code: SystemExit and MemoryError included, never a silent exit
        raise raised_by_user(option, path, error, context) from error
