"""The conventions a mia run records about the pool, the models' outputs and the score direction."""

from __future__ import annotations

from ..._core.conventions import Convention, checked, default, explicit
from .augment import augment_spec
from .config import MIAConfig
from .training import pool_of

__all__ = ["pool_conventions"]


def pool_conventions(config: MIAConfig, output_kinds: set[tuple[str, str]], target: tuple[Convention, ...]) -> tuple[Convention, ...]:
    if config.data is None:
        label = default("label column", "the embedded dataset's target", f"scikit-learn's {config.dataset} labels")
    else:
        read = pool_of(config).label
        assert read is not None  # the tabular reader records how it decided the label column
        label = read
    if config.id_col is None:
        record_id = default("record id", "row index in the pool (from 0)", "the pool names no id column (--id-col)")
    else:
        record_id = explicit("record id", f"column {config.id_col!r} of --data", "--id-col")
    pool_conventions: tuple[Convention, ...] = (label, record_id)
    if config.augment:
        spec = augment_spec(config, pool_of(config))
        assert spec is not None
        views = explicit("query augmentations", f"{spec.num_views} views ({', '.join(spec.augment)}; shifts of {spec.shift} px, border reflected)", "--augment")
        pool_conventions += (spec.convention, views)
    if config.reference_models is not None:  # the references are read like the target
        membership = explicit("reference membership", "rows of --reference-membership, models in file-name order", "--reference-membership")
        return (*pool_conventions, membership) + target + (default("score direction", "higher is member", "each attack's score is built so"),)
    kinds = sorted(output_kinds)
    if len({kind for kind, _ in kinds}) != 1:
        raise ValueError(f"`--train` must return models of one output kind, got {', '.join(sorted({kind for kind, _ in kinds}))}")
    output = checked("output kind", kinds[0][0], f"every model: {kinds[0][1]}" if len(kinds) == 1 else f"every model ({len(kinds)} checks), e.g. {kinds[0][1]}")
    score = default("score direction", "higher is member", "each attack's score is built so (likelihood ratio, fraction of z dominated, minus the loss)")
    return (*pool_conventions, output, score) + target
