"""Round 5's hostile probes: (name, command line, what its one error line must say, the issue item it proves, words it must not say).

A word ``f:NAME`` is the file NAME of tests/probes_round5_files.py's folder;
``OUT`` is the case's own fresh ``--output`` (added when the command line
names none). ``item`` is the issue's item number where the probe failed
before round 5 (a traceback, exit 0, a wrong name or a file replaced);
``None`` marks a probe that held already and now guards against regression.
"""

from __future__ import annotations

from typing import NamedTuple


class Probe(NamedTuple):
    name: str
    words: tuple[str, ...]
    match: str
    item: int | None = None
    absent: tuple[str, ...] = ()


def _probe(name: str, words: str | tuple[str, ...], match: str, item: int | None = None, absent: tuple[str, ...] = ()) -> Probe:
    return Probe(name, tuple(words.split()) if isinstance(words, str) else words, match, item, absent)


BOUND = "bound --in f:in.txt --out f:out.txt"
EXPOSURE = "exposure --canaries f:in.txt --references f:out.txt"
SD = "audit synthetic-data --train f:train.csv --holdout f:holdout.csv --id-col pid"
SD_GEN = SD + " --generator privaudit.audits.synthetic_data.generators:gaussian_copula"
SD_REL = SD + " --synthetic f:synthetic.csv"
MIA = "audit mia --data f:pool.csv --label-col label"
ACCOUNTANT = ("noise_multiplier", "--sampling-prob", "`--steps`", "num_steps")

