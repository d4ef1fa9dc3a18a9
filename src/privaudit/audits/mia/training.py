"""The pool, the membership draws and the training jobs of the ``mia`` audit (one model per job).

Every draw comes from the audit's seed, so each job recomputes its own
training set and a killed run resumes with identical models:

* the pool is the embedded dataset (train and test splits together) or the
  user's dataset file, rows in file order (a record's id is its row index,
  or its value in the file's ``--id-col``);
* ``population`` records (never in the target) are the RMIA samples z;
* the target's members are the other records, each kept by a fair coin;
* reference model j trains on the records whose membership row says IN:
  every record is IN exactly half of the references (both papers' design).

A job returns the logit-scaled confidence φ of every pool record
(:func:`privaudit.stats.mia.logit_confidence`) on the model it trained.
"""

from __future__ import annotations

import functools
import sys
import warnings
from typing import Any

import numpy as np

from ..._core.conventions import Convention, checked, explicit
from ..._core.labelled import read_labelled
from ..._core.readers import MAX_TEXT_BYTES, read_npy, read_numbers
from ..._core.usercode import UserCodeError, call_user, exception_line
from ...data.tabular import load_dataset
from ...models.loading import load_model
from ...runner.digests import input_digests
from ...stats.mia import check_membership, clip_at_resolution, logit_confidence, logit_confidence_from_loss
from ..blackbox.audit import check_train_function
from .augment import augment_spec, signals_on_views
from .inert import inert_fields
from .summaries import id_text
from .train_input import TRAIN_INPUTS, as_train_input, describe_train_input, train_input_names

__all__ = [
    "SUFFIXES",
    "TRAIN_INPUTS",
    "as_train_input",
    "fit_user_model",
    "train_input_names",
    "Pool",
    "draws",
    "read_reference_models",
    "load_pool",
    "pool_of",
    "clip_votes",
    "model_signals",
    "preflight",
    "read_members",
    "record_ids",
    "target_members",
    "train_and_score",
    "train_mlp",
    "user_target_draws",
    "vote_resolution",
]

#: How far rows may be from summing to 1 and still be read as probabilities.
_SUM_TOLERANCE = 1e-4


class Pool:
    """The audited records: features ``x`` (n, d) float32, labels ``y`` (n,) int64, and the file's other named ``columns``."""

    def __init__(
        self,
        x: np.ndarray,
        y: np.ndarray,
        source: str,
        label: Convention | None = None,
        columns: dict[str, np.ndarray] | None = None,
        image_shape: tuple[int, int, int] | None = None,
        feature_names: tuple[str, ...] | None = None,
    ) -> None:
        self.x, self.y, self.source, self.label, self.columns = x, y, source, label, columns or {}
        self.feature_names = feature_names  # the file's names of the columns of x (a .csv or .parquet with a header row)
        self.image_shape = image_shape  # declared by an embedded dataset; the user's pool states it with --image-shape


def job_inputs(config: Any) -> dict[str, Any]:
    """The content hashes of what each training job reads (``--data``, ``--train``'s module source): in its resume key, so changed contents retrain."""
    digests = input_digests(files={"data": config.data}, functions={"train": config.train})
    return {"inputs": digests} if digests else {}  # none (embedded data, built-in MLP): runs stored before resume unchanged


