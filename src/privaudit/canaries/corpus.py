"""Phase one of a two-phase audit: insert canaries into the user's corpus file and record the provenance.

privaudit prepares, the user trains on the written corpus with their own
loop, and privaudit measures from the provenance
(:func:`privaudit.integrations.transformers.measure_canaries`).

The corpus is plain lines, JSON lines (``column`` names the text field) or
CSV with a header (``column`` names the text column). A canary becomes a
line, or a record whose other fields are empty. The corpus and
``provenance.json`` appear together or not at all.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._core.files import staged_output
from .._core.results import library_versions
from .._core.validation import check_choice
from .insertion import Provenance, insert_canaries
from .text import CanaryFormat

__all__ = ["TEXT_FORMATS", "CorpusProvenance", "insert_into_corpus", "read_corpus_texts", "read_provenance", "reference_secrets"]

TEXT_FORMATS = ("lines", "jsonl", "csv")
_OUTPUT_NAMES = {"lines": "corpus.txt", "jsonl": "corpus.jsonl", "csv": "corpus.csv"}


@dataclasses.dataclass(frozen=True)
class CorpusProvenance:
    """What phase two needs: the format, the inserted canaries and how the corpus was written."""

    provenance: Provenance
    canary_format: CanaryFormat
    text_format: str
    column: str | None
    corpus_sha256: str
    output_sha256: str
    corpus_file: str
    schedule: tuple
    versions: dict

    def to_dict(self) -> dict:
        return {
            "provenance": self.provenance.to_dict(),
            "format": {
                "template": self.canary_format.template,
                "alphabet": list(self.canary_format.alphabet),
                "vocabulary": list(self.canary_format.vocabulary),
            },
            "text_format": self.text_format,
            "column": self.column,
            "corpus_sha256": self.corpus_sha256,
            "output_sha256": self.output_sha256,
            "corpus_file": self.corpus_file,
            "schedule": list(self.schedule),
            "versions": self.versions,
        }


def read_provenance(path) -> CorpusProvenance:
    """Read ``provenance.json`` written by :func:`insert_into_corpus` (or its directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / "provenance.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        fmt = data["format"]
        return CorpusProvenance(
            provenance=Provenance.from_json(json.dumps(data["provenance"])),
            canary_format=CanaryFormat(fmt["template"], alphabet=tuple(fmt["alphabet"]), vocabulary=tuple(fmt["vocabulary"])),
            text_format=data["text_format"],
            column=data["column"],
            corpus_sha256=data["corpus_sha256"],
            output_sha256=data["output_sha256"],
            corpus_file=data["corpus_file"],
            schedule=tuple(data["schedule"]),
            versions=data["versions"],
        )
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"`provenance` {str(path)!r} is not a provenance file written by insert_into_corpus: {error}") from None


def _read_records(text: str, text_format: str, column: str | None):
    """(header or None, records, texts): records are what gets written back, texts what canaries sit among."""
    if text_format == "lines":
        records = text.split("\n")  # not splitlines(): it also splits on \x0b, \x1c, \u2028, ...
        if records and records[-1] == "":
            records.pop()
        return None, records, records
    if column is None:
        raise ValueError(f"`column` must name the text field for text_format {text_format!r}")
    if text_format == "jsonl":
        records = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            record = json.loads(line)
            if not isinstance(record, dict) or not isinstance(record.get(column), str):
                raise ValueError(f"`corpus` line {number} must be a JSON object with a string field {column!r}")
            records.append(record)  # type: ignore[arg-type]
        return None, records, [record[column] for record in records]  # type: ignore[index]
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows or column not in rows[0]:
        raise ValueError(f"`column` must be one of the CSV header's columns {rows[0] if rows else []}, got {column!r}")
    header, body = rows[0], rows[1:]
    where = header.index(column)
    return header, body, [row[where] for row in body]


def read_corpus_texts(path, *, text_format: str = "lines", column: str | None = None) -> list[str]:
    """The texts of a corpus file, read as :func:`insert_into_corpus` reads it: lines, a JSON-lines field or a CSV column."""
    check_choice(text_format, "text_format", TEXT_FORMATS)
    return list(_read_records(Path(path).read_text(encoding="utf-8"), text_format, column)[2])


def _write_records(header, records, text_format: str, column: str | None) -> str:
    if text_format == "lines":
        return "".join(record + "\n" for record in records)
    if text_format == "jsonl":
        return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(records)
    return out.getvalue()


