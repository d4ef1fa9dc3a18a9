"""Provenance of LM canaries: everything needed to score them after the user's fine-tuning.

:func:`prepare_lm_canaries` draws the canaries of a design
(:mod:`privaudit.canaries.lm`), includes each by a fair coin from a seeded
numpy Generator, and returns an :class:`LMProvenance`, the JSON record of
the texts, each canary's scored span, the inclusion draw and its seed, the
tokenizer's identity (vocabulary size and a hash of the vocabulary, so a
provenance read with another tokenizer is refused), and the new tokens
where the design adds them. For ``new-tokens`` it also returns the resized
copies of the model and tokenizer, which the user fine-tunes (``save_to``
writes them with ``save_pretrained``).

The scored span is explicit: ``"secret"`` (the default: the secret given its
prefix, what Panda et al. found strongest) or ``"text"`` (the whole text).

>>> from privaudit.canaries.lm import _Toy
>>> identity = tokenizer_identity(_Toy())
>>> identity["vocab_size"], len(identity["vocab_sha256"])
(4, 64)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._core.seeding import check_seed, child_seeds
from .._core.validation import check_choice, check_count
from .lm import DESIGNS, NEEDS_BASE_MODEL, NEEDS_TEXTS, NEW_ROWS, add_new_tokens, draw_secrets, expected_new_rows, new_token_names

__all__ = ["FORMAT", "SPANS", "LMProvenance", "check_tokenizer", "prepare_lm_canaries", "read_lm_provenance", "tokenizer_identity"]

FORMAT = "privaudit-lm-canaries-v1"
SPANS = ("secret", "text")


def tokenizer_identity(tokenizer) -> dict[str, Any]:
    """The vocabulary size and the SHA-256 of the sorted (token, id) pairs: two tokenizers that split text differently differ here."""
    vocab = sorted((str(token), int(index)) for token, index in tokenizer.get_vocab().items())
    digest = hashlib.sha256(json.dumps(vocab, ensure_ascii=True).encode()).hexdigest()
    return {"vocab_size": len(vocab), "vocab_sha256": digest}


@dataclasses.dataclass(frozen=True)
class LMProvenance:
    """The canaries (prefix, secret), which span is scored, the fair-coin inclusion and its seed, the tokenizer's identity, the new tokens."""

    design: str
    span: str
    prefixes: tuple[str, ...]
    secrets: tuple[str, ...]
    included: tuple[bool, ...]
    seed: int
    inclusion_seed: int
    tokenizer: dict[str, Any]
    new_tokens: tuple[str, ...] = ()
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def texts(self) -> list[str]:
        return [prefix + secret for prefix, secret in zip(self.prefixes, self.secrets, strict=True)]

    def included_texts(self) -> list[str]:
        """The texts to add to the fine-tuning data: the included canaries'."""
        return [text for text, keep in zip(self.texts, self.included, strict=True) if keep]

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        return {"format": FORMAT} | {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}

    def write(self, path) -> None:
        from .._core.files import write_json_atomic

        write_json_atomic(path, self.to_dict())

    @classmethod
    def from_dict(cls, data: Any, source: str = "--provenance") -> LMProvenance:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"`{source}` must be a provenance of LM canaries (format {FORMAT!r}), written by prepare_lm_canaries")
        fields = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields - {"format"})
        missing = sorted(name for name in ("design", "span", "prefixes", "secrets", "included", "seed", "inclusion_seed", "tokenizer") if name not in data)
        if unknown or missing:
            raise ValueError(f"`{source}`: unknown keys {unknown} / missing keys {missing}")
        try:
            record = cls(
                design=check_choice(data["design"], f"{source} design", DESIGNS),
                span=check_choice(data["span"], f"{source} span", SPANS),
                prefixes=_list_of(data, "prefixes", str, source),
                secrets=_list_of(data, "secrets", str, source),
                included=_list_of(data, "included", bool, source),  # JSON booleans: "0" or 0 would be read as a coin it was not
                seed=check_seed(data["seed"], f"{source} seed"),
                inclusion_seed=check_seed(data["inclusion_seed"], f"{source} inclusion_seed"),
                tokenizer=_tokenizer_identity(data["tokenizer"], source),
                new_tokens=_list_of(data, "new_tokens", str, source),
                settings=dict(data.get("settings", {})),
            )
        except (TypeError, KeyError) as error:
            raise ValueError(f"`{source}`: a field has the wrong type ({error})") from None
        if not len(record.prefixes) == len(record.secrets) == len(record.included) or len(record.included) < 4:
            raise ValueError(f"`{source}`: prefixes, secrets and included must have one entry per canary, at least 4")
        if record.design == "new-tokens" and not record.new_tokens:
            raise ValueError(f"`{source}`: a new-tokens provenance must list its new tokens")
        check_inclusion_draw(record, source)
        return record


