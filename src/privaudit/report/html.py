"""One self-contained ``report.html``: every plot embedded, nothing fetched, no JavaScript.

A report is a list of :class:`ReportSection` values, one per audit. Each
section says what its headline number is (a lower bound, a credible bound,
an estimate or a plain statistic) at which confidence, what the number means
and what it does not, under which threat model, and carries the plots, the
conventions decided about the user's model or data (each checked, explicit
or a default), the seeds, the configuration, the library versions and the
machine. Every string goes through :func:`html.escape`, so canary text or
dataset names cannot inject markup; plots are PNG files embedded as
``data:`` URIs.

Plot paths come from results files, which are input like any other: a plot
is embedded only if it is a regular file (never a symlink) whose first eight
bytes are the PNG signature, at a relative path without ``..`` inside its
run folder (:func:`embeddable_png`, :func:`plots_in`), so a crafted
``results.json`` cannot copy ``/etc/passwd`` or a private key into a page.

>>> section = ReportSection(title="Demo <audit>", audit="demo", value=1.5, label="ε lower bound", kind="lower bound",
...                         confidence=0.95, meaning="m", not_meaning="n", threat_model="black-box")
>>> page = render_report([section], title="privaudit")
>>> "Demo &lt;audit&gt;" in page and "<script" not in page and "http" not in page.split("</style>")[1]
True
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import html
import json
import math
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._core.conventions import Convention

__all__ = ["KINDS", "MAX_PLOT_BYTES", "PNG_SIGNATURE", "ReportSection", "embeddable_png", "linked_figures", "plots_in", "render_report", "write_report"]

KINDS = ("lower bound", "credible bound", "estimate", "statistic")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_PLOT_BYTES = 32 * 2**20

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:62rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.3rem;border-bottom:1px solid #ccc;padding-bottom:.2rem;margin-top:2.5rem}
.headline{font-size:1.5rem;font-weight:600;margin:.4rem 0}
.kind{display:inline-block;font-size:.8rem;padding:.1rem .5rem;border-radius:.6rem;background:#e8eef7;margin-left:.5rem;vertical-align:middle}
.invalid{background:#fbe3e3}.flag{color:#a40000;font-weight:600}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #eee}figcaption,caption{font-size:.85rem;color:#555}caption{text-align:left}
details{margin:.5rem 0}summary{cursor:pointer;font-weight:600}pre{white-space:pre-wrap;word-break:break-word;font-size:.8rem;background:#f6f6f6;padding:.5rem}
.toc li{margin:.2rem 0}
.decision{border-left:.35rem solid #2b6cb0;background:#f3f7fc;padding:.5rem .9rem;margin:.6rem 0}.decision.flagged{border-left-color:#a40000;background:#fdf1f1}
.decision .summary{font-size:1.35rem;font-weight:700;margin:.2rem 0}.decision.flagged .summary{color:#a40000}.decision p{margin:.35rem 0}
.headline.beside{font-size:1.1rem}
"""