def applied_job_fields(config: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """``keys`` of ``config`` for a training job's record, less those the run does not use (:func:`~.inert.inert_fields`).

    A stored run record then says what trained it: no embedded dataset beside
    the user's ``--data``, no built-in MLP's epochs beside the user's ``--train``.
    """
    inert = inert_fields(config)
    return {key: getattr(config, key) for key in keys if key not in inert}


def pool_of(config: Any) -> Pool:
    """The pool of a :class:`~privaudit.audits.mia.config.MIAConfig` (or of a job's dict of its fields)."""
    get = config.get if isinstance(config, dict) else functools.partial(getattr, config)
    columns = tuple(name for name in (get("id_col", None), get("members_col", None)) if name is not None)
    return load_pool(get("dataset"), get("data"), get("label_col"), columns, get("id_col", None))


@functools.lru_cache(maxsize=4)
def load_pool(dataset: str, data: str | None, label_col: str | None, columns: tuple[str, ...] = (), id_col: str | None = None) -> Pool:
    """The embedded ``dataset`` (both splits), or the user's ``data`` file read by the toolkit's tabular reader.

    ``columns`` (an id column, a membership column) are neither features nor
    the label; they need ``data``.
    """
    if data is not None:
        for option, column in (("--id-col", id_col), ("--members-col", columns[-1] if len(columns) > (1 if id_col else 0) else None)):
            if column is not None and column == label_col:
                raise ValueError(f"`--label-col` and `{option}` both name the column {column!r} of `--data`: a column is the label or {option[2:]}, not both")
        read = read_labelled(data, "--data", label_col=label_col, other_cols=columns, text_cols=(id_col,) if id_col else ())
        classes = np.unique(read.y)
        if classes.size < 2:  # no model learns anything to attack: a wrong --label-col (an id or a constant column) most likely
            column = (
                f"`--label-col` {label_col!r}"
                if label_col is not None
                else f"the label column ({read.label.value if read.label else 'as read'}; choose it with `--label-col`)"
            )
            raise ValueError(f"`--data` has a single class ({classes[:1].tolist()}) in {column}: membership inference needs at least 2 classes")
        return Pool(np.ascontiguousarray(read.x, dtype=np.float32), read.y, data, read.label, read.columns, feature_names=read.feature_names)
    if columns:
        raise ValueError(f"`--id-col` and `--members-col` name columns of the user's pool: they need `--data`, got {', '.join(map(repr, columns))}")

    split = load_dataset(dataset, seed=0)
    return Pool(np.concatenate([split.x_train, split.x_test]), np.concatenate([split.y_train, split.y_test]), dataset, image_shape=split.image_shape)


@functools.lru_cache(maxsize=4)
def draws(seed: int, num_records: int, num_references: int, num_population: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(population mask (n,), target membership (n,), reference membership (k, n)), all from ``seed``.

    >>> population, target, references = draws(0, 10, 4, 2)
    >>> int(population.sum()), bool((target & population).any()), references.sum(axis=0).tolist()
    (2, False, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2])
    """
    rng = np.random.default_rng(np.random.SeedSequence((int(seed), 0x4D4941)))
    population = np.zeros(num_records, dtype=bool)
    population[rng.choice(num_records, size=num_population, replace=False)] = True
    target = (rng.random(num_records) < 0.5) & ~population
    references = np.argsort(rng.random((num_records, num_references)), axis=1).T < num_references // 2
    return population, target, references


def user_target_draws(seed: int, members: np.ndarray, num_population: int) -> tuple[np.ndarray, np.ndarray]:
    """(population mask, target membership) when the target is the user's: z drawn among its non-members.

    >>> population, target = user_target_draws(0, np.arange(10) < 4, 3)
    >>> int(population.sum()), bool((population & target).any())
    (3, False)
    """
    rng = np.random.default_rng(np.random.SeedSequence((int(seed), 0x5A)))
    population = np.zeros(members.size, dtype=bool)
    population[rng.choice(np.flatnonzero(~members), size=num_population, replace=False)] = True
    return population, members.copy()


def read_members(path: str, num_records: int) -> np.ndarray:
    """The target's members as a mask over the pool, from a file of row indices; ValueError naming ``--members``."""
    rows = read_numbers(path, "--members")
    if not np.all(rows == np.round(rows)) or rows.min() < 0 or rows.max() >= num_records:
        raise ValueError(
            f"`--members` must hold row indices of the pool's records, integers in [0, {num_records - 1}], "
            f"got values in [{rows.min():g}, {rows.max():g}]: is --data the pool the target was trained from?"
        )
    mask = np.zeros(num_records, dtype=bool)
    mask[rows.astype(np.int64)] = True
    if int(mask.sum()) != rows.size:
        raise ValueError(f"`--members` must list each row once, got {rows.size - int(mask.sum())} repeated row(s)")
    return mask


def _id_key(text: str) -> str:
    """The key two ids are matched by: "17", "17.0" and " 17" are one id; "P-00017" is itself."""
    try:
        return str(int(text.strip()))
    except ValueError:
        pass
    try:
        return id_text(float(text))
    except ValueError:
        return text.strip()


def record_ids(pool: Pool, id_col: str | None) -> np.ndarray | None:
    """The user's id of every record (its value in the column ``id_col``, as text), or None when the row is the id; ids must be unique.

    >>> pool = Pool(np.zeros((3, 1), np.float32), np.zeros(3, np.int64), "p.csv", columns={"id": np.array(["P-7", "P-3", "P-7"], dtype=object)})
    >>> record_ids(pool, "id")
    Traceback (most recent call last):
    ...
    ValueError: `--id-col` 'id' must name a column of unique ids, got 1 repeated id(s), e.g. 'P-7'
    """
    if id_col is None:
        return None
    ids = np.array([id_text(value) for value in pool.columns[id_col]], dtype=object)
    keys = [_id_key(text) for text in ids]
    unique, counts = np.unique(np.array(keys, dtype=str), return_counts=True)
    if (counts > 1).any():
        raise ValueError(
            f"`--id-col` {id_col!r} must name a column of unique ids, got {int((counts > 1).sum())} repeated id(s), e.g. {str(unique[counts > 1][0])!r}"
        )
    return ids


def _listed_ids(path: str) -> list[str]:
    """The ids a ``--members`` file lists: one a line (.txt, .csv with an optional header), or a .npy of numbers."""
    from pathlib import Path

    file = Path(path)
    if file.suffix.lower() == ".npy" or not file.is_file():
        return [id_text(value) for value in read_numbers(path, "--members")]
    if file.stat().st_size > MAX_TEXT_BYTES:
        raise ValueError(f"`--members`: {path!r} is larger than {MAX_TEXT_BYTES} bytes")
    try:
        lines = [line.strip().strip('"') for line in file.read_text(encoding="utf-8-sig").splitlines()]
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"`--members`: cannot read {path!r}: {error}") from None
    return [line for line in lines if line and not line.startswith("#")]


