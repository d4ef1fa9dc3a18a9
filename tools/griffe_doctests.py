"""A griffe extension: doctest examples in docstrings render as Python code on the documentation site.

Docstrings keep plain ``>>>`` examples, which pytest runs as doctests; without
this, Markdown reads each ``>`` as a quotation.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc):`~?([^`]+)`")


def fence_doctests(text: str) -> str:
    r"""``text`` with each run of doctest lines (a ``>>>`` line, its ``...`` lines and its output) inside a ``pycon`` fence.

    >>> fence_doctests("Add.\n\n>>> 1 + 1\n2\n\nDone.")
    'Add.\n\n```pycon\n>>> 1 + 1\n2\n```\n\nDone.'
    """
    out: list[str] = []
    inside = False
    for line in text.split("\n"):
        starts = line.lstrip().startswith(">>>")
        if starts and not inside:
            out.append("```pycon")
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)


def plain_roles(text: str) -> str:
    """Sphinx cross-reference roles as inline code: ``:class:`~a.B``` becomes ```a.B```.

    >>> plain_roles("see :func:`privaudit.epsilon_lower_bound`")
    'see `privaudit.epsilon_lower_bound`'
    """
    return _ROLE.sub(lambda match: f"`{match.group(1)}`", text)


class DoctestFences(griffe.Extension):
    """Fence the doctest examples of every documented object and read its Sphinx roles as code."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(fence_doctests(obj.docstring.value))