@dataclasses.dataclass(frozen=True)
class ReportSection:
    """One audit in the report: its headline number and everything needed to read and trust it.

    ``value`` is the headline number (None when the audit produced none),
    ``label`` names it ("ε lower bound per step", "largest exposure"),
    ``kind`` is one of :data:`KINDS`, ``confidence`` the level it holds at
    (None for a statistic). ``valid=False`` marks a number that is optimistic
    (e.g. a threshold chosen on the data it bounds). ``plots`` are
    (caption, PNG path) pairs; ``details`` (name, value) rows of further
    numbers; ``tables`` (caption, column names, rows) tables of several
    columns (e.g. the most exposed records); ``flag`` a line shown in red (e.g. "the claim is rejected").
    ``seeds`` maps each seed's place in the results to its value;
    ``conventions`` holds the :class:`~privaudit._core.conventions.Convention`
    values the result decided about the user's model or data;
    ``captured_warnings`` the :class:`~privaudit._core.capture.CapturedWarning`
    values of what libraries warned about while the audit ran; ``verdict``
    the lines of :func:`privaudit.report.verdict.verdict_lines` (the claim's
    verdict, the bound's ceiling, the sanity warnings). ``decision``: the
    plain verdict a reader acts on (e.g. the steward's decision on a synthetic
    table), which opens the section above the headline number, with
    ``decision_summary`` its one-line form (the headline and the contents)
    and ``decision_notes`` the lines that explain it; ``decision_flagged``
    shows it in red.

    >>> ReportSection(title="t", audit="a", value=1.0, label="l", kind="guess", meaning="", not_meaning="", threat_model="")
    Traceback (most recent call last):
    ...
    ValueError: `kind` must be one of 'lower bound', 'credible bound', 'estimate', 'statistic', got 'guess'
    """

    title: str
    audit: str
    value: float | None
    label: str
    kind: str
    meaning: str
    not_meaning: str
    threat_model: str
    confidence: float | None = None
    valid: bool = True
    flag: str | None = None
    details: tuple = ()
    tables: tuple = ()
    plots: tuple = ()
    configuration: dict = dataclasses.field(default_factory=dict)
    seeds: dict = dataclasses.field(default_factory=dict)
    conventions: tuple = ()
    captured_warnings: tuple = ()
    verdict: tuple = ()
    decision: str | None = None
    decision_summary: str | None = None
    decision_notes: tuple = ()
    decision_flagged: bool = False
    versions: dict = dataclasses.field(default_factory=dict)
    machine: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"`kind` must be one of {', '.join(repr(k) for k in KINDS)}, got {self.kind!r}")
        if self.confidence is not None and not 0 < self.confidence < 1:
            raise ValueError(f"`confidence` must be in (0, 1), got {self.confidence}")


def _text(value: Any) -> str:
    """Escaped text of any value; floats with 4 significant digits."""
    if isinstance(value, float):
        value = f"{value:.4g}" if math.isfinite(value) else str(value)
    elif isinstance(value, (dict, list, tuple)):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return html.escape(str(value), quote=True)


def _table(rows, header: tuple[str, str] | None = None) -> str:
    head = f"<tr><th>{_text(header[0])}</th><th>{_text(header[1])}</th></tr>" if header else ""
    body = "".join(f"<tr><td>{_text(name)}</td><td>{_text(value)}</td></tr>" for name, value in rows)
    return f"<table>{head}{body}</table>" if body else "<p>(none recorded)</p>"


