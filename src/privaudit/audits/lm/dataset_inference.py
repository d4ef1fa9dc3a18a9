"""Dataset inference for causal language models: was this set of texts, as a whole, used to train the model?

The question a data owner asks (Maini et al., NeurIPS 2024, arXiv:2406.06443).
The owner gives a *suspect* set of texts and a *validation* set drawn from the
same source and known never to have been used. Every text gets the
membership features of :data:`FEATURES` under the model (and, with a reference
model, its calibrated ones), and :func:`privaudit.stats.dataset_inference.dataset_inference`
tests the two sets with a p-value whose level is exact when the sets are
exchangeable.

That last condition is the user's: a validation set from another time,
topic or source makes the sets differ whatever the model saw. So the blind
baseline of the two sets (:func:`privaudit.audits.blind_text.blind_text_baseline`,
n-grams and lengths, never the model) runs beside the test, and when it
tells them apart the result says that the p-value may measure the split
rather than training.

Features of one text, from its natural-log token probabilities log p₁ … log p_T
(every token that has a context, as :class:`~privaudit.models.hf.HFCausalLMScorer`
scores it: after the special tokens, or from the second token where none leads):

- the mean log-probability (the negative loss) and its sum;
- the sum over the text's zlib-compressed size in bytes (Carlini et al. 2021);
- Min-K%: the mean of the lowest ⌈K·T⌉ log-probabilities, K in :data:`MIN_K` (Shi et al. 2024);
- Max-K%: the mean of the highest ⌈K·T⌉, K in :data:`MAX_K`;
- the lowercased text's mean log-probability less the text's (0 where the
  lowercased text has a single scored token too few, e.g. "NOTE" → "note");
- with a reference model (the base model before fine-tuning): the mean
  log-probability and Min-20% less the reference's.

>>> text_features([np.log([0.5, 0.25, 0.125, 0.5])], ["abcd"])[0, :2].round(4).tolist()  # mean and sum
[-1.2130, -4.8520]
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from typing import Any

import numpy as np

from ..._core.conventions import Convention
from ..._core.results import Result
from ..._core.seeding import check_seed
from ..._core.validation import check_probability
from ...models.hf import HFCausalLMScorer
from ...stats.dataset_inference import MIN_RECORDS, DatasetInference, dataset_inference
from ..blind import BlindBaseline
from ..blind_text import blind_text_baseline

__all__ = ["FEATURES", "MAX_K", "MIN_K", "LMDatasetInference", "lm_dataset_inference", "text_features"]

MIN_K = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
MAX_K = (0.1, 0.2, 0.3)
FEATURES = (
    ("mean log-probability", "summed log-probability", "log-probability per zlib byte")
    + tuple(f"Min-{k:.0%}" for k in MIN_K)
    + tuple(f"Max-{k:.0%}" for k in MAX_K)
    + ("lowercased less original",)
)
REFERENCE_FEATURES = ("mean log-probability less the reference's", "Min-20% less the reference's")


def _extreme_mean(values: np.ndarray, share: float, lowest: bool) -> float:
    count = max(1, math.ceil(share * len(values)))
    ordered = np.sort(values)
    return float(np.mean(ordered[:count] if lowest else ordered[-count:]))


def text_features(log_probs: list[np.ndarray], texts: list[str]) -> np.ndarray:
    """(texts, the first 12 of :data:`FEATURES`): every feature but the lowercased one, from each text's token log-probabilities."""
    rows = []
    for values, text in zip(log_probs, texts, strict=True):
        total = float(np.sum(values))
        rows.append(
            [float(np.mean(values)), total, total / len(zlib.compress(text.encode("utf-8")))]
            + [_extreme_mean(values, k, lowest=True) for k in MIN_K]
            + [_extreme_mean(values, k, lowest=False) for k in MAX_K]
        )
    return np.array(rows, dtype=np.float64)


@dataclasses.dataclass(frozen=True)
class LMDatasetInference(Result):
    """Dataset inference of a suspect set of texts under a causal LM: the test, its features, and the blind check of its assumption."""

    test: DatasetInference
    features: tuple[str, ...]
    num_suspect: int
    num_validation: int
    alpha: float
    blind_baseline: BlindBaseline | None
    special_tokens: Convention
    reference_model: bool
    finding: str = ""  # :meth:`sentence`, as results.json carries it

    @property
    def found(self) -> bool:
        """Whether the suspect set is found used at level ``alpha``."""
        return self.test.rejects(self.alpha)

    def warning(self) -> str | None:
        """One line when the blind baseline tells the sets apart without the model: then the p-value may measure the split."""
        if self.blind_baseline is None or not self.blind_baseline.flagged:
            return None
        return (
            f"the suspect and validation texts are told apart without the model (blind baseline AUC {self.blind_baseline.auc:.2f}): "
            "they are not drawn alike, so the p-value may measure the split, not training; draw the validation set from the suspect set's own source"
        )

    def sentence(self) -> str:
        """The finding in one sentence, with the p-value and what it rests on."""
        test = self.test
        head = (
            f"the suspect set ({self.num_suspect} texts) is found used in training: p = {test.p_value:.2g} <= {self.alpha:g}"
            if self.found
            else f"no evidence that the suspect set ({self.num_suspect} texts) was used in training: p = {test.p_value:.2g} > {self.alpha:g}"
        )
        floor = test.min_p_value
        if floor > self.alpha:
            tail = f" (too few texts: the smallest p this test can give is {floor:.2g}, above {self.alpha:g})"
        else:
            tail = f" (the smallest p this test gives is {floor:.1g})" if test.p_value <= floor else ""
        return (
            f"{head}{tail}; exact permutation test of {test.num_test[0]} against {test.num_test[1]} held-out texts, Welch's t-test p = {test.welch_p_value:.2g}"
        )


