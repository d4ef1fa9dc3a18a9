"""The user's fine-tuning corpus with the included LM canaries: phase one of ``privaudit canaries lm``.

The corpus is read as :func:`~privaudit.canaries.corpus.insert_into_corpus`
reads it (plain lines, a JSON-lines field, or a CSV column). Each included
canary's text (:meth:`~privaudit.canaries.lm_provenance.LMProvenance.included_texts`)
becomes one record, once (so the one-run bound is about one example), at a
position drawn uniformly from a seeded Generator; the excluded canaries
appear nowhere. A canary of the ``lines`` format must be one line: a text
holding a line break would reach the user's loader as two records, not the
text that is scored, so it is refused.

>>> corpus = CorpusRecords(header=None, records=["a", "b"], texts=["a", "b"], text_format="lines", column=None)
>>> text, positions = corpus_with_canaries(corpus, ["my secret is x"], seed=0)
>>> lines = text.splitlines()
>>> len(lines), lines[positions[0]]
(3, 'my secret is x')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._core.conventions import Convention, default
from .corpus import _OUTPUT_NAMES, _merge_records, _read_records, _write_records

__all__ = ["CorpusRecords", "corpus_file_name", "corpus_with_canaries", "insertion_convention", "read_corpus_records"]


@dataclasses.dataclass(frozen=True)
class CorpusRecords:
    """A corpus as read: the CSV header (or None), the records written back, and their texts."""

    header: list[str] | None
    records: list[Any]
    texts: list[str]
    text_format: str
    column: str | None


def corpus_file_name(text_format: str) -> str:
    """The name the corpus with canaries is written under: corpus.txt, corpus.jsonl or corpus.csv."""
    return _OUTPUT_NAMES[text_format]


def read_corpus_records(path, *, text_format: str = "lines", column: str | None = None, name: str = "--corpus") -> CorpusRecords:
    """The records of the UTF-8 corpus file ``path``; a ValueError naming ``name`` if it is missing, binary or holds no text."""
    from .._core.files import check_utf8_file

    if not Path(path).is_file():
        raise ValueError(f"`{name}` must be an existing file, got {str(path)!r}")
    check_utf8_file(path, name)
    text = Path(path).read_text(encoding="utf-8")
    if "\x00" in text:
        raise ValueError(f"`{name}`: {str(path)!r} holds NUL bytes: give a text file of training examples")
    try:
        header, records, texts = _read_records(text, text_format, column)
    except ValueError as error:  # the reader names its arguments; here they are the command's options
        raise ValueError(str(error).replace("`corpus`", f"`{name}`").replace("`column`", "`--column`")) from None
    if not any(item.strip() for item in texts):
        raise ValueError(f"`{name}`: {str(path)!r} holds no text: give your fine-tuning data, one example a record")
    return CorpusRecords(header, list(records), list(texts), text_format, column)


def _line_break(text: str) -> bool:
    """Whether ``text`` would not stay one line: str.splitlines (what line-based loaders use) splits it, or it ends in a break."""
    return len(text.splitlines()) != 1 or text != text.splitlines()[0]


def corpus_with_canaries(corpus: CorpusRecords, canaries: Sequence[str], *, seed: int = 0) -> tuple[str, list[int]]:
    """(the corpus text with ``canaries`` inserted, each canary's record index in it); positions uniform under ``seed``."""
    if corpus.text_format == "lines":
        broken = [index for index, text in enumerate(canaries) if _line_break(text)]
        if broken:
            raise ValueError(
                f"`--format` lines cannot hold {len(broken)} of the included canaries (e.g. {canaries[broken[0]]!r}): their text has a line break; "
                "give the corpus as --format jsonl or csv, or draw other canaries with another --seed"
            )
    total = len(corpus.records) + len(canaries)
    positions = np.random.default_rng(seed).choice(total, size=len(canaries), replace=False).tolist()
    written = _merge_records(corpus.records, dict(zip(positions, canaries, strict=True)), corpus.header, corpus.text_format, corpus.column)
    return _write_records(corpus.header, written, corpus.text_format, corpus.column), [int(position) for position in positions]


def insertion_convention(provenance) -> tuple[Convention, ...]:
    """How ``privaudit canaries lm`` put the included canaries in the corpus, read from the provenance; () for a provenance made in Python (the user placed them).

    >>> from privaudit.canaries.lm_provenance import LMProvenance
    >>> record = LMProvenance("random-tokens", "secret", ("p ",) * 4, ("a", "b", "c", "d"), (True, False, True, False), 0, 1, {},
    ...                       settings={"corpus": {"file": "corpus.txt"}, "positions_seed": 5, "positions": [3, 0], "copies": 1})
    >>> insertion_convention(record)[0].value
    'each included canary once in corpus.txt, at record positions drawn from seed 5'
    """
    settings = provenance.settings
    if "positions" not in settings:
        return ()
    corpus = settings.get("corpus")
    name = corpus.get("file", "the corpus") if isinstance(corpus, dict) else "the corpus"
    return (
        default(
            "canary insertion",
            f"each included canary once in {name}, at record positions drawn from seed {settings.get('positions_seed')}",
            "privaudit canaries lm: one copy per canary makes the bound one on the ε of a single example (k copies would bound kε); "
            "positions fixed before training leave the coins fair",
        ),
    )
