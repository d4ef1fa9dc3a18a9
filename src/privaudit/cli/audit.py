"""``privaudit audit FAMILY``: one command per registered audit, all built by one function.

Every command takes the same options (``--output``, ``--config``,
``--print-config``, ``--seed``, the history options, ``--json``) plus the
family's own flags from :data:`FLAGS`, each of which either overrides a key
of the config or is handed to ``Audit.run``. The command loads the config
(the embedded default when ``--config`` is absent), checks the output path
and opens the history before any work, runs the audit, writes it with
:func:`privaudit.report.runs.write_run` (results.json, figures and
report.html, all or nothing), records it, and prints the
family's table (:mod:`.tables`) or ``--json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .._core.files import check_output_apart, check_output_dir
from .._core.resources import check_memory
from ..audits.base import run_capturing
from ..audits.registry import get_audit, names
from .app import audit_app, interruptible
from .claims import claim_flags
from .options import (
    HistoryOption,
    JsonOption,
    ModelIdOption,
    NoHistoryOption,
    ReleaseOption,
    VerboseOption,
    emit,
    history_recorder,
    progress_bars,
    report_captured,
)

__all__ = ["FLAGS", "Flag", "make_audit_command", "merged_config"]


@dataclasses.dataclass(frozen=True)
class Flag:
    """A family's own option: it overrides config key ``config`` (a dotted path) or is passed to ``run`` as ``run``."""

    option: str
    type: Any
    help: str
    config: str | None = None
    run: str | None = None
    parse: Callable[[Any], Any] | None = None

    @property
    def parameter(self) -> str:
        return self.option.lstrip("-").replace("-", "_")


def _schedule(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"`--schedule` must be comma-separated integers, got {text!r}") from None


def _domain(text: str) -> tuple[float, float]:
    """``LOW,HIGH``: the range of a record's fields that the mechanism audit's search draws from."""
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"`--domain` must be two comma-separated numbers LOW,HIGH with LOW < HIGH, got {text!r}") from None
    if not low < high:
        raise ValueError(f"`--domain` must be two comma-separated numbers LOW,HIGH with LOW < HIGH, got {text!r}")
    return low, high


def _pool_file(path: Path) -> str:
    """mia's pool: a labelled file, or a .txt of texts (one record a line) for --target-kind huggingface."""
    return str(path) if str(path).lower().endswith(".txt") else _dataset_file(path)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _image_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.split(","))
    except ValueError:
        shape = ()
    if len(shape) != 3:
        raise ValueError(f"`--image-shape` must be three comma-separated integers C,H,W (channels, height, width), got {text!r}")
    return shape


def _import_path(option: str) -> Callable[[str], str]:
    """The parser of an option that names a callable as 'package.module:callable'."""

    def parse(text: str) -> str:
        from ..models.loading import check_import_path

        return check_import_path(text, option)

    return parse


def _dataset_file(path: Path) -> str:
    from .._core.labelled import LABELLED_SUFFIXES

    if not str(path).lower().endswith(LABELLED_SUFFIXES):
        raise ValueError(f"`--data` must be a .npz, .csv or .parquet file, got {str(path)!r}")
    return str(path)


_LABEL_RULE = "(without it: the one column of whole numbers or named label/labels/y/target/class, else refused)."
_LABEL_COL = Flag("--label-col", Optional[str], "The label column of a .csv (needs a header row) or .parquet --data.", config="label_col")

