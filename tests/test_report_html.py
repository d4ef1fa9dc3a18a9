"""report.html: self-contained, escaped, numbers taken from the results, and rendered by headless Chromium when one is installed."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from browser import CONSOLE, chromium, needs_chromium, render
from typed_results import dpsgd_results, secret_sharer_results  # complete typed results, as write_run writes them

from privaudit.report.html import ReportSection, render_report, write_report
from privaudit.report.sections import load_results, section_for
from privaudit.schemas import stamp_results

HOSTILE = '<script>alert("x")</script><img src=http://evil.test/x.png onerror=alert(1)>'
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class _Collector(HTMLParser):
    """Every tag with its attributes, and all text: what a browser would build."""

    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> _Collector:
    collector = _Collector()
    collector.feed(page)
    return collector


def make_png(path: Path, seed: int) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(2, 2))
    axes.plot(np.random.default_rng(seed).normal(size=10))
    figure.savefig(path)
    plt.close(figure)
    return path.read_bytes()


def test_user_strings_are_escaped_everywhere(tmp_path):
    data = secret_sharer_results(HOSTILE)
    page = render_report([section_for(data)], title=HOSTILE)
    parsed = parse(page)
    # no element came from user text: only the report's own tags, and no script or remote image at all
    assert {tag for tag, _ in parsed.tags} <= {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "h1",
        "h2",
        "h3",
        "p",
        "em",
        "ul",
        "li",
        "a",
        "section",
        "span",
        "strong",
        "table",
        "tr",
        "th",
        "td",
        "details",
        "summary",
        "pre",
        "figure",
        "img",
        "figcaption",
    }
    assert not any(tag == "script" for tag, _ in parsed.tags)
    assert not any(tag == "img" for tag, _ in parsed.tags)  # no plots given, so no image at all
    # the hostile text survives as text, unchanged, in the title, the canary table and the configuration
    text = "".join(parsed.text)
    assert text.count(HOSTILE) >= 3
    assert HOSTILE not in page  # only its escaped form is in the markup


def test_plots_are_embedded_byte_for_byte_and_nothing_is_fetched(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    originals = {name: make_png(run / name, seed) for seed, name in enumerate(("observations.png", "tradeoff.png", "bound_vs_observations.png"))}
    (run / "results.json").write_text(json.dumps(dpsgd_results(2.0, 1.27, True)))
    page = write_report([section_for(load_results(run), run)], tmp_path / "report.html").read_text(encoding="utf-8")
    images = [attrs["src"] for tag, attrs in parse(page).tags if tag == "img"]
    assert len(images) == 3
    decoded = [base64.b64decode(src.removeprefix("data:image/png;base64,")) for src in images]
    assert sorted(decoded) == sorted(originals.values())
    assert all(d.startswith(PNG_MAGIC) for d in decoded)
    # every reference of the page is a data URI or an in-page anchor
    references = [value for _, attrs in parse(page).tags for key, value in attrs.items() if key in ("src", "href")]
    assert all(ref.startswith(("data:", "#")) for ref in references)


def test_headline_numbers_and_kinds_come_from_the_results():
    dpsgd = section_for(dpsgd_results(2.5, 1.27, True))
    assert (dpsgd.value, dpsgd.kind, dpsgd.confidence) == (2.5, "lower bound", 0.95)
    assert "1.27" in dpsgd.flag
    quiet = section_for(dpsgd_results(0.5, 1.27, False))
    assert quiet.flag is None
    secret = section_for(secret_sharer_results("pin"))
    assert secret.value == max(4.5, 16.6) and secret.kind == "statistic"
    assert secret.flag is not None  # 16.6 exceeds the random-guessing level 12.3
    assert secret.seeds == {"config.seed": 11}  # named by its place in results.json
    page = render_report([dpsgd, secret])
    assert "2.5" in page and "lower bound at 95% confidence" in page and "16.6" in page


def test_optimistic_results_are_labelled():
    data = dpsgd_results(3.0, 1.27, True)
    data["step_bounds"]["gdp_clopper_pearson"]["valid"] = False
    section = section_for(data)
    assert section.valid is False
    assert "optimistic (valid = False)" in render_report([section])


def test_section_checks_its_kind_and_confidence():
    with pytest.raises(ValueError, match="`confidence` must be in \\(0, 1\\), got 1.5"):
        ReportSection(title="t", audit="a", value=1.0, label="l", kind="estimate", meaning="", not_meaning="", threat_model="", confidence=1.5)


def test_unknown_family_gets_a_generic_section():
    section = section_for(stamp_results({"result_type": "X", "versions": {}, "epsilon": 0.7, "kind": "estimate", "confidence": 0.9}, audit="new-family"))
    assert (section.value, section.kind, section.audit) == (0.7, "estimate", "new-family")


@needs_chromium
def test_report_renders_in_headless_chromium_without_console_messages(tmp_path):
    browser = chromium()
    # the detector must see a console error when there is one
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><html><body><script>console.error("control-error")</script></body></html>')
    assert CONSOLE.search(render(browser, control, tmp_path / "control.png"))

    run = tmp_path / "run"
    run.mkdir()
    for seed, name in enumerate(("observations.png", "tradeoff.png")):
        make_png(run / name, seed)
    (run / "results.json").write_text(json.dumps(dpsgd_results(11.2, 1.27, True)))
    sections = [section_for(load_results(run), run), section_for(secret_sharer_results(HOSTILE))]
    report = write_report(sections, tmp_path / "report.html", title=HOSTILE)
    stderr = render(browser, report, tmp_path / "report.png")
    assert not CONSOLE.search(stderr), [line for line in stderr.splitlines() if CONSOLE.search(line)]
    shot = (tmp_path / "report.png").read_bytes()
    assert shot.startswith(PNG_MAGIC) and len(shot) > 10_000
    # the page is not blank: the screenshot has both dark (text) and light pixels
    import matplotlib.image

    pixels = matplotlib.image.imread(tmp_path / "report.png")[..., :3].mean(axis=2)
    assert pixels.min() < 0.3 and pixels.max() > 0.9


def test_report_command_builds_one_page_from_run_folders(cli, tmp_path):
    runs = []
    for index, data in enumerate((dpsgd_results(2.0, 1.27, True), secret_sharer_results("pin 1"))):
        run = tmp_path / f"run{index}"
        run.mkdir()
        (run / "results.json").write_text(json.dumps(data))
        runs.append(str(run))
    make_png(tmp_path / "run0" / "tradeoff.png", 0)
    code, _, stderr = cli(["report", *runs, "--output", tmp_path / "out" / "report.html", "--title", "Release 2"])
    assert code == 0, stderr
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    titles = [text for text in parse(page).text if text.startswith(("DP-SGD", "Secret Sharer"))]
    assert titles[:2] == ["DP-SGD white-box audit (bug: clip-after-averaging)", "Secret Sharer: canary exposure"]
    assert page.count("data:image/png;base64,") == 1 and "<title>Release 2</title>" in page
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.html"]  # no temporary file left