def target_members(pool: Pool, *, members: str | None, members_col: str | None, id_col: str | None) -> tuple[np.ndarray, Convention]:
    """The target's members as a mask over the pool, and how they were given (an explicit convention).

    From ``members_col`` (a column of the pool holding 1 for a member, 0
    otherwise), or the file ``members``: ids of ``id_col`` when the pool names
    one, else row indices. An id or row the pool does not have is refused,
    naming the option.
    """
    if members_col is not None:
        flags = pool.columns[members_col]
        if not np.isin(flags, (0.0, 1.0)).all():
            raise ValueError(f"`--members-col` {members_col!r} must hold 1 (member of the target) or 0 for each record, got {np.unique(flags)[:5].tolist()}")
        return flags == 1.0, explicit("target membership", f"column {members_col!r} of --data, 1 = member", "--members-col")
    assert members is not None  # the config requires one of the two
    ids = record_ids(pool, id_col)
    if ids is None:
        return read_members(members, len(pool.y)), explicit("target membership", "rows listed in --members", "--members")
    keys = [_id_key(text) for text in ids]
    listed = [_id_key(text) for text in _listed_ids(members)]
    if listed and listed[0] not in keys and len(listed) > 1 and all(key in keys for key in listed[1:]):
        listed = listed[1:]  # a header line (the column's name)
    if not listed:
        raise ValueError("`--members` must hold at least 1 value(s), got 0")
    missing = [key for key in listed if key not in set(keys)]
    if missing:
        raise ValueError(
            f"`--members` must list ids of the pool's column `--id-col` {id_col!r}, got {len(missing)} id(s) it does not have, e.g. {missing[0]!r}: "
            "is --data the pool the target was trained from?"
        )
    if len(set(listed)) != len(listed):
        raise ValueError(f"`--members` must list each id once, got {len(listed) - len(set(listed))} repeated id(s)")
    return np.isin(np.array(keys, dtype=str), np.array(listed, dtype=str)), explicit(
        "target membership", f"ids of column {id_col!r} listed in --members", "--members with --id-col"
    )