def _merge_records(records, canary_at: dict, header, text_format: str, column: str | None) -> list:
    """``records`` with a canary record at each position of ``canary_at`` (position -> text): a line, or a record whose other fields are empty."""
    originals = iter(records)
    written: list = []
    for position in range(len(records) + len(canary_at)):
        if position not in canary_at:
            written.append(next(originals))
        elif text_format == "lines":
            written.append(canary_at[position])
        elif text_format == "jsonl":
            written.append({column: canary_at[position]})
        else:
            written.append([canary_at[position] if name == column else "" for name in header])
    return written


def insert_into_corpus(
    corpus,
    canary_format: CanaryFormat,
    *,
    output_dir,
    schedule: Sequence[int] = (1, 2, 4, 8, 16, 32),
    canaries_per_count: int = 1,
    seed: int = 0,
    text_format: str = "lines",
    column: str | None = None,
    secure: bool = False,
) -> CorpusProvenance:
    """Write ``corpus`` with canaries inserted (:func:`~privaudit.canaries.insert_canaries`) and ``provenance.json``.

    ``corpus`` is a path or, for ``text_format="lines"``, a sequence of lines.
    Returns the provenance, which phase two reads back from ``output_dir``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     record = insert_into_corpus(["a", "b"], CanaryFormat("pin {digits:4}"), output_dir=folder, schedule=(1, 2))
    ...     lines = (Path(folder) / "corpus.txt").read_text().splitlines()
    >>> len(lines), [c["repetitions"] for c in record.provenance.canaries]
    (5, [1, 2])
    """
    check_choice(text_format, "text_format", TEXT_FORMATS)
    if isinstance(corpus, (str, Path)):
        raw = Path(corpus).read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"`corpus`: {str(corpus)!r} is not UTF-8 text ({error.reason} at byte {error.start}); give a text file") from None
    else:
        if text_format != "lines":
            raise ValueError(f"`corpus` must be a path for text_format {text_format!r}")
        lines = list(corpus)
        if any("\n" in line for line in lines):
            raise ValueError("`corpus` lines must not contain newlines")
        text = "".join(line + "\n" for line in lines)
        raw = text.encode("utf-8")
    header, records, texts = _read_records(text, text_format, column)
    if "\n" in canary_format.template or "\r" in canary_format.template:
        raise ValueError("`canary_format` must be one line: its template holds a newline")
    inserted = insert_canaries(texts, canary_format, schedule=schedule, canaries_per_count=canaries_per_count, seed=seed, secure=secure)
    canary_at = {position: record["text"] for record in inserted.provenance.canaries for position in record["lines"]}
    written = _merge_records(records, canary_at, header, text_format, column)
    output_text = _write_records(header, written, text_format, column)
    result = CorpusProvenance(
        provenance=inserted.provenance,
        canary_format=canary_format,
        text_format=text_format,
        column=column,
        corpus_sha256=hashlib.sha256(raw).hexdigest(),
        output_sha256=hashlib.sha256(output_text.encode("utf-8")).hexdigest(),
        corpus_file=_OUTPUT_NAMES[text_format],
        schedule=tuple(int(count) for count in schedule),
        versions=library_versions(),
    )
    with staged_output(output_dir) as scratch:
        (scratch / result.corpus_file).write_text(output_text, encoding="utf-8")
        (scratch / "provenance.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
    return result


def reference_secrets(canary_format: CanaryFormat, count: int, *, exclude=(), seed: int = 0) -> list[tuple]:
    """``count`` distinct secrets drawn uniformly from R, none in ``exclude``: the references exposure ranks against.

    >>> refs = reference_secrets(CanaryFormat("pin {digits:2}"), 99, exclude=[(4, 2)])
    >>> len(set(refs)), (4, 2) in refs
    (99, False)
    """
    excluded = {tuple(secret) for secret in exclude}
    available = canary_format.space_size - len(excluded)
    if count > available:
        raise ValueError(f"`count` must be <= |R| - excluded = {available}, got {count}")
    rng = np.random.default_rng(seed)
    sizes = [len(symbols) for symbols in canary_format.slots]
    chosen: dict = {}
    while len(chosen) < count:
        draws = np.stack([rng.integers(size, size=2 * (count - len(chosen)) + 8) for size in sizes], axis=1)
        for row in map(tuple, draws.tolist()):
            if row not in excluded and row not in chosen:
                chosen[row] = None
                if len(chosen) == count:
                    break
    return list(chosen)
