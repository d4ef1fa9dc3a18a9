"""Round 4 of hostile and malformed inputs, on the commands added last: ``audit mia`` (and its bound modes), ``audit mechanism``,
``canaries lm``, ``audit lm-one-run`` and ``audit synthetic-text``.

Every case must exit 2 with exactly one line on stderr (``error: ...``, no
traceback), print nothing on stdout, leave nothing in ``--output``, and name
what was wrong (the option the user typed, never an internal config key).
Each is refused before any heavy work (no model trains, no model loads).
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from cli_helpers import run_cli

pytest.importorskip("sklearn")

OUT = "out"


def _files(folder):
    """Every input the cases read, good and bad, written once per test."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 2))
    rows = [f"{u:.4f},{v:.4f},{int(u > 0)}" for u, v in x]
    write = lambda name, text: (folder / name).write_text(text)  # noqa: E731
    write("pool.csv", "a,b,label\n" + "\n".join(rows) + "\n")
    write("ids.csv", "pid,a,b,label\n" + "\n".join(f"P-{i % 30:03d},{row}" for i, row in enumerate(rows)) + "\n")
    write("empty.csv", "")
    write("header.csv", "a,b,label\n")
    write("ragged.csv", "a,b,label\n0.5,1.5,0\n0.5,1\n")
    write("missing.csv", "a,b,label\n0.5,,0\n1.5,2.5,1\n")
    write("text_feature.csv", "ward,b,label\nnorth,1.5,0\nsouth,2.5,1\n")
    write("inf.csv", "a,b,label\n0.5,inf,0\n1.5,2.5,1\n")
    write("negative_labels.csv", "a,b,label\n0.5,1.5,-1\n1.5,2.5,1\n")
    write("one_row.csv", "a,b,label\n0.5,1.5,0\n")
    write("pool.txt", "a record\nanother record\n")
    write("unknown.json", json.dumps({"referencez": 4}))
    write("wrong_type.json", json.dumps({"num_references": "eight"}))
    write("list.json", json.dumps([1, 2, 3]))
    write("python.yaml", "num_references: !!python/object/apply:os.system ['echo hi']\n")
    write("not_json.json", "{this is not json")
    write("corpus.txt", "".join(f"line number {i} of the corpus\n" for i in range(50)))
    write("empty.txt", "")
    write("synthetic.txt", "alpha beta\ngamma delta\n")
    write("incomplete.json", json.dumps({"design": "prefix-suffix"}))
    from privaudit.canaries.lm_provenance import LMProvenance

    LMProvenance(
        design="prefix-suffix",
        span="secret",
        prefixes=tuple(f"w{i} w{i + 1} " for i in range(8)),
        secrets=tuple(f"s{i}" for i in range(8)),
        included=(True, False) * 4,
        seed=0,
        inclusion_seed=0,
        tokenizer={"vocab_size": 1, "vocab_sha256": "0" * 64},
    ).write(folder / "provenance.json")
    write("members.txt", "0\n1\n2\n")
    (folder / "binary.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    (folder / "binary.txt").write_bytes(b"\x00\x01\x02\xff\xfe\x00")
    (folder / "nul.csv").write_bytes(b"a,b,label\n0.5,1\x00.5,0\n")
    (folder / "not_zip.npz").write_bytes(b"not a zip archive at all")
    (folder / "garbage.npy").write_bytes(b"\x93NUMPY garbage")
    (folder / "a_directory.csv").mkdir()
    (folder / "model_dir").mkdir()
    (folder / "model_dir" / "config.json").write_text("{}")
    np.save(folder / "dataset.npy", np.zeros(10))
    (folder / "mechanisms_r4.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            def text(dataset, size, rng):
                return "0.5"
            def labels(dataset, size, rng):
                return np.array(["heads"] * size)
            def exits(dataset, size, rng):
                import sys
                sys.exit(0)
            def raises(dataset, size, rng):
                raise KeyError("sensitivity")
            def nan(dataset, size, rng):
                return np.full(size, np.nan)
            def short(dataset, size, rng):
                return np.zeros(size + 1)
            def no_args():
                return 0.0
            pi = 3.14
            def train_exits(x_train, y_train, *, seed):
                import sys
                sys.exit(0)
            def train_none(x_train, y_train, *, seed):
                return None
            def train_recursion(x_train, y_train, *, seed):
                return train_recursion(x_train, y_train, seed=seed)
            """
        )
    )


def mia(*flags):
    return lambda f: ["audit", "mia", *[str(f / flag[2:]) if isinstance(flag, str) and flag.startswith("f:") else flag for flag in flags]]


def command(*words):
    return lambda f: [str(f / word[2:]) if word.startswith("f:") else word for word in words]


POOL = ("--data", "f:pool.csv", "--label-col", "label")
MECH = ("audit", "mechanism", "--relation", "add-remove")

CASES = [
    # -- audit mia: counts, modes and bounds -------------------------------------------------------
    ("mia-references-3", mia("--references", "3"), "`--references` must be an even integer >= 4"),
    ("mia-references-0", mia("--references", "0"), "`--references`"),
    ("mia-references-negative", mia("--references", "-2"), "`--references`"),
    ("mia-references-odd", mia("--references", "5"), "`--references` must be an even integer"),
    ("mia-mode-bogus", mia("--mode", "bound"), "`--mode` must be one of"),
    ("mia-mode-empty", mia("--mode", ""), "`--mode` must be one of"),
    ("mia-canaries-5", mia("--mode", "canary", "--canaries", "5"), "`--canaries` must be an integer in [20"),
    ("mia-canaries-huge", mia("--mode", "canary", "--canaries", "100000"), "`--canaries` must be an integer in [20, 539]"),
    ("mia-canaries-0", mia("--mode", "canary", "--canaries", "0"), "`--canaries`"),
    ("mia-canaries-breast-cancer-300", mia("--mode", "canary", "--canaries", "300", "--config", "f:bc.json"), "`--canaries` must be an integer in [20, 170]"),
    ("mia-trial-models-0", mia("--mode", "leave-one-out", "--trial-models", "0"), "`--trial-models`"),
    ("mia-trial-models-negative", mia("--mode", "leave-one-out", "--trial-models", "-3"), "`--trial-models`"),
    ("mia-delta-1.5", mia("--mode", "canary", "--delta", "1.5"), "`--delta` must be in (0, 1)"),
    ("mia-delta-0", mia("--mode", "canary", "--delta", "0"), "`--delta`"),
    ("mia-delta-nan", mia("--delta", "nan"), "`--delta` must be a finite number, got nan"),
    ("mia-delta-inf", mia("--delta", "inf"), "`--delta` must be a finite number, got inf"),
    ("mia-delta-negative-inf", mia("--delta", "-inf"), "`--delta` must be a finite number"),
    ("mia-seed-negative", mia("--seed", "-1"), "seed"),
    ("mia-workers-0", mia("--workers", "0"), "`--workers`"),
    ("mia-backend-dask", mia("--backend", "dask"), "`--backend`"),
    ("mia-address-without-ray", mia("--address", "auto"), "`--address` needs `--backend ray`"),
    ("mia-train-input-tensor", mia("--train-input", "tensor"), "`--train-input` must be one of"),
    ("mia-train-input-auto", mia("--train-input", "auto"), "`--train-input` must be one of"),
    ("mia-train-input-dataframe-embedded", mia("--train-input", "dataframe", "--train", "mechanisms_r4:train_none"), "`--train-input` dataframe needs"),
    # -- audit mia: --train ------------------------------------------------------------------------
    ("mia-train-no-colon", mia("--train", "mytrain.train"), "`--train` must be 'package.module:callable'"),
    ("mia-train-empty-module", mia("--train", ":train"), "`--train` must be 'package.module:callable'"),
    ("mia-train-empty-function", mia("--train", "mytrain:"), "`--train` must be 'package.module:callable'"),
    ("mia-train-two-colons", mia("--train", "a:b:c"), "`--train` must be 'package.module:callable'"),
    ("mia-train-missing-module", mia("--train", "no_such_module_r4:train"), "`--train` 'no_such_module_r4:train': cannot import"),
    ("mia-train-missing-attribute", mia("--train", "mechanisms_r4:nothing"), "has no attribute 'nothing'"),
    ("mia-train-not-callable", mia("--train", "mechanisms_r4:pi"), "is not callable"),
    ("mia-train-wrong-signature", mia("--train", "mechanisms_r4:no_args"), "must accept (x_train, y_train, *, seed)"),
    ("mia-train-sys-exit", mia(*POOL, "--train", "mechanisms_r4:train_exits"), "called sys.exit(0) on a probe of"),
    ("mia-train-returns-none", mia(*POOL, "--train", "mechanisms_r4:train_none"), "returned None"),
    ("mia-train-recursion", mia(*POOL, "--train", "mechanisms_r4:train_recursion"), "raised RecursionError"),
    # -- audit mia: --data as it comes --------------------------------------------------------------
    ("mia-data-missing", mia("--data", "f:nothing.csv"), "`--data`"),
    ("mia-data-directory", mia("--data", "f:a_directory.csv"), "`--data`"),
    ("mia-data-empty", mia("--data", "f:empty.csv", "--label-col", "label"), "`--data`"),
    ("mia-data-header-only", mia("--data", "f:header.csv", "--label-col", "label"), "has no rows of data"),
    ("mia-data-ragged", mia("--data", "f:ragged.csv", "--label-col", "label"), "line 3 has 2 cells, expected 3"),
    ("mia-data-missing-value", mia("--data", "f:missing.csv", "--label-col", "label"), "column 'b' (column 2 of 3) has a missing value"),
    ("mia-data-text-feature", mia("--data", "f:text_feature.csv", "--label-col", "label"), "column 'ward' (column 1 of 3) holds text"),
    ("mia-data-infinity", mia("--data", "f:inf.csv", "--label-col", "label"), "must hold finite numbers"),
    ("mia-data-negative-labels", mia("--data", "f:negative_labels.csv", "--label-col", "label"), "integer class labels 0, 1"),
    ("mia-data-one-row", mia("--data", "f:one_row.csv", "--label-col", "label"), "`--data`"),
    ("mia-data-binary", mia("--data", "f:binary.csv"), "`--data`"),
    ("mia-data-nul", mia("--data", "f:nul.csv", "--label-col", "label"), "`--data`"),
    ("mia-data-npz-not-zip", mia("--data", "f:not_zip.npz"), "`--data`"),
    ("mia-data-txt-without-huggingface", mia("--data", "f:pool.txt"), "`--data`"),
    ("mia-label-col-unknown", mia("--data", "f:pool.csv", "--label-col", "lable"), "did you mean 'label'?"),
    ("mia-label-col-npz", mia("--data", "f:not_zip.npz", "--label-col", "y"), "`--label-col`"),
    ("mia-label-col-embedded", mia("--label-col", "label"), "`--label-col` needs `--data`"),
    ("mia-id-col-unknown", mia(*POOL, "--id-col", "pid"), "must have one column named 'pid'"),
    ("mia-id-col-repeated", mia("--data", "f:ids.csv", "--label-col", "label", "--id-col", "pid"), "`--id-col` 'pid' must name a column of unique ids"),
    ("mia-id-col-embedded", mia("--id-col", "record"), "`--id-col` and `--members-col` name columns of the user's pool"),
    ("mia-members-without-model", mia(*POOL, "--members", "f:members.txt"), "`--model` and `--members` go together"),
    ("mia-model-without-members", mia(*POOL, "--model", "f:model.skops"), "`--model` and `--members` go together"),
    ("mia-members-col-without-model", mia(*POOL, "--members-col", "label"), "`--model` and `--members` go together"),
    (
        "mia-model-output-bogus",
        mia(*POOL, "--model", "f:model.skops", "--members", "f:members.txt", "--model-output", "softmax"),
        "`--model-output` must be one of",
    ),
    ("mia-target-kind-bogus", mia(*POOL, "--model", "f:model.skops", "--members", "f:members.txt", "--target-kind", "keras"), "`--target-kind`"),
    ("mia-augment-rotate", mia("--augment", "rotate"), "`--augment` must be one of"),
    ("mia-augment-without-shape", mia(*POOL, "--augment", "flip"), "`--image-shape` must give"),
    ("mia-image-shape-zero", mia(*POOL, "--augment", "flip", "--image-shape", "0,8,8"), "`--image-shape`"),
    ("mia-image-shape-text", mia(*POOL, "--augment", "flip", "--image-shape", "a,b,c"), "`--image-shape`"),
    ("mia-image-shape-two", mia(*POOL, "--augment", "flip", "--image-shape", "8,8"), "`--image-shape`"),
    ("mia-shift-pixels-100", mia("--augment", "shift", "--shift-pixels", "100"), "`--shift-pixels` must be in"),
    ("mia-reference-models-without-membership", mia(*POOL, "--reference-models", "f:a_directory.csv"), "--reference-membership"),
    # -- audit mia: --config -----------------------------------------------------------------------
    ("mia-config-missing", mia("--config", "f:nothing.json"), "`--config`"),
    ("mia-config-unknown-key", mia("--config", "f:unknown.json"), "referencez"),
    ("mia-config-wrong-type", mia("--config", "f:wrong_type.json"), "`num_references`"),
    ("mia-config-list", mia("--config", "f:list.json"), "`--config` must hold a JSON object"),
    ("mia-config-python-tag", mia("--config", "f:python.yaml"), "`--config`"),
    ("mia-config-not-json", mia("--config", "f:not_json.json"), "`--config`"),
    # -- audit mechanism ---------------------------------------------------------------------------
    ("mechanism-epsilon-nan", command(*MECH, "--epsilon", "nan", "--output", "f:out"), "`--epsilon` must be a finite number, got nan"),
    ("mechanism-epsilon-inf", command(*MECH, "--epsilon", "inf", "--output", "f:out"), "`--epsilon` must be a finite number, got inf"),
    ("mechanism-epsilon-negative", command(*MECH, "--epsilon", "-1", "--output", "f:out"), "`--epsilon` must be > 0"),
    ("mechanism-epsilon-zero", command(*MECH, "--epsilon", "0", "--output", "f:out"), "`--epsilon` must be > 0"),
    ("mechanism-delta-one", command(*MECH, "--epsilon", "1", "--delta", "1", "--output", "f:out"), "`--delta`"),
    ("mechanism-delta-negative", command(*MECH, "--epsilon", "1", "--delta", "-0.1", "--output", "f:out"), "`--delta`"),
    ("mechanism-delta-nan", command(*MECH, "--epsilon", "1", "--delta", "nan", "--output", "f:out"), "`--delta` must be a finite number"),
    ("mechanism-rho-negative", command(*MECH, "--rho", "-1", "--output", "f:out"), "`--rho`"),
    ("mechanism-rho-inf", command(*MECH, "--rho", "inf", "--output", "f:out"), "`--rho` must be a finite number"),
    ("mechanism-relation-bogus", command("audit", "mechanism", "--relation", "sideways", "--epsilon", "1", "--output", "f:out"), "`--relation`"),
    ("mechanism-samples-0", command(*MECH, "--epsilon", "1", "--samples", "0", "--output", "f:out"), "`--samples`"),
    ("mechanism-pilot-negative", command(*MECH, "--epsilon", "1", "--pilot-samples", "-5", "--output", "f:out"), "`--pilot-samples`"),
    ("mechanism-path-no-colon", command(*MECH, "--mechanism", "laplace", "--epsilon", "1", "--output", "f:out"), "`--mechanism`"),
    ("mechanism-path-missing", command(*MECH, "--mechanism", "no_such_module_r4:m", "--epsilon", "1", "--output", "f:out"), "`--mechanism`"),
    ("mechanism-not-callable", command(*MECH, "--mechanism", "mechanisms_r4:pi", "--epsilon", "1", "--output", "f:out"), "is not callable"),
    ("mechanism-dataset-missing", command(*MECH, "--dataset", "f:nothing.npy", "--epsilon", "1", "--output", "f:out"), "`--dataset`"),
    ("mechanism-dataset-garbage", command(*MECH, "--dataset", "f:garbage.npy", "--epsilon", "1", "--output", "f:out"), "`--dataset`"),
    ("mechanism-dataset-binary", command(*MECH, "--dataset", "f:binary.csv", "--epsilon", "1", "--output", "f:out"), "`--dataset`"),
    ("mechanism-neighbour-missing", command("audit", "mechanism", "--neighbour", "f:nothing.npy", "--epsilon", "1", "--output", "f:out"), "`--neighbour`"),
    ("mechanism-returns-text", command(*MECH, "--mechanism", "mechanisms_r4:text", "--epsilon", "1", "--output", "f:out"), "got a str '0.5'"),
    (
        "mechanism-returns-labels",
        command(*MECH, "--mechanism", "mechanisms_r4:labels", "--epsilon", "1", "--output", "f:out"),
        "category labels such as 'heads'",
    ),
    ("mechanism-exits", command(*MECH, "--mechanism", "mechanisms_r4:exits", "--epsilon", "1", "--output", "f:out"), "called sys.exit(0)"),
    ("mechanism-raises", command(*MECH, "--mechanism", "mechanisms_r4:raises", "--epsilon", "1", "--output", "f:out"), "raised KeyError: 'sensitivity'"),
    ("mechanism-returns-nan", command(*MECH, "--mechanism", "mechanisms_r4:nan", "--epsilon", "1", "--output", "f:out"), "must return finite numbers"),
    ("mechanism-returns-too-many", command(*MECH, "--mechanism", "mechanisms_r4:short", "--epsilon", "1", "--output", "f:out"), "`size` = 2 outputs"),
    ("mechanism-config-list", command(*MECH, "--config", "f:list.json", "--output", "f:out"), "`--config` must hold a JSON object"),
    # -- canaries lm -------------------------------------------------------------------------------
    ("canaries-lm-base-missing", command("canaries", "lm", "--base-model", "f:nothing", "--corpus", "f:corpus.txt", "--output", "f:out"), "`--base-model`"),
    ("canaries-lm-base-is-file", command("canaries", "lm", "--base-model", "f:corpus.txt", "--corpus", "f:corpus.txt", "--output", "f:out"), "`--base-model`"),
    ("canaries-lm-corpus-missing", command("canaries", "lm", "--base-model", "f:model_dir", "--corpus", "f:nothing.txt", "--output", "f:out"), "`--corpus`"),
    (
        "canaries-lm-count-3",
        command("canaries", "lm", "--base-model", "f:model_dir", "--corpus", "f:corpus.txt", "--count", "3", "--output", "f:out"),
        "`--count`",
    ),
    (
        "canaries-lm-count-negative",
        command("canaries", "lm", "--base-model", "f:model_dir", "--corpus", "f:corpus.txt", "--count", "-1", "--output", "f:out"),
        "`--count`",
    ),
    (
        "canaries-lm-design-bogus",
        command("canaries", "lm", "--base-model", "f:model_dir", "--corpus", "f:corpus.txt", "--design", "poem", "--output", "f:out"),
        "`--design`",
    ),
    (
        "canaries-lm-format-xml",
        command("canaries", "lm", "--base-model", "f:model_dir", "--corpus", "f:corpus.txt", "--format", "xml", "--output", "f:out"),
        "`--format`",
    ),
    (
        "canaries-lm-scored-bogus",
        command("canaries", "lm", "--base-model", "f:model_dir", "--corpus", "f:corpus.txt", "--scored", "half", "--output", "f:out"),
        "`--scored`",
    ),
    (
        "canaries-lm-length-0",
        command("canaries", "lm", "--base-model", "f:model_dir", "--corpus", "f:corpus.txt", "--length", "0", "--output", "f:out"),
        "`--length`",
    ),
    ("canaries-lm-corpus-empty", command("canaries", "lm", "--base-model", "f:model_dir", "--corpus", "f:empty.txt", "--output", "f:out"), "`--corpus`"),
    ("canaries-lm-corpus-binary", command("canaries", "lm", "--base-model", "f:model_dir", "--corpus", "f:binary.txt", "--output", "f:out"), "`--corpus`"),
    # -- audit lm-one-run --------------------------------------------------------------------------
    ("lm-one-run-model-missing", command("audit", "lm-one-run", "--model", "f:nothing", "--provenance", "f:provenance.json", "--output", "f:out"), "`--model`"),
    (
        "lm-one-run-model-is-file",
        command("audit", "lm-one-run", "--model", "f:corpus.txt", "--provenance", "f:provenance.json", "--output", "f:out"),
        "`--model`",
    ),
    (
        "lm-one-run-provenance-alone",
        command("audit", "lm-one-run", "--provenance", "f:provenance.json", "--output", "f:out"),
        "`--model` and `--provenance` must be given together",
    ),
    ("lm-one-run-bos-maybe", command("audit", "lm-one-run", "--bos", "maybe", "--output", "f:out"), "`--bos` must be one of"),
    ("lm-one-run-canary-copies-0", command("audit", "lm-one-run", "--canary-copies", "0", "--output", "f:out"), "`--canary-copies`"),
    ("lm-one-run-claimed-negative", command("audit", "lm-one-run", "--claimed-epsilon", "-1", "--output", "f:out"), "`--claimed-epsilon`"),
    ("lm-one-run-delta-nan", command("audit", "lm-one-run", "--delta", "nan", "--output", "f:out"), "`--delta` must be a finite number"),
    ("lm-one-run-delta-1.5", command("audit", "lm-one-run", "--delta", "1.5", "--output", "f:out"), "`--delta` must be in (0, 1)"),
    # -- audit synthetic-text ----------------------------------------------------------------------
    (
        "synthetic-empty",
        command("audit", "synthetic-text", "--synthetic", "f:empty.txt", "--provenance", "f:provenance.json", "--output", "f:out"),
        "`--synthetic`",
    ),
    (
        "synthetic-binary",
        command("audit", "synthetic-text", "--synthetic", "f:binary.txt", "--provenance", "f:provenance.json", "--output", "f:out"),
        "`--synthetic`",
    ),
    ("synthetic-without-provenance", command("audit", "synthetic-text", "--synthetic", "f:synthetic.txt", "--output", "f:out"), "`--provenance`"),
    (
        "synthetic-provenance-not-json",
        command("audit", "synthetic-text", "--synthetic", "f:synthetic.txt", "--provenance", "f:not_json.json", "--output", "f:out"),
        "`--provenance`",
    ),
    (
        "synthetic-provenance-incomplete",
        command("audit", "synthetic-text", "--synthetic", "f:synthetic.txt", "--provenance", "f:incomplete.json", "--output", "f:out"),
        "`--provenance`",
    ),
    ("synthetic-signal-cosine", command("audit", "synthetic-text", "--synthetic-signal", "cosine", "--output", "f:out"), "`--synthetic-signal` must be one of"),
    ("synthetic-ngram-0", command("audit", "synthetic-text", "--ngram-order", "0", "--output", "f:out"), "`--ngram-order`"),
    ("synthetic-delta-1.5", command("audit", "synthetic-text", "--delta", "1.5", "--output", "f:out"), "`--delta` must be in (0, 1)"),
    ("synthetic-delta-inf", command("audit", "synthetic-text", "--delta", "inf", "--output", "f:out"), "`--delta` must be a finite number"),
    (
        "synthetic-model-without-train",
        command("audit", "synthetic-text", "--synthetic-signal", "model", "--output", "f:out"),
        "`--synthetic-train` must be given with",
    ),
    (
        "synthetic-train-without-model",
        command("audit", "synthetic-text", "--synthetic-train", "mechanisms_r4:train_none", "--output", "f:out"),
        "`--synthetic-signal` 'model'",
    ),
    (
        "synthetic-train-bad-path",
        command("audit", "synthetic-text", "--synthetic-signal", "model", "--synthetic-train", "nocolon", "--output", "f:out"),
        "`--synthetic-train`",
    ),
    ("synthetic-claimed-negative", command("audit", "synthetic-text", "--claimed-epsilon", "-2", "--output", "f:out"), "`--claimed-epsilon`"),
]

INTERNAL_KEYS = ("num_references", "model_kind", "shift_pixels", "num_canaries", "num_trial_models", "synthetic_signal", "train_input", "image_shape")


def test_the_round_holds_at_least_100_cases():
    assert len(CASES) >= 100
    assert len({name for name, _, _ in CASES}) == len(CASES)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("probes")
    _files(root)
    (root / "bc.json").write_text(json.dumps({"dataset": "breast-cancer", "mode": "canary"}))
    return root


@pytest.mark.parametrize(("name", "argv", "match"), CASES, ids=[case[0] for case in CASES])
def test_a_hostile_input_exits_2_with_one_line_and_leaves_nothing(folder, monkeypatch, name, argv, match):
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(folder)
    output = folder / f"out-{name}"
    words = [str(word) for word in argv(folder)]
    if "--output" in words:
        words[words.index("--output") + 1] = str(output)
    else:
        words += ["--output", str(output)]
    if words[0] == "audit":
        words.append("--no-history")
    code, stdout, stderr = run_cli(words)
    lines = stderr.strip().splitlines()
    assert code == 2 and stdout == "" and len(lines) == 1 and lines[0].startswith("error: "), (code, stdout[-500:], stderr[-2000:])
    assert "Traceback" not in stderr
    assert match in lines[0], lines[0]
    if "--config" not in words:  # a key the user wrote in a config file may be named as written; a flag never by its internal key
        assert not any(f"`{key}`" in lines[0] for key in INTERNAL_KEYS), lines[0]
    assert not output.exists() or not any(output.iterdir()), f"partial output left in {output}: {sorted(p.name for p in output.iterdir())}"