_BOUND = [
    # -- item 5: a claim's details without the claim ------------------------------------------------
    _probe("bound-claim-steps-without-claim", BOUND + " --claim-steps 100", "`--claim-steps` describes a claim: give `--claimed-epsilon`", 5),
    _probe("bound-quantity-without-claim", BOUND + " --quantity per-step", "`--quantity` describes a claim", 5),
    _probe("bound-quantity-end-to-end-without-claim", BOUND + " --quantity end-to-end", "`--quantity` describes a claim", 5),
    _probe("bound-sampling-rate-without-claim", BOUND + " --claim-sampling-rate 0.01", "`--claim-sampling-rate` describes a claim", 5),
    _probe(
        "bound-rate-and-steps-without-claim",
        BOUND + " --claim-sampling-rate 0.01 --claim-steps 100",
        "`--claim-sampling-rate`, `--claim-steps` describe a claim",
        5,
    ),
    _probe(
        "bound-claim-steps-with-end-to-end",
        BOUND + " --claimed-epsilon 2 --quantity end-to-end --claim-steps 100",
        "go with `--quantity per-step`, not end-to-end",
        5,
    ),
    # -- item 18: the accountant's argument names never reach the user --------------------------------
    _probe(
        "bound-claim-steps-1e12",
        BOUND + " --claimed-epsilon 1 --quantity per-step --claim-sampling-rate 0.01 --claim-steps 1000000000000",
        "`--claimed-epsilon` 1 with `--claim-sampling-rate` 0.01 and `--claim-steps` 1000000000000 cannot be converted",
        18,
        ACCOUNTANT,
    ),
    _probe(
        "bound-claim-steps-1e12-rate-1",
        BOUND + " --claimed-epsilon 0.5 --quantity per-step --claim-sampling-rate 1 --claim-steps 1000000000000",
        "`--claim-steps` 1000000000000 cannot be converted",
        18,
        ACCOUNTANT,
    ),
    # -- item 19: `claimed_epsilon` where the flag was typed --------------------------------------------
    _probe(
        "bound-claimed-delta-alone", BOUND + " --claimed-delta 0.00001", "`--claimed-delta` needs `--claimed-epsilon`", 19, ("claimed_epsilon", "claimed_delta")
    ),
    _probe("bound-claimed-epsilon-negative", BOUND + " --claimed-epsilon -1 --quantity end-to-end", "`--claimed-epsilon`", 19, ("claimed_epsilon",)),
    _probe("bound-claimed-epsilon-zero", BOUND + " --claimed-epsilon 0 --quantity end-to-end", "`--claimed-epsilon`", 19, ("claimed_epsilon",)),
    _probe("bound-claimed-delta-one", BOUND + " --claimed-epsilon 1 --claimed-delta 1 --quantity end-to-end", "`--claimed-delta`", 19, ("claimed_delta",)),
    _probe(
        "bound-claimed-delta-negative", BOUND + " --claimed-epsilon 1 --claimed-delta -0.5 --quantity end-to-end", "`--claimed-delta`", 19, ("claimed_delta",)
    ),
    # -- guards that held ---------------------------------------------------------------------------------
    _probe("bound-claim-without-quantity", BOUND + " --claimed-epsilon 1", "`--quantity` must be given with `--claimed-epsilon`"),
    _probe("bound-quantity-bogus", BOUND + " --claimed-epsilon 1 --quantity total", "`--quantity`"),
    _probe("bound-per-step-without-steps", BOUND + " --claimed-epsilon 1 --quantity per-step", "give `--claim-sampling-rate` and `--claim-steps`"),
    _probe("bound-claim-rate-2", BOUND + " --claimed-epsilon 1 --quantity per-step --claim-sampling-rate 2 --claim-steps 10", "`--claim-sampling-rate`"),
    _probe("bound-claim-steps-0", BOUND + " --claimed-epsilon 1 --quantity per-step --claim-sampling-rate 0.1 --claim-steps 0", "`--claim-steps`"),
    _probe("bound-claimed-epsilon-nan", BOUND + " --claimed-epsilon nan --quantity end-to-end", "`--claimed-epsilon`"),
    _probe("bound-pld-steps-0", BOUND + " --method pld --steps 0", "`--steps`"),
    _probe("bound-pld-sampling-2", BOUND + " --method pld --sampling-prob 2", "`--sampling-prob`"),
    _probe("bound-confidence-1", BOUND + " --confidence 1", "`--confidence`"),
    _probe("bound-delta-0", BOUND + " --delta 0", "`--delta`"),
    _probe("bound-interval-bogus", BOUND + " --interval wald", "`--interval`"),
    _probe("bound-both-directions", BOUND + " --higher-is-member --lower-is-member", "--lower-is-member"),
    _probe("bound-scores-and-in", BOUND + " --scores f:scores.csv", "--scores"),
    # -- item 19: a directory or a FIFO is said to be one, not "not found" ---------------------------------
    _probe("bound-in-directory", "bound --in f:a_directory.txt --out f:out.txt", "is a directory", 19, ("not found", "does not exist")),
    _probe("bound-in-fifo", "bound --in f:fifo.txt --out f:out.txt", "is a FIFO (named pipe), not a file", 19, ("not found", "does not exist")),
    _probe("bound-out-fifo", "bound --in f:in.txt --out f:fifo.txt", "`--out`", 19, ("not found",)),
    _probe("bound-scores-directory", "bound --scores f:a_directory.csv", "is a directory", 19, ("not found",)),
    _probe("bound-scores-fifo", "bound --scores f:fifo.csv", "is a FIFO", 19, ("not found",)),
    _probe("bound-in-dangling-symlink", "bound --in f:dangling --out f:out.txt", "`--in`"),
    # -- item 8: a header's escapes are never printed raw ---------------------------------------------------
    _probe("bound-score-col-escape-header", "bound --scores f:scores_escape.csv --score-col score", "`--score-col`", 8),
    _probe("bound-member-col-escape-header", "bound --scores f:scores_escape.csv --score-col x --member-col y", "`--score-col`", 8),
    # -- items 9, 11 and 14: --output ---------------------------------------------------------------------
    _probe("bound-output-own-report", BOUND + " --output f:own_report", "holds report.html, roc.png but no results.json of a privaudit run", 9),
    _probe("bound-output-own-results", BOUND + " --output f:own_results", "no results.json of a privaudit run", 9),
    _probe("bound-output-folder-roc", BOUND + " --output f:folder_figure", "holds a folder named 'roc.png'", 11),
    _probe("bound-output-folder-report", BOUND + " --output f:folder_report", "holds a folder named 'report.html'"),
    _probe("bound-output-symlink-loop", BOUND + " --output f:loop_a", "is a symlink that leads nowhere", 14),
    _probe("bound-output-dangling", BOUND + " --output f:dangling", "is a symlink that leads nowhere", 14),
    _probe("bound-output-file", BOUND + " --output f:a_file", "`--output` must be a directory"),
    _probe("bound-output-under-file", BOUND + " --output f:a_file/run", "is a file"),
]

