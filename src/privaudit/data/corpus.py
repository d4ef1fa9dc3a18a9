"""The default text corpus: CPython's own documentation topics.

Every CPython installation ships ``pydoc_data.topics``, the text of the
language reference's topics that ``help()`` shows (about 750 kB, under the
Python Software Foundation License). privaudit uses it as an offline
real-text corpus: no download, identical on every machine with the same
Python version. Lines are stripped, kept only if non-empty, and restricted to
printable ASCII so every character is in the model's vocabulary.
"""

from __future__ import annotations

import string

__all__ = ["CORPUS_SOURCE", "load_default_corpus"]

CORPUS_SOURCE = "CPython pydoc_data.topics (Python Software Foundation License)"
_PRINTABLE = set(string.printable) - set("\t\n\r\x0b\x0c")


def load_default_corpus(*, max_chars: int | None = None) -> list[str]:
    """Lines of the documentation topics, in a fixed order.

    >>> lines = load_default_corpus()
    >>> sum(len(line) + 1 for line in lines) > 400_000
    True
    """
    from pydoc_data import topics

    lines, total = [], 0
    for key in sorted(topics.topics):
        for raw in topics.topics[key].splitlines():
            line = "".join(ch for ch in raw.strip() if ch in _PRINTABLE)
            if not line:
                continue
            lines.append(line)
            total += len(line) + 1
            if max_chars is not None and total >= max_chars:
                return lines
    return lines