def _wide_table(caption: str, header: Sequence, rows: Sequence) -> str:
    """A table of several columns under its caption; every cell escaped."""
    head = "".join(f"<th>{_text(name)}</th>" for name in header)
    body = "".join("<tr>" + "".join(f"<td>{_text(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><caption>{_text(caption)}</caption><tr>{head}</tr>{body}</table>" if body else "<p>(none recorded)</p>"


def embeddable_png(run_dir, relative) -> Path | None:
    """The path of the PNG ``relative`` inside ``run_dir``, or None when it must not be embedded.

    None unless ``relative`` is a relative path without ``..``, every part of
    it below ``run_dir`` is a real folder or file (no symlink), the file is a
    regular file of at most :data:`MAX_PLOT_BYTES`, and it starts with the
    8-byte PNG signature. ``run_dir`` itself is the user's choice and may be
    a symlink.

    >>> import tempfile
    >>> run = Path(tempfile.mkdtemp())
    >>> _ = (run / "plot.png").write_bytes(PNG_SIGNATURE + b"rest")
    >>> _ = (run / "notes.png").write_text("not an image")
    >>> embeddable_png(run, "plot.png") == run / "plot.png"
    True
    >>> [embeddable_png(run, name) for name in ("notes.png", "../plot.png", "/etc/passwd", "missing.png")]
    [None, None, None, None]
    """
    if not isinstance(relative, (str, os.PathLike)) or not isinstance(run_dir, (str, os.PathLike)):
        return None
    relative = Path(relative)
    if relative.is_absolute() or relative.drive or not relative.parts or ".." in relative.parts:
        return None
    root = Path(run_dir)
    if not root.is_dir():
        return None
    current = root
    try:
        for part in relative.parts:
            current = current / part
            mode = current.lstat().st_mode
            if stat.S_ISLNK(mode):
                return None
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(mode):
        return None
    return current if _read_png(current) is not None else None


def _read_png(path: Path) -> bytes | None:
    """The bytes of the regular, non-symlink, single-name (no hard link) PNG file ``path`` (at most MAX_PLOT_BYTES), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_PLOT_BYTES or info.st_nlink != 1:  # a hard link may be a file from anywhere
            return None
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read(MAX_PLOT_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if data.startswith(PNG_SIGNATURE) and len(data) <= MAX_PLOT_BYTES else None


def linked_figures(run_dir) -> list[Path]:
    """The PNG files at the top of ``run_dir`` that are symlinks or hard links: never embedded, and worth a note to the user."""
    found = []
    for path in sorted(Path(run_dir).glob("*.png")) if Path(run_dir).is_dir() else ():
        with contextlib.suppress(OSError):
            if path.is_symlink() or os.lstat(path).st_nlink != 1:
                found.append(path)
    return found


def plots_in(run_dir, captions: Mapping) -> tuple:
    """(caption, path) pairs for the names of ``captions`` ({relative name: caption}) that :func:`embeddable_png` accepts in ``run_dir``.

    What a report adapter gives :class:`ReportSection` as ``plots``; None as
    ``run_dir`` gives no plots. Names that are not strings are skipped.

    >>> import tempfile
    >>> run = Path(tempfile.mkdtemp())
    >>> _ = (run / "a.png").write_bytes(PNG_SIGNATURE)
    >>> [caption for caption, _ in plots_in(run, {"a.png": "A", "/etc/passwd": "B", 5: "C"})]
    ['A']
    """
    if run_dir is None or not isinstance(captions, Mapping):
        return ()
    found = []
    for name, caption in captions.items():
        path = embeddable_png(run_dir, name) if isinstance(name, str) else None
        if path is not None:
            found.append((str(caption), path))
    return tuple(found)


def _image(caption: str, path) -> str:
    path = Path(path)
    data = None if ".." in path.parts else _read_png(path)  # plots_in confines to the run folder; this refuses links and non-PNGs anyway
    if data is None:
        return f"<p>(plot {_text(path.name)} was not produced or is not a PNG file)</p>"
    encoded = base64.b64encode(data).decode("ascii")
    return f'<figure><img alt="{_text(caption)}" src="data:image/png;base64,{encoded}"><figcaption>{_text(caption)}</figcaption></figure>'


def _rows(mapping) -> list:
    """Sorted (name, value) rows of a mapping; a value that is not one (a damaged results file) is shown as it is."""
    if isinstance(mapping, Mapping):
        return sorted(((str(name), value) for name, value in mapping.items()), key=lambda row: row[0])
    return [("(not a mapping)", mapping)] if mapping not in (None, (), [], "") else []


def _conventions(conventions) -> str:
    """The conventions table: what was decided, the value, how (checked / explicit / default) and on what evidence."""
    if not conventions:
        return "<p>None recorded for this result.</p>"
    rows = []
    for item in conventions if isinstance(conventions, (list, tuple)) else [conventions]:
        if isinstance(item, Convention):
            rows.append(f"<tr><td>{_text(item.name)}</td><td>{_text(item.value)}</td><td>{_text(item.decided)}</td><td>{_text(item.evidence)}</td></tr>")
        else:  # not a Convention (a damaged results file): shown as it is
            rows.append(f'<tr><td colspan="4">{_text(item)}</td></tr>')
    head = "<tr><th>convention</th><th>value</th><th>how decided</th><th>evidence</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"


def _warnings(captured) -> str:
    """The libraries' warnings during the audit: privaudit's note first where one bears on validity, then the library's words."""
    if not captured:
        return "<p>None: the libraries the audit called raised no warning.</p>"
    rows = "".join(
        f"<tr><td>{_text(item.note) or '—'}</td><td>{_text(item.category)}</td><td>{_text(item.source)}</td><td>{item.count}</td><td>{_text(item.message)}</td></tr>"
        for item in captured
    )
    head = "<tr><th>what it means for the numbers</th><th>category</th><th>from</th><th>times</th><th>the library's words</th></tr>"
    return f"<table>{head}{rows}</table>"


def _seeds(seeds) -> str:
    """The seeds table, a seed recorded as null shown as not seeded."""
    rows = [(name, "null (not seeded: not reproducible)" if value is None else value) for name, value in _rows(seeds)]
    return _table(rows, ("seed (where in results.json)", "value")) if rows else "<p>None recorded in the results.</p>"


def _decision(section: ReportSection) -> str:
    """The decision block that opens a section: its one-line summary, the full verdict, the lines that explain it."""
    lines = [f'<p class="summary">{_text(section.decision_summary)}</p>'] if section.decision_summary else []
    lines += [f"<p>{_text(line)}</p>" for line in (section.decision, *section.decision_notes) if line]
    return f'<div class="decision{" flagged" if section.decision_flagged else ""}">{"".join(lines)}</div>'


def _headline(section: ReportSection) -> str:
    if section.value is None:
        number = "not computed"
    else:
        number = _text(float(section.value))
    confidence = f" at {section.confidence:.0%} confidence" if section.confidence is not None and section.kind != "statistic" else ""
    kind_class = "kind" if section.valid else "kind invalid"
    validity = "" if section.valid else " — optimistic (valid = False)"
    beside = " beside" if section.decision or section.decision_summary else ""  # the number beside the decision, below it
    return f'<p class="headline{beside}">{_text(section.label)}: {number}<span class="{kind_class}">{_text(section.kind)}{_text(confidence)}{_text(validity)}</span></p>'


def _section(index: int, section: ReportSection) -> str:
    parts = [f'<section id="audit-{index}"><h2>{_text(section.title)}</h2>']
    if section.decision or section.decision_summary:
        parts.append(_decision(section))
    parts.append(_headline(section))
    if section.flag:
        parts.append(f'<p class="flag">{_text(section.flag)}</p>')
    if section.verdict:
        parts.append("<h3>Verdict</h3><ul>" + "".join(f"<li>{_text(line)}</li>" for line in section.verdict) + "</ul>")
    parts.append(f"<p><strong>What it means.</strong> {_text(section.meaning)}</p>")
    parts.append(f"<p><strong>What it does not mean.</strong> {_text(section.not_meaning)}</p>")
    parts.append(f"<p><strong>Threat model.</strong> {_text(section.threat_model)}</p>")
    if section.details:
        parts.append("<h3>Numbers</h3>" + _table(section.details, ("quantity", "value")))
    parts.extend(_wide_table(*table) for table in section.tables)
    parts.extend(_image(caption, path) for caption, path in section.plots)
    parts.append("<h3>Conventions</h3>" + _conventions(section.conventions))
    parts.append("<h3>Seeds</h3>" + _seeds(section.seeds))
    parts.append("<h3>Warnings</h3>" + _warnings(section.captured_warnings))
    parts.append("<details><summary>Configuration</summary>")
    parts.append(f"<pre>{_text(json.dumps(section.configuration, indent=2, ensure_ascii=False, default=str))}</pre></details>")
    parts.append("<details><summary>Versions and machine</summary>")
    parts.append(_table(_rows(section.versions), ("library", "version")))
    parts.append(_table(_rows(section.machine), ("machine", "value")) + "</details></section>")
    return "\n".join(parts)


def render_report(sections: Sequence[ReportSection], *, title: str = "privaudit report", generated_at: str | None = None) -> str:
    """The HTML page of ``sections``, as a string (UTF-8, self-contained)."""
    sections = list(sections)
    if not all(isinstance(section, ReportSection) for section in sections):
        raise ValueError("`sections` must be a sequence of ReportSection")
    stamp = generated_at or datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    toc = "".join(
        f'<li><a href="#audit-{i}">{_text(s.title)}</a>: {_text(s.decision_summary) + "; " if s.decision_summary else ""}{_text(s.label)} = '
        f"{'not computed' if s.value is None else _text(float(s.value))} ({_text(s.kind)})</li>"
        for i, s in enumerate(sections)
    )
    body = "\n".join(_section(i, s) for i, s in enumerate(sections))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_text(title)}</h1><p>Generated {_text(stamp)}. A <em>lower bound</em> holds at its stated confidence: "
        "the true ε is at least this large unless a rare (at most 1 − confidence) sampling accident happened. "
        "An <em>estimate</em> is a best guess with no such guarantee. A <em>statistic</em> describes these runs only.</p>"
        f'<ul class="toc">{toc}</ul>\n{body}\n</body></html>\n'
    )


def write_report(sections: Sequence[ReportSection], path, *, title: str = "privaudit report") -> Path:
    """Write :func:`render_report` to ``path`` (UTF-8) and return the path.

    >>> import tempfile, os
    >>> target = write_report([], os.path.join(tempfile.mkdtemp(), "report.html"))
    >>> target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    True
    """
    path = Path(path)
    path.write_text(render_report(sections, title=title), encoding="utf-8")
    return path