FLAGS: dict[str, tuple[Flag, ...]] = {
    "secret-sharer": (
        Flag("--template", Optional[str], "Canary format, e.g. 'my pin is {digits:6}'.", config="template"),
        Flag("--schedule", Optional[str], "Insertion counts, comma-separated, e.g. 1,2,4,8,16,32.", config="schedule", parse=_schedule),
        Flag("--epochs", Optional[int], "Maximum training epochs (early stopping on validation loss).", config="epochs"),
        Flag("--dp-epsilon", Optional[float], "Train the audited model with DP-SGD (Opacus) at this epsilon.", config="target_epsilon"),
        Flag("--compare-dp", Optional[float], "Also train a DP-SGD model at this epsilon and compare exposures.", config="compare_dp_epsilon"),
        Flag("--max-corpus-chars", Optional[int], "Use only the first N characters of the corpus.", config="max_corpus_chars"),
        Flag("--hidden", Optional[int], "LSTM hidden units.", config="hidden"),
        Flag("--secure-canaries", bool, "Draw canaries from the OS's secure randomness (not reproducible from --seed).", config="secure_canaries"),
        Flag(
            "--model",
            Optional[Path],
            "Your Hugging Face causal LM (a save_pretrained directory with its tokenizer), trained on the corpus of `privaudit canaries insert`: measured instead of training the built-in LSTM.",
            run="model",
        ),
        Flag("--provenance", Optional[Path], "The provenance.json written by `privaudit canaries insert` (with --model).", run="provenance"),
        Flag("--num-references", Optional[int], "Reference candidates (never inserted) that exposure ranks canaries among.", config="num_references"),
        Flag(
            "--bos",
            Optional[str],
            "With --model: did a BOS token go before each line your model was trained on? auto (default): what the tokenizer adds; "
            "if it declares a BOS that it does not add, corpus lines are scored both ways and the more likely way is taken, "
            "or the run is refused when the margin is too small. prepend or none: as you say, unchecked.",
            config="bos",
        ),
        Flag(
            "--bos-corpus",
            Optional[Path],
            "With --model and --bos auto: the lines your model was trained on, in the provenance's text format, for the BOS check "
            "(default: the corpus `privaudit canaries insert` wrote beside the provenance).",
            config="bos_corpus",
            parse=str,
        ),
        *claim_flags("your training, for a record (the exposure bound is a pure ε: it meets only a claim with δ = 0)"),
    ),
    "dpsgd": (
        Flag(
            "--model",
            Optional[str],
            "Your PyTorch module instead of the built-in architecture: package.module:factory, a function called with no arguments "
            "(weights seeded by --seed) that returns a torch.nn.Module mapping (n, features) to class logits (n, classes), "
            "with no BatchNorm. It is trained by the reference DP-SGD with the config's DP settings. "
            "The module is imported from the current directory or the Python path.",
            config="architecture",
            parse=_import_path("--model"),
        ),
        Flag(
            "--weights",
            Optional[Path],
            "Initial weights of --model: safetensors, or a state_dict saved with torch.save (read with weights_only=True). "
            "Pickle files are refused, and the names and shapes must match the module exactly.",
            config="weights",
            parse=str,
        ),
        Flag(
            "--data",
            Optional[Path],
            "Your dataset instead of the embedded one: .npz with arrays x (n, features) and y (n integer labels), "
            "or .csv/.parquet of numbers, one example per row, label in --label-col (without it: the one column of whole numbers "
            "or named label/labels/y/target/class, else refused). "
            "It is split 75/25 into train and test by --seed; features are used as they are (no scaling). "
            ".parquet needs pandas and pyarrow.",
            config="dataset",
            parse=_dataset_file,
        ),
        Flag(
            "--label-col",
            Optional[str],
            "The label column of a .csv (needs a header row) or .parquet --data; overrides the config's label_col.",
            config="label_col",
        ),
        *claim_flags(
            "your DP-SGD training (default: privaudit's accountant for the settings it runs)",
            quantity="end to end; converted to one step with the config's q and T",
        ),
    ),
    "blackbox": (
        Flag(
            "--train",
            Optional[str],
            "Your training function instead of the built-in model and DP-SGD: package.module:fn with "
            "fn(x_train, y_train, *, seed) -> model. x_train is float32 (n, d) and y_train is int64 (n,), the config's dataset with the canary in half the runs. "
            "The model is a torch.nn.Module returning logits, an object with predict_proba, or a predict_proba function. "
            "fn must be a module-level function that worker processes can import (from the current directory or the Python path). "
            "The accountant's ε for the config's noise_multiplier and num_steps is evidence only; the verdict is against --claimed-epsilon.",
            config="train",
            parse=_import_path("--train"),
        ),
        Flag(
            "--data",
            Optional[Path],
            "Your dataset instead of the config's embedded one: .npz with arrays x (n, features) and y (n integer labels), "
            "or .csv/.parquet of numbers, one example per row, label in --label-col " + _LABEL_RULE + " Split 75/25 into train and test by --seed; "
            "the mislabelled canary is the first test record with the next label. Features are used as they are (no scaling).",
            config="data",
            parse=_dataset_file,
        ),
        _LABEL_COL,
        Flag("--backend", str, "local (process pool) or ray.", run="backend"),
        Flag("--address", Optional[str], "Ray cluster address, e.g. auto or ray://host:10001 (with --backend ray).", run="address"),
        Flag("--workers", Optional[int], "Worker processes (local) or CPUs of a new local Ray instance; default: all cores.", run="max_workers"),
        *claim_flags("your training (without --train: privaudit's accountant for its own DP-SGD)"),
    ),
    "fl": claim_flags("the DP-FedAvg simulation, for a client (default: privaudit's accountant for the settings it runs)"),
    "panoramia": (
        Flag("--model", Optional[Path], "Your classifier: a privaudit classifier's state_dict (default), or a file of --model-kind.", run="model"),
        Flag(
            "--model-kind",
            str,
            "privaudit (a privaudit linear/mlp/cnn state_dict with --spec), torch (weights, with --factory), torch-export, skops or onnx.",
            run="model_kind",
        ),
        Flag("--factory", Optional[str], "package.module:callable that builds your torch module (with --model-kind torch).", run="factory"),
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
    ),
    "one-run": (
        Flag("--threat-model", Optional[str], "white-box (gradient canaries, the default) or black-box (mislabeled input canaries).", config="threat_model"),
        Flag("--canaries", Optional[int], "m, the number of canaries, each included with probability --inclusion-prob.", config="num_canaries"),
        Flag("--inclusion-prob", Optional[float], "Probability that each canary is included (the guessing bounds need 0.5).", config="inclusion_prob"),
        Flag("--steps", Optional[int], "DP-SGD steps of the one training run.", config="num_steps"),
        Flag(
            "--train",
            Optional[str],
            "With --threat-model black-box: your training function instead of the built-in model and DP-SGD, package.module:fn with "
            "fn(x_train, y_train, *, seed) -> model, the contract of `privaudit audit blackbox --train`; trained once, on the dataset "
            "with the included canaries appended. The accountant's ε for the config's noise_multiplier, sampling_rate and num_steps is shown as "
            "evidence only, and stated as what ran only if fn reports its Opacus optimizer and accountant "
            "(privaudit.integrations.observed.report_opacus), else 'as given, not observed'; the verdict is against --claimed-epsilon.",
            config="train",
            parse=_import_path("--train"),
        ),
        *claim_flags("your training (privaudit's own DP-SGD: its accountant, when not given)"),
    ),
    "lm-one-run": (
        Flag(
            "--model",
            Optional[Path],
            "Your fine-tuned Hugging Face causal LM (a save_pretrained directory with its tokenizer), trained with the included canaries of --provenance.",
            run="model",
        ),
        Flag(
            "--provenance",
            Optional[Path],
            "The provenance JSON of prepare_lm_canaries: the canaries, their scored span, the inclusion coins, the tokenizer.",
            run="provenance",
        ),
        Flag(
            "--base-model",
            Optional[Path],
            "The model before fine-tuning (for new tokens: the resized model that was saved): scores are calibrated by it.",
            run="base_model",
        ),
        Flag(
            "--synthetic",
            Optional[Path],
            "Instead of --model: the synthetic text your fine-tuned model generated (UTF-8, one record a line); each canary's echo in it is scored.",
            run="synthetic",
        ),
        Flag(
            "--synthetic-signal",
            Optional[str],
            "With --synthetic: ngram (the canary under a word n-gram model of the text, the default) or jaccard (its best match).",
            config="synthetic_signal",
        ),
        *claim_flags("your DP fine-tuning", quantity="end to end, for one record"),
        Flag("--delta", Optional[float], "δ of the one-run bound (the claim's δ).", config="delta"),
        Flag(
            "--canary-copies",
            Optional[int],
            "How many times each included canary is in your fine-tuning data (recorded by `privaudit canaries lm`; needed otherwise): "
            "the bound on k copies is turned into a record's ε by group privacy.",
            config="canary_copies",
        ),
        Flag(
            "--bos",
            Optional[str],
            "auto (what the tokenizer adds, default), prepend or none: the special token before each text your model was trained on.",
            config="bos",
        ),
    ),
    "synthetic-text": (
        Flag("--synthetic", Optional[Path], "The synthetic text your fine-tuned model generated (UTF-8, one record a line).", run="synthetic"),
        Flag(
            "--provenance",
            Optional[Path],
            "The provenance JSON of prepare_lm_canaries: the canaries whose echoes are looked for, their scored span, the inclusion coins.",
            run="provenance",
        ),
        Flag(
            "--synthetic-signal",
            Optional[str],
            "ngram (the canary under a word n-gram model of the text, the default), jaccard (its best match) or model (with --synthetic-train).",
            config="synthetic_signal",
        ),
        Flag(
            "--synthetic-train",
            Optional[str],
            "With --synthetic-signal model: your function package.module:fn, fn(texts, *, seed) -> (model, tokenizer), that fine-tunes a "
            "Hugging Face causal LM on the synthetic records; the canaries are scored by its log-likelihood (Mitchell et al.).",
            config="synthetic_train",
            parse=_import_path("--synthetic-train"),
        ),
        Flag("--ngram-order", Optional[int], "n of the word n-grams (default 2).", config="ngram_order"),
        *claim_flags("your DP generation pipeline", quantity="end to end, for one record"),
        Flag(
            "--canary-copies",
            Optional[int],
            "How many times each included canary was in the fine-tuning data (recorded by `privaudit canaries lm`; needed otherwise): "
            "the bound on k copies is turned into a record's ε by group privacy.",
            config="canary_copies",
        ),
        Flag("--delta", Optional[float], "δ of the one-run bound (the claim's δ).", config="delta"),
    ),
    "mechanism": (
        Flag(
            "--mechanism",
            Optional[str],
            "The mechanism under test: package.module:fn with fn(dataset, size, rng) -> size outputs (scalars, vectors or tables) on one dataset, "
            "every random draw from rng (a numpy Generator), in one vectorised call. Imported from the current directory or the Python path.",
            config="mechanism",
            parse=_import_path("--mechanism"),
        ),
        Flag("--dataset", Optional[Path], "D: a .npy or .csv of records, one per row (default: the built-in example's).", config="dataset", parse=str),
        Flag(
            "--neighbour",
            Optional[Path],
            "D': a .npy or .csv differing from D in one record (default: searched on pilot samples).",
            config="neighbour",
            parse=str,
        ),
        Flag("--relation", Optional[str], "Neighbouring relation of the claim when D' is searched: add-remove or replace.", config="relation"),
        Flag(
            "--domain",
            Optional[str],
            "LOW,HIGH: the range of a record's fields that the search draws records from (default: the mechanism's `domain` attribute, "
            "else the dataset's range widened by its width on each side, so that a forgotten clip shows).",
            config="domain",
            parse=_domain,
        ),
        Flag("--search-steps", Optional[int], "Local-search moves from the best pair found (0: candidates only).", config="search_steps"),
        Flag("--epsilon", Optional[float], "Claimed epsilon (> 0); default: the mechanism's own `claim` attribute.", config="epsilon"),
        Flag("--delta", Optional[float], "Claimed delta, in [0, 1) (0: pure DP).", config="delta"),
        Flag("--claimed-epsilon", Optional[float], "The same as --epsilon, the spelling every other command uses.", config="epsilon"),
        Flag("--claimed-delta", Optional[float], "The same as --delta, the spelling every other command uses.", config="delta"),
        Flag("--rho", Optional[float], "A rho-zCDP claim instead of --epsilon, tested as (epsilon, delta)-DP at --delta.", config="rho"),
        Flag("--samples", Optional[int], "Held-out samples per dataset, bounded.", config="samples"),
        Flag("--pilot-samples", Optional[int], "Pilot samples per dataset, for the statistics and thresholds.", config="pilot_samples"),
        Flag(
            "--stages",
            Optional[int],
            "Sequential mode: draw the held-out samples in this many looks and stop at the first rejection (error spent equally on the looks).",
            config="stages",
        ),
    ),
    "mia": (
        Flag(
            "--train",
            Optional[str],
            "Your training function instead of the built-in overfitted MLP: package.module:fn with fn(x_train, y_train, *, seed) -> model, "
            "the contract of `privaudit audit blackbox --train`; it trains the target and every reference model on their halves of the pool.",
            config="train",
            parse=_import_path("--train"),
        ),
        Flag(
            "--data",
            Optional[Path],
            "Your pool of records instead of the embedded dataset: .npz with arrays x and y, or .csv/.parquet with the label in --label-col "
            + _LABEL_RULE
            + " A record's id is its row, or its value in --id-col. With --target-kind huggingface: a .txt of texts, one record a line.",
            config="data",
            parse=_pool_file,
        ),
        _LABEL_COL,
        Flag(
            "--train-input",
            Optional[str],
            "What your --train function gets as x_train: array (default: a float32 NumPy array, as before this option) or dataframe "
            "(a pandas DataFrame with the file's column names, for a .csv or .parquet --data with a header row: a ColumnTransformer can select by name).",
            config="train_input",
        ),
        Flag("--references", Optional[int], "Number of reference models (even, >= 4; each record is IN exactly half of them).", config="num_references"),
        Flag(
            "--mode",
            Optional[str],
            "attack (default): attack statistics, no bound; canary: an ε lower bound from mislabeled canaries each included in one training run "
            "by a fair coin; leave-one-out: an ε lower bound from trial models that include each record by a fair coin.",
            config="mode",
        ),
        Flag("--canaries", Optional[int], "Canaries of --mode canary (>= 20, at most half the records outside the population samples).", config="num_canaries"),
        Flag(
            "--trial-models",
            Optional[int],
            "Trial models of --mode leave-one-out (>= 1), besides the --references calibration models.",
            config="num_trial_models",
        ),
        Flag("--delta", Optional[float], "δ of the ε lower bound, in (0, 1) (default 1e-5).", config="delta"),
        *claim_flags("your training (with --mode canary or leave-one-out)"),
        Flag(
            "--model",
            Optional[Path],
            "Your trained target model (of --target-kind), attacked instead of one the audit trains (with --members).",
            config="model",
            parse=str,
        ),
        Flag(
            "--target-kind",
            Optional[str],
            "What --model is: skops (default), torch (with --factory), torch-export, onnx, or huggingface (a causal LM's save_pretrained directory, with a .txt --data and --reference-models).",
            config="model_kind",
        ),
        Flag("--factory", Optional[str], "package.module:callable that builds your torch module (with --target-kind torch).", config="factory"),
        Flag(
            "--model-output",
            Optional[str],
            "What your model returns: auto (checked on its outputs, the default), logits, probabilities or log-probabilities.",
            config="model_output",
        ),
        Flag(
            "--trusted",
            Optional[list[str]],
            "A type your skops files hold beyond scikit-learn's and numpy's, to load them (repeat for several): only for files you trust.",
            config="trusted",
            parse=tuple,
        ),
        Flag(
            "--members",
            Optional[Path],
            "The records of --data your model was trained on, one per line (.txt/.csv/.npy): row indices (from 0), or ids of --id-col when given.",
            config="members",
            parse=str,
        ),
        Flag(
            "--members-col",
            Optional[str],
            "Instead of --members: a column of --data holding 1 for each record your model was trained on, 0 otherwise (not a feature).",
            config="members_col",
        ),
        Flag(
            "--id-col",
            Optional[str],
            "A column of --data holding each record's unique id (a number; not a feature): the report and --members name records by it. "
            "Default: a record's id is its row.",
            config="id_col",
        ),
        Flag(
            "--augment",
            Optional[str],
            "Query every record also as augmented images, as LiRA and RMIA do: flip (the mirror), shift (by --shift-pixels in each direction), "
            "or flip,shift (18 views). Needs the images' shape: --image-shape, unless the embedded dataset declares it.",
            config="augment",
            parse=_names,
        ),
        Flag(
            "--image-shape",
            Optional[str],
            "C,H,W of the images that --data's features flatten (row-major, channels first), e.g. 3,32,32; never guessed from the feature count.",
            config="image_shape",
            parse=_image_shape,
        ),
        Flag("--shift-pixels", Optional[int], "Pixels of each shift of --augment shift (default 1); the border is reflected.", config="shift_pixels"),
        Flag(
            "--reference-models",
            Optional[Path],
            "A directory of reference models you trained (files of --target-kind, in name order): read instead of trained, with --reference-membership.",
            config="reference_models",
            parse=str,
        ),
        Flag(
            "--reference-membership",
            Optional[Path],
            "A .npy (references, records) of booleans: True where a reference model was trained on that row of --data.",
            config="reference_membership",
            parse=str,
        ),
        Flag("--backend", str, "local (process pool) or ray.", run="backend"),
        Flag("--address", Optional[str], "Ray cluster address, e.g. auto or ray://host:10001 (with --backend ray).", run="address"),
        Flag("--workers", Optional[int], "Worker processes (local) or CPUs of a new local Ray instance; default: all cores.", run="max_workers"),
    ),
    "synthetic-data": (
        Flag(
            "--train",
            Optional[Path],
            "Your real training table (.csv or .parquet): categorical string and numeric columns, missing values allowed.",
            config="train",
            parse=str,
        ),
        Flag(
            "--holdout",
            Optional[Path],
            "Real records of the same population that the generator never saw (.csv or .parquet, the columns of --train).",
            config="holdout",
            parse=str,
        ),
        Flag(
            "--synthetic",
            Optional[Path],
            "The released synthetic table (no-box; the columns of --train, an --id-col column is ignored).",
            config="synthetic",
            parse=str,
        ),
        Flag(
            "--generator",
            Optional[str],
            "Instead of --synthetic: your generator package.module:fn, fn(train_df, *, seed, n) -> synthetic_df; it makes the release, "
            "the shadow releases and the canary run.",
            config="generator",
            parse=_import_path("--generator"),
        ),
        Flag(
            "--id-col",
            Optional[str],
            "A column of --train and --holdout holding each record's id (any text; not a feature, never given to the generator).",
            config="id_col",
        ),
        Flag("--num-synthetic", Optional[int], "Rows your generator makes (>= 10; default: as many as --train).", config="num_synthetic"),
        Flag(
            "--reference-fraction",
            Optional[float],
            "Share of --holdout that is the attacker's population sample, in (0, 1) (default 0.5); the rest are the evaluation non-members.",
            config="reference_fraction",
        ),
        Flag("--shadows", Optional[int], "Shadow releases per shadow target (0, or even >= 4; default 8), with --generator.", config="num_shadows"),
        Flag("--shadow-targets", Optional[int], "Records the shadow attack targets, the most outlying first (>= 2; default 6).", config="num_shadow_targets"),
        Flag(
            "--canaries",
            Optional[int],
            "Canaries of the ε lower bound (0: none, else >= 10), each inserted by a fair coin, with --generator.",
            config="num_canaries",
        ),
        Flag(
            "--claimed-epsilon",
            Optional[float],
            "The ε your generator claims per release, compared with the bound (flagged if the bound exceeds it).",
            config="claimed_epsilon",
        ),
        Flag(
            "--canary-records",
            Optional[Path],
            "Instead of --canaries: your own canaries, a table of --train's columns (.csv or .parquet, >= 10 rows), each included by a fair coin.",
            config="canary_records",
            parse=str,
        ),
        Flag(
            "--claimed-delta", Optional[float], "The δ of your generator's claim (default: --delta); the bound's --delta must be >= it.", config="claimed_delta"
        ),
        Flag("--delta", Optional[float], "δ of the bound, in (0, 1) (default 1e-5).", config="delta"),
        Flag("--backend", str, "local (process pool) or ray: where the shadow generators run.", run="backend"),
        Flag("--address", Optional[str], "Ray cluster address, e.g. auto or ray://host:10001 (with --backend ray).", run="address"),
        Flag("--workers", Optional[int], "Worker processes (local) or CPUs of a new local Ray instance; default: all cores.", run="max_workers"),
    ),
}