def check_inclusion_draw(record: LMProvenance, source: str = "--provenance") -> None:
    """Refuse ``included`` flags that are not the draw the provenance records (its inclusion seed and probability).

    The writer (:func:`prepare_lm_canaries`) draws ``default_rng(inclusion_seed).random(m) < p``
    and records p in ``settings["inclusion_prob"]``; flags edited, inverted
    or shuffled since then would make every number wrong without a sign. A
    provenance that records no p (one built by hand) records no draw, and is
    not checked.

    >>> record = LMProvenance("random-tokens", "secret", ("p ",) * 4, ("a",) * 4, (False, True, True, True), 0, 3, {}, settings={"inclusion_prob": 0.5})
    >>> check_inclusion_draw(record)
    Traceback (most recent call last):
    ...
    ValueError: `--provenance`: its inclusion flags are not the draw of its inclusion_seed 3 (3 of 4 differ); the provenance was edited after it was written: use the file privaudit wrote
    """
    probability = record.settings.get("inclusion_prob")
    if probability is None:
        return
    if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0.0 < float(probability) < 1.0:
        raise ValueError(f"`{source}`: settings.inclusion_prob must be a number in (0, 1), got {probability!r}")
    drawn = np.random.default_rng(record.inclusion_seed).random(len(record.included)) < float(probability)
    differ = int(np.sum(drawn != np.asarray(record.included, dtype=bool)))
    if differ:
        what = "all inverted" if differ == len(record.included) else f"{differ} of {len(record.included)} differ"
        raise ValueError(
            f"`{source}`: its inclusion flags are not the draw of its inclusion_seed {record.inclusion_seed} ({what});"
            " the provenance was edited after it was written: use the file privaudit wrote"
        )


def _list_of(data: dict, key: str, kind: type, source: str) -> tuple:
    """``data[key]`` (absent: empty) as a tuple, every item of JSON type ``kind`` exactly; never coerced (``"0"`` is not False, null not "None")."""
    values = data.get(key, [])
    names = {bool: "JSON booleans (true/false)", str: "strings"}
    if not isinstance(values, list):
        raise ValueError(f"`{source}`: {key} must be a list of {names[kind]}, got {type(values).__name__}")
    wrong = [(index, value) for index, value in enumerate(values) if type(value) is not kind]
    if wrong:
        index, value = wrong[0]
        raise ValueError(f"`{source}`: {key} must hold {names[kind]}, got {json.dumps(value)} at position {index} ({len(wrong)} such)")
    return tuple(values)


def _tokenizer_identity(value: Any, source: str) -> dict:
    """The provenance's tokenizer identity, with an integer vocab_size and a string vocab_sha256."""
    size = value.get("vocab_size") if isinstance(value, dict) else None
    digest = value.get("vocab_sha256") if isinstance(value, dict) else None
    if type(size) is not int or not isinstance(digest, str):
        raise ValueError(f"`{source}`: tokenizer must be {{vocab_size: an integer, vocab_sha256: a string}}, got {json.dumps(value)[:80]}")
    return {"vocab_size": size, "vocab_sha256": digest}


def read_lm_provenance(path, source: str = "--provenance") -> LMProvenance:
    """The provenance in JSON file ``path``; a ValueError naming ``source`` if it is not one."""
    from .._core.files import read_json

    if not Path(path).is_file():
        raise ValueError(f"`{source}` must be an existing file, got {str(path)!r}")
    return LMProvenance.from_dict(read_json(path, source), source)


def check_tokenizer(provenance: LMProvenance, tokenizer, source: str = "--model", embeddings: int | None = None) -> None:
    """Refuse a tokenizer that lacks the provenance's new tokens, or is not the one the canaries were made with.

    ``embeddings``: the model's embedding rows. A model with rows for the new
    tokens beside a tokenizer without them is a tokenizer/model mismatch (the
    wrong tokenizer saved beside a resized model), not a model left un-resized.
    """
    vocab = tokenizer.get_vocab()
    missing = [name for name in provenance.new_tokens if name not in vocab]
    if missing and embeddings is not None and embeddings >= len(tokenizer) + len(missing):
        raise ValueError(
            f"`{source}`: its tokenizer does not match its model: the model has {embeddings} embeddings, resized for the canaries' "
            f"{len(provenance.new_tokens)} new tokens, but the tokenizer saved beside it has {len(tokenizer)} tokens and lacks {len(missing)} of them "
            f"(e.g. {missing[0]!r}); save the tokenizer that prepare_lm_canaries returned (tokenizer.save_pretrained) into {source}'s directory"
        )
    if missing:
        raise ValueError(
            f"`{source}` lacks {len(missing)} of the canaries' {len(provenance.new_tokens)} new tokens (e.g. {missing[0]!r}): its vocabulary was not resized; "
            "fine-tune the model that prepare_lm_canaries saved"
        )
    identity = tokenizer_identity(tokenizer)
    if identity != provenance.tokenizer:
        raise ValueError(
            f"`{source}`'s tokenizer is not the provenance's: {identity['vocab_size']} tokens, vocab sha256 {identity['vocab_sha256'][:12]}..., "
            f"the canaries were made with {provenance.tokenizer['vocab_size']} tokens, {provenance.tokenizer['vocab_sha256'][:12]}..."
        )


