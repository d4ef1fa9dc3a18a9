"""Warnings and log records that libraries raise during an audit: captured, counted, and kept for the record.

A user watching an audit should not have to judge whether a library's
warning in the middle of the progress bars means a wrong number. So, while
an audit runs, :func:`capture_library_output` collects every warning and
every log record at WARNING or above from the libraries it calls; the
result records them (``captured_warnings`` in results.json and the report's
"Warnings" section), and the command prints them only with ``--verbose``.

Those that concern the validity of a number are restated in privaudit's own
words (:data:`VALIDITY_NOTES`) and always shown: the reader of a bound must
know them.

>>> import warnings
>>> with capture_library_output() as captured:
...     for step in range(2):
...         warnings.warn("Secure RNG turned off. This is perfectly fine for experimentation", UserWarning)
>>> [(item.count, item.category) for item in captured.items]
[(2, 'UserWarning')]
>>> captured.items[0].note.startswith("the DP library drew its noise without a secure random generator")
True
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import warnings
from collections.abc import Iterable, Iterator

__all__ = ["VALIDITY_NOTES", "CapturedWarning", "Capture", "capture_library_output", "record_elsewhere"]

#: Library messages that bear on a number's validity -> what privaudit says about them.
VALIDITY_NOTES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"Secure RNG turned off", re.IGNORECASE),
        "the DP library drew its noise without a secure random generator (Opacus secure_mode=False): "
        "a DP claim holds for the idealised mechanism, not against an adversary who can predict the generator",
    ),
    (
        re.compile(r"Optimal order is the (largest|smallest) alpha", re.IGNORECASE),
        "the RDP accountant's best order lies at the edge of its orders: the epsilon it reports may be looser "
        "(larger) than the mechanism's, so a claim computed from it is not tight",
    ),
)


@dataclasses.dataclass(frozen=True)
class CapturedWarning:
    """One distinct warning or log record a library raised during an audit, and how often.

    ``source`` is the warning's category (``UserWarning``) or the logger's
    name; ``note`` is privaudit's statement when the message bears on a
    number's validity, else empty.
    """

    source: str
    category: str
    message: str
    count: int = 1
    note: str = ""


def _where(filename: str, lineno: int) -> str:
    """A warning's origin without the machine's paths: the path inside its package (``opacus/privacy_engine.py:98``), else the last two parts.

    >>> _where("/venv/lib/python3.11/site-packages/opacus/privacy_engine.py", 98), _where("/home/me/work/tests/test_x.py", 3)
    ('opacus/privacy_engine.py:98', 'tests/test_x.py:3')
    """
    path = filename.replace("\\", "/")
    parts = re.split(r"(?:site|dist)-packages/|/src/", path)
    tail = parts[-1] if len(parts) > 1 else "/".join(path.split("/")[-2:])
    return f"{tail}:{lineno}"


def _note_for(message: str) -> str:
    return next((note for pattern, note in VALIDITY_NOTES if pattern.search(message)), "")


@dataclasses.dataclass
class Capture:
    """What :func:`capture_library_output` collected, distinct messages first-seen order."""

    _seen: dict[tuple[str, str, str], int] = dataclasses.field(default_factory=dict)

    def add(self, source: str, category: str, message: str, count: int = 1) -> None:
        key = (source, category, " ".join(message.split())[:2000])
        self._seen[key] = self._seen.get(key, 0) + count

    @property
    def items(self) -> tuple[CapturedWarning, ...]:
        return tuple(CapturedWarning(source, category, message, count, _note_for(message)) for (source, category, message), count in self._seen.items())


class _Collector(logging.Handler):
    def __init__(self, capture: Capture) -> None:
        super().__init__(level=logging.WARNING)
        self.capture = capture

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith("privaudit"):
            self.capture.add(record.name, record.levelname, record.getMessage())


# the captures open in this process, innermost last: what another process captured is added to the innermost
_ACTIVE: list[Capture] = []


def record_elsewhere(items: Iterable[CapturedWarning]) -> None:
    """Add what was captured in another process (a runner's worker) to the capture open here; without one, warn once per item.

    >>> with capture_library_output() as captured:
    ...     record_elsewhere([CapturedWarning("sklearn/x.py:1", "ConvergenceWarning", "not converged", 3)])
    >>> [(item.category, item.count) for item in captured.items]
    [('ConvergenceWarning', 3)]
    """
    for item in items:
        if _ACTIVE:
            _ACTIVE[-1].add(item.source, item.category, item.message, item.count)
        else:
            warnings.warn(f"{item.category} from {item.source} ({item.count}x): {item.message}", UserWarning, stacklevel=2)


@contextlib.contextmanager
def capture_library_output() -> Iterator[Capture]:
    """Collect the warnings and WARNING+ log records raised inside the block; nothing reaches stderr.

    Loggers that print through handlers of their own (transformers' does)
    are routed to the collector for the block and restored afterwards.
    """
    capture = Capture()
    collector = _Collector(capture)
    loggers = [logging.getLogger()] + [item for item in logging.Logger.manager.loggerDict.values() if isinstance(item, logging.Logger) and item.handlers]
    saved = [(logger, logger.handlers[:], logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.handlers = [collector]
        logger.propagate = False
    _ACTIVE.append(capture)
    try:
        with warnings.catch_warnings(record=True) as recorded:
            warnings.simplefilter("always")
            yield capture
        for item in recorded:
            capture.add(_where(item.filename, item.lineno), item.category.__name__, str(item.message))
    finally:
        _ACTIVE.remove(capture)
        for logger, handlers, propagate in saved:
            logger.handlers = handlers
            logger.propagate = propagate
