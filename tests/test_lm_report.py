"""The lm-one-run report: score histograms, log-log ROC and the bound beside the claimed ε, rendered in headless Chromium, showing results.json's numbers."""

from __future__ import annotations

import base64
import html
import json
import re

import numpy as np
import pytest
from browser import CONSOLE, chromium, needs_chromium, rendered_dom
from cli_helpers import run_cli

pytest.importorskip("matplotlib")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

from test_lm_canaries_synthetic import _corpus, echoed  # noqa: E402, F401 - echoed: the provenance and synthetic text fixture

from privaudit.audits.lm.audit import AUDIT
from privaudit.audits.lm.result import LMOneRunConfig  # noqa: E402
from privaudit.report import lm as lm_report  # noqa: E402

FIGURES = ("scores.png", "roc.png", "bound.png")


@pytest.fixture()
def partly_echoed(echoed):  # noqa: F811 - the imported fixture
    """The synthetic corpus echoes about 70% of the included canaries only: scores with signal and a ROC that is not a corner; fast (no model)."""
    folder, record, _ = echoed
    rng = np.random.default_rng()
    echoes = [text for text, keep in zip(record.texts, record.included, strict=True) if keep and rng.random() < 0.7]
    (folder / "synthetic.txt").write_text("\n".join(_corpus(rng, 100) + echoes) + "\n")
    return folder


def _audit(folder, *extra):
    out = folder / "run"
    argv = ["audit", "lm-one-run", "--synthetic", folder / "synthetic.txt", "--provenance", folder / "provenance.json", "--canary-copies", "1"]
    argv += ["--output", out, "--no-history"]
    code, _, stderr = run_cli([*argv, *extra])
    assert code == 0, stderr
    return out, json.loads((out / "results.json").read_text(encoding="utf-8"))


def _text(dom: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", dom)).split())


@needs_chromium
@pytest.mark.parametrize("claim", [None, "0.05", "50"])
def test_the_report_renders_its_figures_and_shows_the_bound_of_results_json(partly_echoed, claim):
    out, data = _audit(partly_echoed, *(["--claimed-epsilon", claim] if claim else []))
    dom, stderr = rendered_dom(chromium(), out / "report.html")
    assert not CONSOLE.search(stderr), stderr[-2000:]
    # every figure is written and embedded: the page's images are the PNG files, byte for byte
    embedded = [base64.b64decode(item) for item in re.findall(r'src="data:image/png;base64,([^"]+)"', dom)]
    assert embedded == [(out / name).read_bytes() for name in FIGURES]
    text = _text(dom)
    epsilon, shown = data["bound"]["epsilon"], f"{data['bound']['epsilon']:.4g}"  # the page shows 4 significant digits
    assert f"best of steinke): {shown} lower bound at 95% confidence" in text
    assert re.search(rf"ε lower bound \(lower bound, 95%; \w+ won of steinke, Bonferroni over \d+ tests\) {re.escape(shown)} ", text)
    assert f"The one-run ε lower bound, {shown} at 95% confidence," in text
    # the page shows results.json's AUC; that AUC is sklearn's to rounding (two float sums may straddle the 4th digit's half)
    assert data["auc"] == pytest.approx(sklearn_metrics.roc_auc_score(data["included"], data["scores"]), abs=1e-12)
    assert f"AUC (in-sample statistic) {data['auc']:.4g} " in text
    if claim is None:
        assert "claimed ε not given" in text and "(no claimed ε was given)" in text and "Claim rejected" not in text
    else:
        assert f"beside the claimed ε = {float(claim):.4g}" in text and f"bound / claimed ε {epsilon / float(claim):.4g}" in text
        assert ("Claim rejected: the one-run lower bound exceeds the claimed ε" in text) == (epsilon > float(claim)) == data["flagged"]


def test_the_figures_draw_the_runs_scores_roc_and_bound(partly_echoed, monkeypatch):
    from privaudit.report import scores as scores_report

    drawn = {}
    monkeypatch.setattr(scores_report, "plot_roc_loglog", lambda fpr, tpr, path, **kw: drawn.update(roc=(fpr, tpr, kw["floor"])))
    monkeypatch.setattr(scores_report, "plot_score_histograms", lambda inside, outside, path, **kw: drawn.update(hist=(inside, outside)))
    monkeypatch.setattr(lm_report, "plot_bound_and_claim", lambda epsilon, path, **kw: drawn.update(bound=(epsilon, kw["claimed_epsilon"])))
    run = AUDIT.run(
        LMOneRunConfig(claimed_epsilon=2.0, canary_copies=1), provenance=partly_echoed / "provenance.json", synthetic=partly_echoed / "synthetic.txt"
    )
    result = run.result
    for draw in lm_report.figures(run).values():
        draw(None)
    scores, member = np.array(result.scores), np.array(result.included)
    fpr, tpr, _ = sklearn_metrics.roc_curve(member, scores, drop_intermediate=False)  # the oracle: scikit-learn's ROC
    np.testing.assert_allclose(drawn["roc"][0], fpr)
    np.testing.assert_allclose(drawn["roc"][1], tpr)
    assert drawn["roc"][2] == 0.5 / max(member.sum(), (~member).sum())
    assert list(drawn["hist"][0]) == scores[member].tolist() and list(drawn["hist"][1]) == scores[~member].tolist()
    assert drawn["bound"] == (result.bound.epsilon, 2.0)


def test_a_partial_results_file_gets_the_generic_section(partly_echoed):
    from privaudit.report.sections import section_for

    out, data = _audit(partly_echoed)
    del data["scores"]
    section = section_for(data, out)
    assert section.title.startswith("lm-one-run") and section.audit == "lm-one-run"


@needs_chromium
def test_the_synthetic_text_report_renders_the_same_figures_and_its_bound(partly_echoed, tmp_path):
    out = tmp_path / "synthetic-run"
    argv = ["audit", "synthetic-text", "--synthetic", partly_echoed / "synthetic.txt", "--provenance", partly_echoed / "provenance.json"]
    code, _, stderr = run_cli([*argv, "--canary-copies", "2", "--claimed-epsilon", "0.05", "--output", out, "--no-history"])
    assert code == 0, stderr
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    dom, stderr = rendered_dom(chromium(), out / "report.html")
    assert not CONSOLE.search(stderr), stderr[-2000:]
    embedded = [base64.b64decode(item) for item in re.findall(r'src="data:image/png;base64,([^"]+)"', dom)]
    assert embedded == [(out / name).read_bytes() for name in FIGURES]
    text = _text(dom)
    shown = f"{data['bound']['epsilon']:.4g}"
    assert "Released synthetic text (" in text and f"The one-run ε lower bound, {shown} at 95% confidence," in text
    assert "copies of each included canary in the fine-tuning data 2 " in text and data["canary_copies"] == 2
    # the page shows results.json's AUC; that AUC is sklearn's to rounding (two float sums may straddle the 4th digit's half)
    assert data["auc"] == pytest.approx(sklearn_metrics.roc_auc_score(data["included"], data["scores"]), abs=1e-12)
    assert f"AUC (in-sample statistic) {data['auc']:.4g} " in text