def prepare_lm_canaries(
    design: str,
    tokenizer,
    *,
    count: int,
    seed: int = 0,
    length: int = 4,
    prefix: str | None = None,
    span: str = "secret",
    model=None,
    texts: Sequence[str] = (),
    temperature: float = 2.0,
    save_to=None,
    new_rows: str = "mean",
):
    """(provenance, model, tokenizer): ``count`` canaries of ``design``, each included by a fair coin.

    ``model`` is the base model (needed by "least-likely", "high-temperature"
    and "new-tokens"), ``texts`` the fine-tuning data (needed by "bigram" and
    "prefix-suffix"). The model and tokenizer returned are the ones to
    fine-tune: for "new-tokens", resized copies (saved to ``save_to`` when
    given), else those passed in. Nothing passed in is changed.

    ``prefix`` starts every canary ("prefix-suffix" draws its own from
    ``texts``); None (the default) is "my secret is ", but for "new-tokens",
    whose canaries then each start with a new token of their own: the canary is ``length`` + 1 new tokens, none
    shared with another canary, so every embedding row the canary's loss
    reads is its own. Behind a shared prefix most of a canary's clipped
    gradient goes to the prefix's tokens and the weights every canary moves
    alike, not to the rows that tell an included canary from an excluded one
    (tests/test_lm_canaries.py measures the share; ``benchmarks/lm_dp.py``
    the bound).

    ``new_rows`` starts the new tokens' output rows ("new-tokens" only):
    "mean", transformers' own start (the old rows' mean, up to a 1e-9
    scaled draw), or "expected", the base model's expected output row after
    the first canary's prefix (:func:`~privaudit.canaries.lm.expected_new_rows`),
    tokenised as a training loop's ``tokenizer(text)`` gives it, with the
    tokenizer's own special tokens (a loop that adds none sees a
    different context, and less of the gradient lands on the canary's
    rows). The context and the last iteration's change are recorded in the
    settings. There nearly all of a canary's clipped gradient starts in
    rows of its own, which ``benchmarks/lm_dp.py`` measured to raise the
    bound.
    """
    check_choice(design, "design", DESIGNS)
    check_choice(span, "span", SPANS)
    check_choice(new_rows, "new_rows", NEW_ROWS)
    if new_rows != "mean" and design != "new-tokens":
        raise ValueError(f"`new_rows` {new_rows!r} starts the rows of new tokens: it needs design 'new-tokens', got {design!r}")
    count = check_count(count, "count", minimum=4)
    length = check_count(length, "length", minimum=1)
    seeds = child_seeds(check_seed(seed), ["canaries", "inclusion"])
    if (design in NEEDS_BASE_MODEL or design == "new-tokens") and model is None:
        raise ValueError(f"`model` (the base model) is needed by design {design!r}")
    if design in NEEDS_TEXTS and not texts:
        raise ValueError(f"`texts` (the fine-tuning data) are needed by design {design!r}")
    own_prefix = prefix is None and design == "new-tokens"
    if prefix is None and not own_prefix:
        prefix = "my secret is "
    new_tokens: list[str] = []
    if design == "new-tokens":
        new_tokens = new_token_names(count * (length + own_prefix), seed)
        model, tokenizer = add_new_tokens(model, tokenizer, new_tokens, seed=seeds["canaries"])
    rng = np.random.default_rng(seeds["canaries"])
    prefixes, secrets = draw_secrets(
        design, tokenizer, count=count, length=length, prefix=prefix, rng=rng, model=model, texts=texts, new_tokens=new_tokens, temperature=temperature
    )
    row_settings = {}
    if new_rows == "expected":  # the prefix as a training loop's tokenizer(text) gives it: with the tokenizer's own special tokens (a BOS)
        context = tokenizer(prefixes[0])["input_ids"]
        change = expected_new_rows(model, tokenizer.convert_tokens_to_ids(new_tokens), context)
        row_settings = {"new_rows": new_rows, "new_rows_context": list(context), "new_rows_last_change": change}
    # fair coins drawn as the one-run audits draw theirs (observation.one_run.draw_inclusion, a layer above this one)
    included = np.random.default_rng(seeds["inclusion"]).random(count) < 0.5
    provenance = LMProvenance(
        design=design,
        span=span,
        prefixes=tuple(prefixes),
        secrets=tuple(secrets),
        included=tuple(bool(value) for value in included),
        seed=seed,
        inclusion_seed=seeds["inclusion"],
        tokenizer=tokenizer_identity(tokenizer),
        new_tokens=tuple(new_tokens),
        settings={
            "length": length,
            "prefix": "<a new token of its own>" if own_prefix else prefix,
            "temperature": temperature,
            "inclusion_prob": 0.5,
            **row_settings,
            "canary_seed": seeds["canaries"],
        },
    )
    if save_to is not None and design == "new-tokens":
        model.save_pretrained(save_to)
        tokenizer.save_pretrained(save_to)
    return provenance, model, tokenizer
