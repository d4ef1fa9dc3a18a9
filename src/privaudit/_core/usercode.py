"""Calling the user's own code (``--train``, ``--mechanism``, a model factory, ``--synthetic-train``): its failures become one line.

Whatever the user's function does — raise ``KeyError``, ``MemoryError``,
``RecursionError``, call ``sys.exit(0)`` — :func:`call_user` turns it into a
:class:`UserCodeError` (a ValueError, so the CLI prints one ``error:`` line
and exits 2) naming the option, the function and the exception. The original
exception stays the error's ``__cause__``; ``--verbose`` prints its traceback.
Only Ctrl-C (``KeyboardInterrupt``) passes through. While the user's
function runs, ``os._exit`` called from its thread is refused the same way
(the process would otherwise end at once, with exit status 0 and nothing
written); a function that bound ``os._exit`` before the call, or another
thread, still ends the process, which the runner reports as a dead worker.

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
>>> import os
>>> call_user("--generator", "g:fn", lambda: os._exit(0))
Traceback (most recent call last):
...
privaudit._core.usercode.UserCodeError: `--generator` 'g:fn' called os._exit(0); it must return, not exit the process
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["UserCodeError", "call_user", "exception_line", "raised_by_user"]

#: characters of the exception's own message kept in the one line
_MESSAGE_LIMIT = 300


class UserCodeError(ValueError):
    """The user's own code failed or exited; the message names the option, the function and what happened."""


class _ProcessExit(BaseException):
    """``os._exit(code)`` called by the user's function: raised in its place so the process lives to say so."""

    def __init__(self, code: Any) -> None:
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def _os_exit_refused() -> Iterator[None]:
    """``os._exit`` raises :class:`_ProcessExit` in this thread (other threads still exit), restored afterwards."""
    real, caller = os._exit, threading.get_ident()

    def refuse(code: int) -> None:
        if threading.get_ident() != caller:
            real(code)
        raise _ProcessExit(code)

    os._exit = refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


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
    if isinstance(error, (SystemExit, _ProcessExit)):
        call = "sys.exit" if isinstance(error, SystemExit) else "os._exit"
        return UserCodeError(f"`{option}` {path!r} called {call}({error.code!r}){context}; it must return, not exit the process")
    return UserCodeError(f"`{option}` {path!r} raised {exception_line(error)}{context}")


def call_user(option: str, path: str, function: Callable[..., Any], *args: Any, context: str = "", **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, the user's code given as ``option`` ``path``; any failure or exit is a :class:`UserCodeError`."""
    try:
        with _os_exit_refused():
            return function(*args, **kwargs)
    except (KeyboardInterrupt, UserCodeError):
        raise
    except BaseException as error:  # noqa: BLE001 - the user's code: SystemExit and MemoryError included, never a silent exit
        raise raised_by_user(option, path, error, context) from error
