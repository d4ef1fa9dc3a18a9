"""Shadow-generator attacks (TAPAS, Houssiau et al. 2022; Stadler et al. 2022): the generator retrained with and without each target.

For each target record, ``num_shadows`` shadow training sets are drawn from
the attacker's population sample (the holdout's reference part), the
target added to half of them; the user's generator runs on each, as jobs of
:func:`privaudit.runner.run_all` (local processes or Ray, each saved as it
finishes, so a killed run resumes with no finished generation repeated).
Each synthetic table is summarised relative to the target by
:func:`shadow_features` (nearest-neighbour counts and marginal query
answers); a logistic regression trained on the shadows' features and
in/out labels scores the released table.

Every shadow run is keyed by what it is made from (the runner reuses a
stored run only under the same key): the content of the shadow pool (the
reference rows and the targets, from --train and --holdout: the file is
named by its SHA-256, so another pool is another file), the rows drawn, the
encoder, ``n``, the seed, and the source of the generator's module and of
every module of the user's it imports (:func:`privaudit.runner.input_digests`).
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from ...runner import ResumePlan, RunStore, input_digests, resume_plan, run_all
from .attacks import dcr_distances, log_kde
from .generation import generate, load_generator
from .table import Encoder, Table, read_frame

__all__ = ["RADII", "shadow_features", "shadow_jobs", "shadow_scores", "shadow_task"]

RADII = (0.01, 0.03, 0.1, 0.2)  # DCR radii of the nearest-neighbour counts
MARGIN = 0.05  # a number "matches" within this share of its column's range


def shadow_features(synthetic: Table, target: Table, encoder: Encoder) -> np.ndarray:
    """The synthetic table summarised around the one record ``target``.

    Features: the DCR of the target to the table; the share of synthetic
    rows within each DCR radius of :data:`RADII`; the share that matches the
    target on each column (a category equal, a number within
    :data:`MARGIN` of the range), i.e. one-way marginal queries at the
    target; the share that matches it on every categorical column; and the
    log KDE density of the table at the target.
    """
    rows, data = encoder.dcr_arrays(target), encoder.dcr_arrays(synthetic)
    columns = rows[0].shape[1] + rows[1].shape[1]
    numbers = np.where(np.isnan(rows[0]) & np.isnan(data[0]), 0.0, np.nan_to_num(np.abs(rows[0] - data[0]), nan=1.0))
    categories = rows[1] != data[1]
    distance = (np.minimum(numbers, 1.0).sum(axis=1) + categories.sum(axis=1)) / columns
    features = [float(dcr_distances(rows, data)[0]), *(float(np.mean(distance <= radius)) for radius in RADII)]
    features += [float(v) for v in np.mean(numbers <= MARGIN, axis=0)] + [float(v) for v in np.mean(~categories, axis=0)]
    features.append(float(np.mean(~categories.any(axis=1))) if categories.shape[1] else 0.0)
    features.append(float(log_kde(encoder.embedding(target), encoder.embedding(synthetic))[0]))
    return np.array(features)


def pool_file(directory: Path, digest: str) -> Path:
    """The shadow pool's file in ``directory``: named by the SHA-256 of its content, so another pool never takes its place."""
    return Path(directory) / f"shadow-pool-{digest[:16]}.parquet"


@functools.lru_cache(maxsize=4)
def _pool(directory: str, digest: str) -> Any:
    import pandas as pd  # optional (the parquet extra)

    path = pool_file(Path(directory), digest)
    if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        raise ValueError(f"the shadow pool {str(path)!r} changed since its jobs were made; use a fresh --output")
    return pd.read_parquet(path)


def write_pool(directory: Path, pool: Any) -> str:
    """Write the shadow pool (a DataFrame) into ``directory`` under its content's name; its SHA-256."""
    buffer = io.BytesIO()
    pool.to_parquet(buffer, index=False)
    data = buffer.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    path = pool_file(directory, digest)
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        temporary = path.with_name(f".{path.name}.tmp")  # whole or absent, as a killed run may leave it
        try:
            temporary.write_bytes(data)
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)
    return digest