# defaults of the flags that are not optional (the rest default to None: "not given")
_FLAG_DEFAULTS = {
    "--backend": "local",
    "--generator": "mst",
    "--helper-epochs": 10,
    "--model-kind": "privaudit",
    "--model-output": "auto",
    "--audit-size": 1000,
    "--confidence": 0.95,
    "--inclusion-randomised": False,
    "--secure-canaries": False,
}


def merged_config(audit: Any, path: Path | None, overrides: dict[str, Any]) -> Any:
    """The config that runs: the ``--config`` file's values (else the embedded default's), each flag's key replaced, then checked once.

    One precedence rule: a flag overrides the same key of the config, and a
    config value alone is enough. The config is checked only after the
    merge, so a key that needs another (``label_col`` needs ``dataset``) may
    come from either side; a flag's dotted key (``training.epochs``)
    replaces one key of a nested config.
    """
    from ..audits.config import config_to_dict, read_config_values

    for key, value in overrides.items():  # a flag's NaN or infinity, named before the config (which holds only plain JSON) sees it
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"`{key}` must be a finite number, got {value}")
    values = read_config_values(path) if path is not None else config_to_dict(audit.default_config())
    if isinstance(values, dict):  # anything else is refused, with its type, by config_from_dict
        for key, value in overrides.items():
            _set_key(values, key, list(value) if isinstance(value, tuple) else value)
    return audit.config_from_dict(values, "--config")


