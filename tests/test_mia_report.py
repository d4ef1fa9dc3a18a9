"""The mia report: the vulnerability table names records by the user's ids, beside the log-log ROC and the threat model, and renders in Chromium."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import numpy as np
import pytest
from browser import CONSOLE, chromium, needs_chromium, render, rendered_dom
from cli_helpers import run_cli

from privaudit.audits.mia.audit import ATTACKS
from privaudit.audits.mia.training import load_pool

pytest.importorskip("sklearn")
skops_io = pytest.importorskip("skops.io")

NUM_RECORDS = 240


class _Tables(HTMLParser):
    """Every <table> of a page as rows of cell texts (header rows included)."""

    def __init__(self):
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _vulnerability_rows(page: str) -> list[dict[str, str]]:
    parser = _Tables()
    parser.feed(page)
    table = next(rows for rows in parser.tables if rows and rows[0][:2] == ["rank", "record id"])
    return [dict(zip(table[0], row, strict=True)) for row in table[1:]]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A user's pool with shuffled ids in a column, a target and four references (scikit-learn, saved with skops), members listed by id; the audit's --output."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng()
    pool = load_pool("digits", None, None)
    x, y = pool.x[:NUM_RECORDS].astype(np.float64), pool.y[:NUM_RECORDS]
    ids = rng.permutation(np.arange(10_000, 10_000 + 7 * NUM_RECORDS, 7))  # ids unrelated to the rows
    folder = tmp_path_factory.mktemp("user")
    header = ["record", *(f"f{i}" for i in range(x.shape[1])), "digit"]
    lines = [",".join(header)] + [",".join([str(i), *(f"{v:g}" for v in row), str(label)]) for i, row, label in zip(ids, x, y, strict=True)]
    (folder / "pool.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    members = rng.random(NUM_RECORDS) < 0.3
    fit = lambda rows, seed: LogisticRegression(C=100.0, max_iter=300, random_state=seed).fit(x[rows], y[rows])  # noqa: E731
    skops_io.dump(fit(members, 0), folder / "target.skops")
    (folder / "members.txt").write_text("\n".join(str(i) for i in ids[members]) + "\n", encoding="utf-8")
    references = np.argsort(rng.random((NUM_RECORDS, 4)), axis=1).T < 2
    (folder / "refs").mkdir()
    for index, rows in enumerate(references):
        skops_io.dump(fit(rows, index), folder / "refs" / f"ref-{index}.skops")
    np.save(folder / "membership.npy", references)
    argv = ["audit", "mia", "--data", folder / "pool.csv", "--label-col", "digit", "--id-col", "record", "--model", folder / "target.skops"]
    argv += ["--members", folder / "members.txt", "--reference-models", folder / "refs", "--reference-membership", folder / "membership.npy"]
    code, _, stderr = run_cli([*argv, "--output", folder / "out", "--no-history"])
    assert code == 0, stderr
    return folder / "out", dict(zip(ids.tolist(), members.tolist(), strict=True)), ids


def test_table_names_records_by_the_users_ids_with_their_membership_and_scores(run_folder):
    output, is_member, ids = run_folder
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    rows = _vulnerability_rows((output / "report.html").read_text(encoding="utf-8"))
    assert [row["rank"] for row in rows] == [str(rank) for rank in range(1, len(data["most_vulnerable"]) + 1)]
    for row, record in zip(rows, data["most_vulnerable"], strict=True):
        # the id is the pool's id column at the record's row, and its membership is the members file's (listed by id)
        assert int(row["record id"]) == ids[record["record"]]
        assert row["member of the target"] == ("yes" if is_member[int(row["record id"])] else "no")
        assert float(row["online RMIA log ratio log Pr(x|θ)/Pr(x)"]) == pytest.approx(record["score"], rel=1e-3, abs=1e-12)
        assert float(row["online RMIA fraction of z dominated"]) == pytest.approx(record["fraction"], rel=1e-3, abs=1e-12)
        assert [float(row[f"{name} score"]) for name in ATTACKS] == pytest.approx(record["attack_scores"], rel=1e-3, abs=1e-12)
        assert record["attack_scores"][ATTACKS.index("rmia-online")] == record["score"]
    # the headline attack's scores run down the table
    assert all(a["score"] >= b["score"] for a, b in zip(data["most_vulnerable"], data["most_vulnerable"][1:], strict=False))
    conventions = {item["name"]: item for item in data["conventions"]}
    assert conventions["record id"]["decided"] == "explicit" and "'record'" in conventions["record id"]["value"]
    assert conventions["target membership"]["value"] == "ids of column 'record' listed in --members"


@needs_chromium
def test_report_renders_in_headless_chromium_with_table_roc_and_threat_model(run_folder, tmp_path):
    output, *_ = run_folder
    page = output / "report.html"
    dom, stderr = rendered_dom(chromium(), page)
    assert not CONSOLE.search(stderr)
    rows = _vulnerability_rows(dom)
    assert len(rows) == len(json.loads((output / "results.json").read_text(encoding="utf-8"))["most_vulnerable"])
    assert "ROC of every attack on log-log axes" in dom and dom.count("data:image/png;base64,") >= 2
    assert "Threat model.</strong> black-box: the confidence on each record of the user's trained target" in dom
    assert "reference models given by the user" in dom
    assert not CONSOLE.search(render(chromium(), page, tmp_path / "report.png"))
    assert (tmp_path / "report.png").stat().st_size > 0