def shadow_task(config: dict) -> dict:
    """One shadow generation (a runner job): the generator on the pool's ``rows``, its table's features around the pool's ``target``."""
    pool = _pool(config["pool_dir"], config["inputs"]["pool"])
    encoder = Encoder.from_dict(config["encoder"])
    rows = list(config["rows"]) + ([config["target"]] if config["with_target"] else [])
    train = read_frame(pool.iloc[rows].reset_index(drop=True), "the shadow training set")
    synthetic = generate(load_generator(config["generator"]), train.frame, train, seed=config["seed"], n=config["n"])
    target = read_frame(pool.iloc[[config["target"]]].reset_index(drop=True), "the target")
    return {"features": shadow_features(synthetic, target, encoder).tolist()}


def shadow_jobs(
    *, directory: Path, digest: str, num_reference: int, targets: list[int], encoder: Encoder, generator: str, num_shadows: int, size: int, n: int, seed: int
) -> list[dict]:
    """The runner's jobs: per target, ``num_shadows`` shadow sets of ``size`` reference rows, the target (pool row) in the first half's.

    Each job's ``inputs`` (part of its resume key) hold the pool's SHA-256
    ``digest`` and the generator's code digests.
    """
    inputs = {"pool": digest, **input_digests(functions={"generator": generator})}
    rng = np.random.default_rng(seed)
    jobs = []
    for target in targets:
        for shadow in range(num_shadows):
            rows = np.sort(rng.choice(num_reference, size=size, replace=False)).tolist()
            jobs.append(
                {
                    "pool_dir": str(directory),
                    "inputs": inputs,
                    "encoder": encoder.to_dict(),
                    "generator": generator,
                    "rows": rows,
                    "target": int(target),
                    "with_target": shadow < num_shadows // 2,
                    "n": int(n),
                    "seed": int(rng.integers(2**31)),
                }
            )
    return jobs


def shadow_scores(
    *,
    reference: Table,
    targets: Table,
    released: Table,
    encoder: Encoder,
    generator: str,
    num_shadows: int,
    n: int,
    seed: int,
    directory: Any,
    backend: str = "local",
    max_workers: int | None = None,
    address: str | None = None,
) -> tuple[np.ndarray, ResumePlan]:
    """Each target's probability of being in the released table's training set, by a classifier trained on its shadows,
    and the resume plan: which finished runs in ``directory`` were reused, and why the others ran again.

    The shadow sets hold ``len(reference) - 1`` reference rows (one slot
    left for the target), so a shadow set with the target is as large as
    one without.
    """
    import pandas as pd  # optional (the parquet extra)
    from sklearn.linear_model import LogisticRegression  # optional (the sklearn extra)
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    pool = pd.concat([reference.frame, targets.frame], ignore_index=True)
    digest = write_pool(directory, pool)
    rows = list(range(len(reference), len(pool)))
    jobs = shadow_jobs(
        directory=directory,
        digest=digest,
        num_reference=len(reference),
        targets=rows,
        encoder=encoder,
        generator=generator,
        num_shadows=num_shadows,
        size=len(reference) - 1,
        n=n,
        seed=seed,
    )
    store = RunStore(directory / "shadows")
    plan = resume_plan(store, jobs)
    results = run_all(shadow_task, jobs, store=store, backend=backend, max_workers=max_workers, address=address, who=f"`--generator` {generator!r}")
    for stale in directory.glob("shadow-pool*.parquet"):  # pools of earlier runs: no job of this key reads them
        if stale != pool_file(directory, digest):
            stale.unlink(missing_ok=True)
    scores = np.empty(len(rows))
    for i, row in enumerate(rows):
        features = np.array([results[i * num_shadows + k]["features"] for k in range(num_shadows)])
        labels = np.array([job["with_target"] for job in jobs[i * num_shadows : (i + 1) * num_shadows]])
        classifier = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
        classifier.fit(features, labels)
        target = read_frame(pool.iloc[[row]].reset_index(drop=True), "the target")
        scores[i] = classifier.predict_proba(shadow_features(released, target, encoder)[None, :])[0, 1]
    return scores, plan