def _log_probs(scorer: HFCausalLMScorer, texts: list[str], name: str) -> list[np.ndarray]:
    lengths = [len(scorer.token_ids(text)) for text in texts]
    limit = scorer.context_limit
    if limit is not None and max(lengths) > limit:
        raise ValueError(f"`{name}` must hold texts that fit the model's context of {limit} tokens, got one of {max(lengths)}: split longer texts into pieces")
    if min(lengths) < 2:
        raise ValueError(f"`{name}` must hold texts of at least 2 tokens with the special tokens before them, got one of {min(lengths)}")
    return scorer.token_log_probs(texts)


def _lowercased_less_original(scorer: HFCausalLMScorer, texts: list[str], means: np.ndarray, name: str) -> np.ndarray:
    """Each lowercased text's mean log-probability less the text's; 0 where lowercasing leaves a single token (nothing to score)."""
    lowered = [text.lower() for text in texts]
    scorable = np.array([len(scorer.token_ids(text)) >= 2 for text in lowered])
    out = np.zeros(len(texts))
    if scorable.any():
        values = _log_probs(scorer, [text for text, keep in zip(lowered, scorable, strict=True) if keep], name)
        out[scorable] = np.array([np.mean(row) for row in values]) - means[scorable]
    return out


def _features(scorer: HFCausalLMScorer, reference: HFCausalLMScorer | None, texts: list[str], name: str) -> np.ndarray:
    base = text_features(_log_probs(scorer, texts, name), texts)
    columns = [base, _lowercased_less_original(scorer, texts, base[:, 0], name)[:, None]]
    if reference is not None:
        theirs = text_features(_log_probs(reference, texts, name), texts)
        min_20 = 3 + MIN_K.index(0.2)
        columns.append(np.column_stack([base[:, 0] - theirs[:, 0], base[:, min_20] - theirs[:, min_20]]))
    return np.hstack(columns)


def _check_texts(texts: Any, name: str) -> list[str]:
    texts = list(texts)
    if len(texts) < MIN_RECORDS or not all(isinstance(text, str) and text.strip() for text in texts):
        raise ValueError(f"`{name}` must hold at least {MIN_RECORDS} non-empty texts, got {len(texts)} item(s)")
    return texts


def lm_dataset_inference(
    model: Any,
    tokenizer: Any,
    suspect: Any,
    validation: Any,
    *,
    reference_model: Any = None,
    bos: str = "auto",
    alpha: float = 0.05,
    blind: bool = True,
    num_permutations: int = 9999,
    seed: int = 0,
    names: tuple[str, str] = ("suspect", "validation"),
) -> LMDatasetInference:
    """Test whether the ``suspect`` texts were used to train ``model``, against ``validation`` texts drawn alike and never used.

    ``reference_model`` (optional) shares ``tokenizer``: the model before
    fine-tuning, whose calibrated features sharpen the test. ``bos`` is the
    special-token decision of :class:`~privaudit.models.hf.HFCausalLMScorer`.
    ``seed`` draws the halves, the permutations and the blind baseline's folds.
    ``names``: what errors call the two sets (a command names its options).
    Neither model is changed (each is scored in eval mode, its mode restored).
    """
    suspect, validation = _check_texts(suspect, names[0]), _check_texts(validation, names[1])
    alpha = check_probability(alpha, "alpha")
    seed = check_seed(seed)
    scorer = HFCausalLMScorer(model, tokenizer, bos=bos, seed=seed)
    reference = None
    if reference_model is not None:
        if reference_model.config.vocab_size != model.config.vocab_size:
            raise ValueError(
                f"`reference_model` must share the model's tokenizer: its vocabulary has {reference_model.config.vocab_size} tokens, the model's {model.config.vocab_size}"
            )
        reference = HFCausalLMScorer(reference_model, tokenizer, bos=bos, seed=seed)
        if reference.special_tokens.leading != scorer.special_tokens.leading:
            raise ValueError("`reference_model` puts other special tokens before each text than the model: their scores would cover other tokens")
    feature_names = FEATURES + (REFERENCE_FEATURES if reference is not None else ())
    test = dataset_inference(
        _features(scorer, reference, suspect, names[0]), _features(scorer, reference, validation, names[1]), seed=seed, num_permutations=num_permutations
    )
    baseline = None
    if blind:
        baseline = blind_text_baseline(suspect + validation, np.r_[np.ones(len(suspect), bool), np.zeros(len(validation), bool)], seed=seed)
    result = LMDatasetInference(
        test=test,
        features=feature_names,
        num_suspect=len(suspect),
        num_validation=len(validation),
        alpha=alpha,
        blind_baseline=baseline,
        special_tokens=scorer.special_tokens.convention,
        reference_model=reference is not None,
    )
    return dataclasses.replace(result, finding=result.sentence())
