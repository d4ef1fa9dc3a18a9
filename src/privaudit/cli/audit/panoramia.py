"""The options of ``privaudit audit panoramia``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

from ..claims import family_flags
from .flags import Flag, factory_flag

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = (
    Flag("--model", Optional[Path], "Your classifier: a privaudit classifier's state_dict (default), or a file of --model-kind.", run="model"),
    Flag(
        "--model-kind",
        str,
        "privaudit (a privaudit linear/mlp/cnn state_dict with --spec), torch (weights, with --factory), torch-export, skops or onnx.",
        run="model_kind",
    ),
    factory_flag("--model-kind", run="factory"),
    Flag(
        "--model-output",
        str,
        "What your torch, torch-export or onnx classifier returns: auto (checked on its outputs on the members), logits, probabilities or log-probabilities.",
        run="model_output",
    ),
    Flag(
        "--trusted",
        Optional[list[str]],
        "A type your skops file holds beyond scikit-learn's and numpy's, to load it (repeat for several): only for a file you trust.",
        run="trusted",
    ),
    Flag("--spec", Optional[Path], "JSON architecture spec of --model (default: MODEL with suffix .json).", run="spec"),
    Flag(
        "--members",
        Optional[Path],
        "Known training members: .npz with x and y, or .csv/.parquet of numbers with the label in --label-col "
        "(without it: the one column of whole numbers or named label/labels/y/target/class, else refused).",
        run="members",
    ),
    Flag("--non-members", Optional[Path], "Real non-members (same formats and --label-col), for the RM;RN comparison.", run="non_members"),
    Flag("--label-col", Optional[str], "The label column of a .csv (needs a header row) or .parquet --members and --non-members.", run="label_col"),
    Flag(
        "--inclusion-randomised",
        bool,
        "Members and non-members were split by independent fair coins before training: add the O(1) audit.",
        run="inclusion_randomised",
    ),
    Flag("--generator", str, "Generator of non-members for --model: mst (tabular) or vae (images in [0, 1]).", run="generator"),
    Flag(
        "--helper-epochs",
        int,
        "Training epochs of the helper model (the architecture of a privaudit --model, else an MLP on the members' features).",
        run="helper_epochs",
    ),
    Flag("--audit-size", int, "m, the members held out for the audit game (with --model).", run="audit_size"),
    Flag("--confidence", float, "Confidence 1 - beta of c_lb and {c+eps}_lb (with --model).", run="confidence"),
    Flag(
        "--claimed-epsilon",
        Optional[float],
        "The ε your training claims, end to end, in (0, inf), with --model and --inclusion-randomised: the O(1) one-run bound is compared with it.",
        run="claimed_epsilon",
    ),
    Flag("--claimed-delta", Optional[float], "The δ of --claimed-epsilon's claim, in [0, 1) (default: the O(1) bound's δ).", run="claimed_delta"),
    # the shared spelling, passed to the audit's run (its config is the embedded default's)
    *(dataclasses.replace(flag, config=None, run=flag.config) for flag in family_flags("the training of the O(1) audit's one target")),
)