_EXPOSURE = [
    _probe("exposure-claimed-delta-alone", EXPOSURE + " --claimed-delta 0.00001", "`--claimed-delta` needs `--claimed-epsilon`", 19, ("claimed_epsilon",)),
    _probe("exposure-claimed-epsilon-negative", EXPOSURE + " --claimed-epsilon -2", "`--claimed-epsilon`", 19, ("claimed_epsilon",)),
    _probe("exposure-claimed-delta-2", EXPOSURE + " --claimed-epsilon 2 --claimed-delta 2", "`--claimed-delta`", 19, ("claimed_delta",)),
    _probe("exposure-canaries-fifo", "exposure --canaries f:fifo.txt --references f:out.txt", "is a FIFO", 19, ("not found",)),
    _probe("exposure-references-directory", "exposure --canaries f:in.txt --references f:a_directory.txt", "is a directory", 19, ("not found",)),
    _probe("exposure-output-own-report", EXPOSURE + " --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("exposure-output-folder-roc", EXPOSURE + " --output f:folder_figure", "folder named 'roc.png'", 11),
    _probe("exposure-output-loop", EXPOSURE + " --output f:loop_b", "leads nowhere", 14),
    _probe("exposure-insertions-0", EXPOSURE + " --insertions 0", "`--insertions`"),
    _probe("exposure-insertions-both", EXPOSURE + " --insertions 2 --insertions-col n", "`--insertions`"),
    _probe("exposure-confidence-2", EXPOSURE + " --confidence 2", "`--confidence`"),
    _probe("exposure-loss-col-escape-header", "exposure --canaries f:canary_table.csv --references f:out.txt --loss-col loss", "`--loss-col`", 8),
]

_SYNTHETIC_DATA = [
    # -- item 5 ---------------------------------------------------------------------------------------------
    _probe(
        "sd-claimed-epsilon-without-canaries",
        SD_GEN + " --claimed-epsilon 2",
        "`--claimed-epsilon` is compared with the ε lower bound, which needs `--canaries`",
        5,
    ),
    _probe("sd-claimed-epsilon-no-box", SD_REL + " --claimed-epsilon 2", "needs `--canaries`", 5),
    _probe("sd-claimed-epsilon-canaries-0", SD_GEN + " --claimed-epsilon 2 --canaries 0", "needs `--canaries`", 5),
    _probe("sd-num-synthetic-with-synthetic", SD_REL + " --num-synthetic 20", "`--num-synthetic` sets how many rows `--generator` makes", 5),
    # -- items 14, 15: sizes before the work ------------------------------------------------------------------
    _probe("sd-canaries-1e12", SD_GEN + " --canaries 1000000000000", "`--canaries` must be at most 100,000", 14),
    _probe("sd-num-synthetic-1e12", SD_GEN + " --num-synthetic 1000000000000", "`--num-synthetic` must be at most", 14),
    _probe("sd-shadows-1e12", SD_GEN + " --shadows 1000000000000", "`--shadows` must be at most 1000", 15),
    _probe("sd-shadows-1002", SD_GEN + " --shadows 1002", "`--shadows` must be at most 1000", 15),
    _probe("sd-ray-unreachable", SD_GEN + " --backend ray --address 127.0.0.1:1", "`--address` '127.0.0.1:1': nothing accepts a connection there", 15),
    _probe(
        "sd-wide-table",
        "audit synthetic-data --train f:wide.csv --holdout f:holdout.csv --synthetic f:synthetic.csv",
        "has 20000 columns; the audit takes at most 1000",
        14,
    ),
    _probe("sd-nested-parquet", "audit synthetic-data --train f:nested.parquet --holdout f:holdout.csv --synthetic f:synthetic.csv", "holds nested values", 14),
    # -- item 4: ids as written ---------------------------------------------------------------------------------
    _probe(
        "sd-id-empty-cell",
        "audit synthetic-data --train f:train_empty_id.csv --holdout f:holdout.csv --synthetic f:synthetic.csv --id-col pid",
        "has an empty cell",
        4,
    ),
    _probe(
        "sd-big-ids-empty-cell",
        "audit synthetic-data --train f:train_big_ids.csv --holdout f:holdout.csv --synthetic f:synthetic.csv --id-col pid",
        "has an empty cell",
        4,
    ),
    # -- item 17: an infinity is named by its column and option ---------------------------------------------------
    _probe(
        "sd-train-inf",
        "audit synthetic-data --train f:train_inf.csv --holdout f:holdout.csv --synthetic f:synthetic.csv --id-col pid",
        "`--train` column 'age' holds an infinity",
        17,
        ("`scores`",),
    ),
    _probe(
        "sd-holdout-inf",
        "audit synthetic-data --train f:train.csv --holdout f:holdout_inf.csv --synthetic f:synthetic.csv --id-col pid",
        "`--holdout` column 'age'",
        17,
        ("`scores`",),
    ),
    _probe(
        "sd-synthetic-inf",
        "audit synthetic-data --train f:train.csv --holdout f:holdout.csv --synthetic f:synthetic_inf.csv --id-col pid",
        "`--synthetic` column 'age'",
        17,
        ("`scores`",),
    ),
    # -- item 19: wording -------------------------------------------------------------------------------------------
    _probe(
        "sd-train-header-only",
        "audit synthetic-data --train f:train_header.csv --holdout f:holdout.csv --synthetic f:synthetic.csv --id-col pid",
        "`--train`",
        19,
        ("`--holdout`",),
    ),
    _probe(
        "sd-nfc-nfd",
        "audit synthetic-data --train f:train_cafe.csv --holdout f:holdout_cafe.csv --synthetic f:synthetic.csv --id-col pid",
        "extra ['extra']",
        19,
        ("caf",),
    ),
    _probe(
        "sd-train-directory",
        "audit synthetic-data --train f:a_directory.csv --holdout f:holdout.csv --synthetic f:synthetic.csv",
        "is a directory, not a file",
        19,
        ("does not exist",),
    ),
    _probe(
        "sd-train-fifo",
        "audit synthetic-data --train f:fifo.csv --holdout f:holdout.csv --synthetic f:synthetic.csv",
        "is a FIFO (named pipe), not a file",
        19,
        ("does not exist",),
    ),
    _probe(
        "sd-holdout-directory",
        "audit synthetic-data --train f:train.csv --holdout f:a_directory.csv --synthetic f:synthetic.csv",
        "`--holdout`",
        19,
        ("does not exist",),
    ),
    _probe(
        "sd-synthetic-fifo", "audit synthetic-data --train f:train.csv --holdout f:holdout.csv --synthetic f:fifo.csv", "`--synthetic`", 19, ("does not exist",)
    ),
    _probe(
        "sd-claimed-delta-0-accepted",
        SD_GEN.replace("f:holdout.csv", "f:a_directory.csv") + " --canaries 10 --claimed-epsilon 1 --claimed-delta 0",
        "`--holdout`",
        19,
        ("claimed",),
    ),
    # -- item 8 ---------------------------------------------------------------------------------------------------------
    _probe(
        "sd-escape-header-kinds", "audit synthetic-data --train f:train_escape.csv --holdout f:holdout_escape.csv --synthetic f:synthetic.csv", "`--holdout`", 8
    ),
    _probe(
        "sd-escape-header-id-col",
        "audit synthetic-data --train f:train_escape.csv --holdout f:holdout.csv --synthetic f:synthetic.csv --id-col nope",
        "`--id-col`",
        8,
    ),
    # -- guards that held ---------------------------------------------------------------------------------------------
    _probe("sd-shadows-3", SD_GEN + " --shadows 3", "`--shadows` must be 0 or an even integer >= 4"),
    _probe("sd-canaries-5", SD_GEN + " --canaries 5", "`--canaries` must be 0 or >= 10"),
    _probe("sd-canaries-no-box", SD_REL + " --canaries 10", "`--canaries` and `--canary-records` need `--generator`"),
    _probe("sd-shadow-targets-1", SD_GEN + " --shadow-targets 1", "`--shadow-targets` must be", 19, ("num_shadow_targets",)),
    _probe("sd-reference-fraction-1", SD_GEN + " --reference-fraction 1", "`--reference-fraction`"),
    _probe("sd-num-synthetic-5", SD_GEN + " --num-synthetic 5", "`--num-synthetic` must be", 19, ("num_synthetic",)),
    _probe("sd-both-release-and-generator", SD_GEN + " --synthetic f:synthetic.csv", "`--synthetic` and `--generator` exclude each other"),
    _probe("sd-train-without-holdout", "audit synthetic-data --train f:train.csv --synthetic f:synthetic.csv", "`--train` and `--holdout` go together"),
    _probe("sd-train-txt", "audit synthetic-data --train f:train.txt --holdout f:holdout.csv --synthetic f:synthetic.csv", "must be a .csv or .parquet file"),
    _probe("sd-generator-no-colon", SD + " --generator gaussian_copula", "`--generator`"),
    _probe(
        "sd-delta-below-claim",
        SD_GEN + " --canaries 10 --claimed-epsilon 1 --claimed-delta 0.01 --delta 0.001",
        "`--delta` (0.001) must be >= `--claimed-delta`",
    ),
    _probe("sd-claimed-delta-alone", SD_GEN + " --claimed-delta 0.001", "`--claimed-delta` needs `--claimed-epsilon`"),
    _probe("sd-id-col-unknown", SD_REL.replace("--id-col pid", "--id-col nope"), "`--id-col` 'nope' is not a column of `--train`"),
    _probe("sd-output-own-report", SD_REL + " --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("sd-output-loop", SD_REL + " --output f:loop_a", "leads nowhere", 14),
    _probe("sd-history-nouser", SD_REL + " --history ~nouser_r5/h.sqlite", "`--history` '~nouser_r5/h.sqlite': cannot expand its '~'", 14),
    _probe("sd-config-duplicate", SD_REL + " --config f:duplicate_synthetic.yaml", "gives the top level the key 'num_shadows' twice (lines 1 and 2)", 4),
    _probe("sd-config-octal", SD_GEN + " --config f:octal_synthetic.yaml", "'012' is read by YAML 1.1 as a number", 4),
]

_MIA = [
    # -- item 4: YAML 1.1 ------------------------------------------------------------------------------------
    _probe("mia-yaml-sexagesimal", "audit mia --config f:sexagesimal.yaml", "'1:30' is read by YAML 1.1 as a number", 4),
    _probe("mia-yaml-octal", "audit mia --config f:octal.yaml", "'010' is read by YAML 1.1 as a number", 4),
    _probe("mia-yaml-hexadecimal", "audit mia --config f:hexadecimal.yaml", "'0x10' is read by YAML 1.1 as a number", 4),
    _probe("mia-yaml-underscore", "audit mia --config f:underscore.yaml", "'1_6' is read by YAML 1.1 as a number", 4),
    _probe("mia-yaml-yes", "audit mia --config f:yes.yaml", "'yes' is read by YAML 1.1 as a boolean", 4),
    _probe("mia-yaml-duplicate", "audit mia --config f:duplicate.yaml", "the key 'num_references' twice (lines 1 and 2)", 4),
    _probe("dpsgd-yaml-duplicate-nested", "audit dpsgd --config f:duplicate_nested.yaml", "gives key 'training' the key 'epochs' twice (lines 2 and 3)", 4),
    _probe("mechanism-yaml-sexagesimal-float", "audit mechanism --config f:sexagesimal_float.yaml", "'1:30.5' is read by YAML 1.1 as a number", 4),
    _probe("mia-yaml-large", "audit mia --config f:large.yaml", "is larger than 1048576 bytes", 15),
    _probe("fl-yaml-large", "audit fl --config f:large.yaml", "is larger than 1048576 bytes", 15),
    # -- item 4: labels as written ---------------------------------------------------------------------------
    _probe("mia-labels-01-and-1", "audit mia --data f:pool_01.csv --label-col label", "writes one number two ways", 4),
    _probe("mia-labels-01-and-1-unnamed", "audit mia --data f:pool_01.csv", "writes one number two ways", 4),
    # -- item 19 -------------------------------------------------------------------------------------------------
    _probe(
        "mia-label-col-is-id-col",
        "audit mia --data f:pool_ids.csv --label-col pid --id-col pid",
        "`--label-col` and `--id-col` both name the column 'pid'",
        19,
        ("has no column",),
    ),
    _probe(
        "mia-label-col-label-is-id-col", "audit mia --data f:pool.csv --label-col label --id-col label", "both name the column 'label'", 19, ("has no column",)
    ),
    _probe("mia-data-fifo", "audit mia --data f:fifo.csv --label-col label", "is a FIFO", 19, ("not found",)),
    _probe("mia-data-directory", "audit mia --data f:a_directory.csv --label-col label", "is a directory", 19, ("not found",)),
    # -- items 9, 11, 14, 15 ---------------------------------------------------------------------------------------
    _probe("mia-output-own-report", MIA + " --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("mia-output-own-results", MIA + " --output f:own_results", "no results.json of a privaudit run", 9),
    _probe("mia-output-folder-roc", MIA + " --output f:folder_figure", "folder named 'roc.png'", 11),
    _probe("mia-output-loop", MIA + " --output f:loop_a", "leads nowhere", 14),
    _probe("mia-history-nouser", MIA + " --history ~nouser_r5/h.sqlite", "cannot expand its '~'", 14),
    _probe("mia-ray-unreachable", MIA + " --backend ray --address 127.0.0.1:1", "`--address` '127.0.0.1:1': nothing accepts a connection there", 15),
    _probe("mia-ray-unreachable-url", MIA + " --backend ray --address ray://127.0.0.1:1", "nothing accepts a connection there", 15),
    _probe("mia-skops-broken", MIA + " --model f:broken.skops --members f:members.txt --target-kind skops", "is not a readable skops file", 14),
    # -- item 8 ----------------------------------------------------------------------------------------------------------
    _probe("mia-escape-header-label-col", "audit mia --data f:pool_escape.csv --label-col nope", "`--label-col`", 8),
    _probe("mia-escape-header-id-col", "audit mia --data f:pool_escape.csv --label-col label --id-col nope", "`--data`", 8),
    _probe("mia-escape-in-flag", ("audit", "mia", "--mode", f"canary{chr(27)}[2J"), "`--mode` must be one of", 8),
    _probe("mia-bidi-in-flag", ("audit", "mia", "--backend", f"local{chr(0x202E)}yar"), "`--backend`", 8),
    # -- guards that held -------------------------------------------------------------------------------------------------
    _probe("mia-config-deep-json", "audit mia --config f:deep.json", "is nested too deeply to read"),
    _probe("mia-skops-empty-zip", MIA + " --model f:bad.skops --members f:members.txt --target-kind skops", "is not a skops file"),
    _probe("mia-address-without-ray", MIA + " --address 127.0.0.1:1", "`--address` needs `--backend ray`"),
]

_MODEL_DIRECTORIES = [
    _probe(f"{command}-{directory}", (*words, f"f:{directory}", *rest), match, 14)
    for directory, match in (
        ("deep_config", "config.json' is nested too deeply to read"),
        ("deep_tokenizer", "tokenizer_config.json' is nested too deeply to read"),
        ("nested_text_config", "has a `text_config` that is not one plain object"),
        ("header_2_63", "declares a header of 9223372036854775808 bytes"),
        ("tensor_4tb", "declares tensor 'w' of 4000000000000 bytes"),
        ("pickle_weights", "is a pickle file under a .safetensors name"),
    )
    for command, words, rest in (
        ("canaries-lm", ("canaries", "lm", "--corpus", "f:corpus.txt", "--base-model"), ()),
        ("canaries-lm-new-tokens", ("canaries", "lm", "--corpus", "f:corpus.txt", "--design", "new-tokens", "--base-model"), ()),
        ("lm-one-run", ("audit", "lm-one-run", "--provenance", "f:provenance.json", "--model"), ()),
    )
]

_OTHER_COMMANDS = [
    _probe("panoramia-claimed-delta-alone", "audit panoramia --claimed-delta 0.001", "`--claimed-delta` needs `--claimed-epsilon`", 19, ("claimed_",)),
    _probe("panoramia-output-own-report", "audit panoramia --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("panoramia-output-folder-roc", "audit panoramia --output f:folder_figure", "folder named 'roc.png'", 11),
    _probe("panoramia-yaml-duplicate", "audit panoramia --config f:duplicate.yaml", "twice", 4),
    _probe("one-run-output-own-report", "audit one-run --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("one-run-output-loop", "audit one-run --output f:loop_b", "leads nowhere", 14),
    _probe("one-run-history-nouser", "audit one-run --history ~nouser_r5/h.sqlite", "cannot expand its '~'", 14),
    _probe("one-run-yaml-octal", "audit one-run --config f:octal.yaml", "'010' is read by YAML 1.1", 4),
    _probe("secret-sharer-output-own-report", "audit secret-sharer --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("secret-sharer-output-folder-roc", "audit secret-sharer --output f:folder_figure", "folder named 'roc.png'", 11),
    _probe("secret-sharer-history-nouser", "audit secret-sharer --history ~nouser_r5/h.sqlite", "cannot expand its '~'", 14),
    _probe("dpsgd-output-own-report", "audit dpsgd --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("dpsgd-output-symlink-loop", "audit dpsgd --output f:loop_a", "leads nowhere", 14),
    _probe("fl-output-own-report", "audit fl --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("fl-output-folder-report", "audit fl --output f:folder_report", "folder named 'report.html'"),
    _probe("blackbox-output-own-report", "audit blackbox --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("blackbox-ray-unreachable", "audit blackbox --backend ray --address 127.0.0.1:1", "nothing accepts a connection there", 15),
    _probe("mechanism-output-own-report", "audit mechanism --relation add-remove --epsilon 1 --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("mechanism-output-loop", "audit mechanism --relation add-remove --epsilon 1 --output f:loop_a", "leads nowhere", 14),
    _probe("synthetic-text-output-own-report", "audit synthetic-text --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("lm-one-run-output-own-report", "audit lm-one-run --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("demo-output-own-report", "demo --no-history --output f:own_report", "no results.json of a privaudit run", 9),
    _probe("demo-output-loop", "demo --no-history --output f:loop_a", "leads nowhere", 14),
    _probe("demo-output-folder-roc", "demo --no-history --output f:folder_figure", "folder named 'roc.png'", 11),
    _probe("canaries-insert-output-loop", "canaries insert --corpus f:corpus.txt --output f:loop_a", "leads nowhere", 14),
    _probe("canaries-lm-output-loop", "canaries lm --corpus f:corpus.txt --base-model f:deep_config --output f:loop_b", "leads nowhere", 14),
    _probe("canaries-insert-corpus-fifo", "canaries insert --corpus f:fifo.txt", "`--corpus`"),
    _probe("history-nouser", "history --history ~nouser_r5/h.sqlite", "cannot expand its '~'", 14),
    _probe("report-run-missing", "report f:nowhere_run --output OUT", "has no results.json"),
]

CASES: list[Probe] = [*_BOUND, *_EXPOSURE, *_SYNTHETIC_DATA, *_MIA, *_MODEL_DIRECTORIES, *_OTHER_COMMANDS]