#: The file suffix of each model kind, for a directory of reference models.
SUFFIXES = {"skops": ".skops", "torch": ".safetensors", "torch-export": ".pt2", "onnx": ".onnx"}


def read_reference_models(
    directory: str,
    membership_path: str,
    pool: Pool,
    *,
    kind: str,
    factory: str | None,
    output: str,
    trusted: tuple[str, ...] = (),
    views: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(φ (k, n), membership (k, n)) of the user's reference models: the ``kind`` files of ``directory`` in name order.

    The membership matrix (a ``.npy`` of booleans or 0/1, one row per model
    in that order, one column per pool record) is checked before any model
    is loaded; ValueErrors name ``--reference-models`` or ``--reference-membership``.
    With ``views`` (an :class:`~privaudit.audits.mia.augment.AugmentSpec`),
    φ has shape (k, A, n), one row per view.
    """
    from pathlib import Path

    folder = Path(directory)
    files = sorted(folder.glob(f"*{SUFFIXES[kind]}")) if folder.is_dir() else []
    if not files:
        raise ValueError(f"`--reference-models` must be a directory of {kind} models (*{SUFFIXES[kind]}), got {directory!r} with none")
    raw = read_npy(membership_path, "--reference-membership")  # the header bounded by the file's size before anything is allocated
    membership = check_membership(raw, (len(files), len(pool.y)), "--reference-membership")

    signals = []
    for file in files:
        model = load_model(file, kind=kind, factory=factory, output=output, trusted=trusted).decide_output(pool.x)
        signals.append(signals_on_views(functools.partial(_loss_signal, model, pool.y), pool.x, views))
    return np.array(signals), membership


def _loss_signal(model: Any, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """φ of a loaded model on records ``x`` with labels ``y``, from its cross-entropy loss, clipped where it votes (:func:`clip_votes`)."""
    return clip_votes(logit_confidence_from_loss(model.loss(x, y)), model.model)[0]


def train_mlp(x_train: np.ndarray, y_train: np.ndarray, *, seed: int, epochs: int = 200) -> Any:
    """The built-in training: scikit-learn's MLP (one hidden layer of 64, no weight decay), ``epochs`` epochs of Adam to overfit.

    >>> model = train_mlp(np.eye(4, dtype=np.float32), np.arange(4) % 2, seed=0, epochs=5)
    >>> model.predict_proba(np.eye(4)).shape
    (4, 2)
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    model = MLPClassifier(hidden_layer_sizes=(64,), alpha=0.0, max_iter=epochs, tol=1e-6, random_state=seed)
    # one BLAS thread: the runner already runs one model per core
    with warnings.catch_warnings(), threadpool_limits(1):  # running to max_iter is the point: an overfitted model
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(x_train, y_train)


def vote_resolution(model: Any) -> tuple[float, str] | None:
    """(r, how it was read) for a scikit-learn model whose probabilities are averages of hard votes; None for any other model.

    A random forest, extra-trees or bagging ensemble of T members averages
    their probabilities (one-hot for fully grown trees): its steps are 1/T, so
    r = 1/(2T). A k-nearest-neighbours classifier with uniform weights votes in
    steps of 1/k: r = 1/(2k). Read from the fitted model, never guessed; other
    models (torch modules give logits) are left as they are.

    >>> from sklearn.ensemble import RandomForestClassifier
    >>> vote_resolution(RandomForestClassifier(n_estimators=4).fit([[0.0], [1.0]], [0, 1]))
    (0.125, 'RandomForestClassifier of 4 estimators: r = 1/(2 x 4)')
    """
    if "sklearn" not in sys.modules:  # a scikit-learn model means scikit-learn is imported
        return None
    from sklearn.ensemble import BaggingClassifier, ExtraTreesClassifier, RandomForestClassifier
    from sklearn.neighbors import KNeighborsClassifier

    if isinstance(model, (RandomForestClassifier, ExtraTreesClassifier, BaggingClassifier)) and getattr(model, "estimators_", None):
        count = len(model.estimators_)
        return 1.0 / (2 * count), f"{type(model).__name__} of {count} estimators: r = 1/(2 x {count})"
    if isinstance(model, KNeighborsClassifier) and model.weights == "uniform" and hasattr(model, "n_samples_fit_"):
        count = int(min(model.n_neighbors, model.n_samples_fit_))
        return 1.0 / (2 * count), f"{type(model).__name__} of {count} uniform neighbours: r = 1/(2 x {count})"
    return None


def clip_votes(signals: np.ndarray, model: Any) -> tuple[np.ndarray, str]:
    """φ clipped at the model's own resolution where it votes (:func:`vote_resolution`), and the evidence to record ("" if unclipped)."""
    resolution = vote_resolution(model)
    if resolution is None:
        return signals, ""
    return clip_at_resolution(signals, resolution[0]), f"; hard probabilities clipped to [r, 1 - r], {resolution[1]}"


def model_signals(model: Any, x: np.ndarray, y: np.ndarray, who: str, names: tuple[str, ...] | None = None) -> tuple[np.ndarray, Convention]:
    """φ of every record on ``model``, and how its output kind was decided (checked on these outputs).

    A ``torch.nn.Module`` must give logits: rows that are all probability
    vectors are refused as ambiguous. ``predict_proba`` must give rows >= 0
    summing to 1. ``names``: the feature names a model trained on a
    DataFrame is queried with (see :func:`train_input_names`). The model's
    own failures are one line naming ``who``.
    """
    try:
        return _model_signals(model, x, y, who, names)
    except (KeyboardInterrupt, ValueError):
        raise
    except BaseException as error:  # noqa: BLE001 - the user's model: any failure (or exit) is named, never a traceback
        raise UserCodeError(f"{who} raised {exception_line(error)} when queried on {len(y)} records") from error


def _model_signals(model: Any, x: np.ndarray, y: np.ndarray, who: str, names: tuple[str, ...] | None) -> tuple[np.ndarray, Convention]:
    torch = sys.modules.get("torch")  # a torch model means torch is imported; never import it for a scikit-learn one
    if torch is not None and isinstance(model, torch.nn.Module):
        model.eval()
        with torch.no_grad():
            out = model(torch.from_numpy(x))
        if not isinstance(out, torch.Tensor):
            raise ValueError(f"{who} must return a tensor of logits, got {type(out).__name__}")
        values = out.detach().double().cpu().numpy()
        kind = "logits"
    else:
        predict = getattr(model, "predict_proba", None)
        if predict is None and callable(model):
            predict = model
        if predict is None:
            raise ValueError(f"{who} must be a torch.nn.Module, an object with predict_proba or a predict_proba function, got {type(model).__name__}")
        values = np.asarray(predict(as_train_input(x, names)), dtype=np.float64)
        kind = "probabilities"
    if values.ndim != 2 or values.shape[0] != len(y) or values.shape[1] <= int(y.max()):
        raise ValueError(f"{who} must give {kind} of shape ({len(y)}, classes) with classes > {int(y.max())}, got {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError(f"{who} gave non-finite {kind} (training diverged?)")
    deviation = float(np.abs(values.sum(axis=1) - 1.0).max())
    is_simplex = bool((values >= 0).all()) and deviation <= _SUM_TOLERANCE
    if kind == "logits":
        if is_simplex:
            raise ValueError(f"{who} is a torch module whose outputs are all probability vectors; it must return logits (drop the softmax)")
        evidence = f"torch module; rows are not probability vectors (max |row sum - 1| = {deviation:.3g})"
    else:
        if not is_simplex:
            raise ValueError(f"{who}: predict_proba must give rows >= 0 summing to 1, got max |row sum - 1| = {deviation:.3g}")
        evidence = f"predict_proba; rows >= 0 summing to 1 (max |row sum - 1| = {deviation:.2g})"
    signals, clipped = clip_votes(logit_confidence(values, y, kind=kind), model)
    return signals, checked("output kind", kind, evidence + clipped)


def fit_user_model(path: str, train_input: str, pool: Pool, rows: np.ndarray, y: np.ndarray, seed: int, context: str) -> Any:
    """The model that the user's ``--train`` at ``path`` returns on the pool's ``rows``; its failures are one line (:func:`call_user`)."""
    names = train_input_names(pool, train_input)
    x = pool.x[rows]
    return call_user("--train", path, _function(path), as_train_input(x, names), y, seed=seed, context=f"{context}; {describe_train_input(x, names)}")


def preflight(path: str, pool: Pool, train_input: str = "array") -> Convention:
    """Import ``path``, train it once on a small probe of the pool (up to 4 records per class) and check its model's outputs.

    Run before any model of the audit trains, so a function that does not
    import, does not take ``(x_train, y_train, *, seed)``, raises, or returns
    no usable model is refused at once (ValueError naming ``--train``).
    """
    check_train_function(path)
    probe = np.concatenate([np.flatnonzero(pool.y == label)[:4] for label in np.unique(pool.y)])
    who = f"`--train` {path!r} (checked on {probe.size} records before the audit)"
    model = fit_user_model(path, train_input, pool, probe, pool.y[probe], 0, f" on a probe of {probe.size} records")
    if model is None:
        raise ValueError(f"{who} returned None: it must return the trained model")
    return model_signals(model, pool.x[probe], pool.y[probe], who, train_input_names(pool, train_input))[1]


@functools.lru_cache(maxsize=4)
def _function(path: str) -> Any:
    return check_train_function(path)


def train_and_score(config: dict[str, Any]) -> dict[str, Any]:
    """One job: train model ``index`` (a reference, or the target when ``index`` = ``num_references``) and score the pool.

    Returns ``{"index", "seed", "signals", "output_kind", "evidence"}``, the signals a float64 array
    (the run store keeps it as a ``.npy`` file beside the run's JSON).
    """
    pool = pool_of(config)
    k, index = int(config["num_references"]), int(config["index"])
    population, target, references = draws(int(config["seed"]), len(pool.y), k, int(config["num_population"]))
    rows = target if index == k else references[index]
    seed = int(np.random.SeedSequence((int(config["seed"]), index)).generate_state(1)[0] % 2**31)
    who = f"model {index}: the model that `--train` {config['train']!r} returned" if config["train"] else f"model {index}"
    names = None
    if config["train"] is None:
        model = train_mlp(pool.x[rows], pool.y[rows], seed=seed, epochs=int(config["epochs"]))
    else:
        train_input = config.get("train_input", "array")
        names = train_input_names(pool, train_input)
        model = fit_user_model(config["train"], train_input, pool, np.flatnonzero(rows), pool.y[rows], seed, f" in training run {index}")
    if model is None:
        raise ValueError(f"{who} is None: the training function must return the trained model")
    signals, convention = model_signals(model, pool.x, pool.y, who, names)
    views = augment_spec(config, pool)
    if views is not None:  # every view of every record; the output kind was checked on the records themselves
        signals = signals_on_views(lambda x: model_signals(model, x, pool.y, who, names)[0], pool.x, views)
    return {"index": index, "seed": seed, "signals": signals, "output_kind": convention.value, "evidence": convention.evidence}