def _set_key(values: dict[str, Any], key: str, value: Any) -> None:
    """Set the dotted ``key`` of plain config values, creating the nested objects a config file left out."""
    *parents, leaf = key.split(".")
    for parent in parents:
        values = values.setdefault(parent, {})
        if not isinstance(values, dict):
            return  # the file's non-object value is refused by config_from_dict, which names its key
    values[leaf] = value


# the options that name a callable by its import path, per family
_IMPORT_PATH_OPTIONS = {
    "dpsgd": ("model",),
    "blackbox": ("train",),
    "panoramia": ("factory",),
    "one-run": ("train",),
    "mechanism": ("mechanism",),
    "mia": ("train", "factory"),
    "synthetic-text": ("synthetic_train",),
    "synthetic-data": ("generator",),
}


def _current_directory_importable() -> None:
    """Let an import path name a module in the current directory, as uvicorn's ``app:app`` does.

    ``python -m privaudit`` has the current directory on ``sys.path``, but the console script does not.
    Local worker processes inherit ``sys.path``.
    """
    import os
    import sys

    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


def flag_text(message: str, flags: tuple[Flag, ...], keys_in_file: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    """``message`` with each config key quoted as `key` replaced by the flag that sets it, unless the user wrote that key in --config.

    >>> flag_text("`num_canaries` must be in [20, 170], got 300", (Flag("--canaries", int, "", config="num_canaries"),))
    '`--canaries` must be in [20, 170], got 300'
    """
    for flag in flags:
        if flag.config and flag.config not in keys_in_file:
            flagged = f"`{flag.option}`"
            message = message.replace(f"`{flag.config}`", flagged)
            # "`--label-col` (`label_col`)" and "--label-col (config `label_col`)" already name the flag once
            for twice in (f"{flagged} ({flagged})", f"{flag.option} (config {flagged})", f"{flag.option} ({flagged})"):
                message = message.replace(twice, flagged if twice.startswith("`") else flag.option)
            if flagged in message:
                message = message.replace(f" ({flag.option})", "")
    return message


@contextlib.contextmanager
def flags_in_messages(flags: tuple[Flag, ...], config_path: Path | None):
    """Rewrite a ValueError's config keys into the flags the user typed (one rule for every message)."""
    try:
        yield
    except ValueError as error:
        keys: set[str] = set()
        if config_path is not None:
            with contextlib.suppress(Exception):  # the file was read once already; this only decides which words to keep
                from ..audits.config import read_config_values

                values = read_config_values(config_path)
                keys = set(values) if isinstance(values, dict) else set()
        text = flag_text(str(error), flags, keys)
        if text == str(error):
            raise
        raise ValueError(text) from error


def _run_command(name: str, audit: Any, flags: tuple[Flag, ...], overrides: dict[str, Any], options: dict[str, Any]) -> None:
    """Merge the config, run the audit into ``--output``, record it and print its table."""
    from ..report.runs import write_run
    from ..report.verdict import console_lines
    from .tables import table_for

    config = audit.with_seed(merged_config(audit, options["config"], overrides), options["seed"])
    if options["print_config"]:
        from ..audits.config import config_text

        emit(config_text(config).rstrip("\n"))
        return
    output: Path = options["output"]
    run_options = {flag.run: options[flag.parameter] for flag in flags if flag.run and options[flag.parameter] is not None}
    check_output_dir(output)
    given = [("--config", options["config"])] + [(flag.option, options[flag.parameter]) for flag in flags if isinstance(options[flag.parameter], Path)]
    check_output_apart(output, given)  # never written over the user's data, model or config
    if any(options.get(key) for key in _IMPORT_PATH_OPTIONS.get(name, ())):
        _current_directory_importable()
    check_memory(*audit.memory_estimate(config))  # refused up front, with the estimate
    record = history_recorder(options["history"], options["no_history"], options["model_id"], options["release"])
    with progress_bars() as progress:
        if audit.checkpointed:  # finished pieces are kept under the output and resumed on a rerun
            run_options["checkpoints"] = output / "runs"
        run = run_capturing(audit, config, progress=progress, **run_options)  # libraries' warnings go to the record, not between the bars
        progress("writing results.json, figures and report.html")
        data = write_run(output, run, report=True, title=f"privaudit audit {name}")
    record(data)
    report_captured(run.result.captured_warnings, verbose=options["verbose"])
    emit(json.dumps(data, indent=2) if options["as_json"] else table_for(run, output))
    if not options["as_json"]:
        for line in console_lines(data):
            emit(line)
    status = getattr(audit, "exit_status", None)  # a family whose verdict is the exit status, as a test runner's
    if status is not None and status(run.result):
        raise typer.Exit(status(run.result))


def make_audit_command(name: str) -> Callable[..., None]:
    """The ``privaudit audit NAME`` command function, with the common options and the family's flags."""
    from ..audits.registry import AUDITS

    flags = FLAGS.get(name, ())

    def command(**options: Any) -> None:
        audit = get_audit(name)
        given: dict[str, Flag] = {}
        for flag in flags:  # two spellings of one key (mechanism's --epsilon and --claimed-epsilon) must agree
            if flag.config and options[flag.parameter] is not None and options[flag.parameter] is not False:
                other = given.setdefault(flag.config, flag)
                if other is not flag and options[other.parameter] != options[flag.parameter]:
                    raise ValueError(
                        f"`{other.option}` and `{flag.option}` are one setting: give one of them, got {options[other.parameter]!r} and {options[flag.parameter]!r}"
                    )
        overrides = {
            flag.config: (flag.parse or (lambda v: v))(options[flag.parameter])
            for flag in flags
            if flag.config and options[flag.parameter] is not None and options[flag.parameter] is not False
        }
        with interruptible(), flags_in_messages(flags, options["config"]):
            _run_command(name, audit, flags, overrides, options)

    common = [
        (
            "output",
            Annotated[Path, typer.Option("--output", help="Directory for results.json, report.html, figures and the audit's files.")],
            Path(f"privaudit-{name}"),
        ),
        ("config", Annotated[Optional[Path], typer.Option("--config", help="JSON or YAML config (default: the embedded default; see --print-config).")], None),
        (
            "print_config",
            Annotated[bool, typer.Option("--print-config", help="Print the config that would run (the default, or --config's) as JSON and exit.")],
            False,
        ),
        ("seed", Annotated[Optional[int], typer.Option("--seed", help="Override the config's seed.")], None),
        ("history", HistoryOption, None),
        ("no_history", NoHistoryOption, False),
        ("model_id", ModelIdOption, None),
        ("release", ReleaseOption, None),
        ("as_json", JsonOption, False),
        ("verbose", VerboseOption, False),
    ]
    # an Optional flag defaults to None ("not given"), whatever another family's flag of the same name defaults to
    family = [
        (flag.parameter, Annotated[flag.type, typer.Option(flag.option, help=flag.help)], None if _optional(flag.type) else _FLAG_DEFAULTS.get(flag.option))
        for flag in flags
    ]
    parameters = [
        inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default) for key, annotation, default in common + family
    ]
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    command.__name__ = f"audit_{name.replace('-', '_')}"
    module, _ = AUDITS[name].split(":")
    command.__doc__ = _description(module)
    return command


def _optional(annotation: Any) -> bool:
    """Whether ``annotation`` is ``Optional[...]``."""
    return type(None) in getattr(annotation, "__args__", ())


def _description(module: str) -> str:
    """The first line of the family module's docstring, without importing optional dependencies."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    import ast

    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    return (ast.get_docstring(tree) or "").split("\n")[0]


for _name in names():
    audit_app.command(_name)(make_audit_command(_name))
