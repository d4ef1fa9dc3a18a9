"""Canary formats with random holes (Secret Sharer §3.1).

A format is a template with holes: ``"my pin is {digits:6}"`` has one hole of
six digits, so its randomness space R holds 10⁶ canaries. Hole types:

* ``{digits:N}``: N characters from 0–9;
* ``{letters:N}``: N lowercase letters a–z;
* ``{chars:N}``: N characters from the format's ``alphabet``;
* ``{words:N}``: N words from the format's ``vocabulary``, separated by spaces.

A canary is the template with every hole filled; its *secret* is the tuple of
symbol indices, one per slot, which is what search and enumeration work on.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import secrets
import string
from collections.abc import Iterator, Sequence

import numpy as np

__all__ = ["Canary", "CanaryFormat", "MAX_ENUMERATION", "MAX_SLOTS", "MAX_SPACE_BITS"]

#: Largest randomness space that may be enumerated (exact exposure, brute force).
MAX_ENUMERATION = 10**7
#: Most symbols a format's holes may hold together; a canary is a short secret, not a document.
MAX_SLOTS = 256
#: Largest randomness space, in bits: exposure is measured in bits and log2 |R| must stay a float.
MAX_SPACE_BITS = 1024

_HOLE = re.compile(r"\{(\w+):(\d+)\}")
_FIXED_ALPHABETS = {"digits": tuple(string.digits), "letters": tuple(string.ascii_lowercase)}


@dataclasses.dataclass(frozen=True)
class Canary:
    """One filled-in format: its text and its secret (symbol indices per slot)."""

    text: str
    secret: tuple[int, ...]


def _check_seed(seed):
    """An integer seed or a numpy Generator; None (once fresh randomness) is refused: that is what ``secure=True`` is for."""
    if isinstance(seed, np.random.Generator):
        return seed
    from .._core.seeding import check_seed

    if seed is None:
        raise ValueError("`seed` must be an integer in [0, 2**63 - 1] or a numpy.random.Generator, got None (unguessable canaries: secure=True)")
    return check_seed(seed)


@dataclasses.dataclass(frozen=True)
class CanaryFormat:
    """A template with random holes; see the module docstring for hole types.

    >>> fmt = CanaryFormat("my pin is {digits:6}")
    >>> fmt.space_size, fmt.prefix, fmt.num_slots
    (1000000, 'my pin is ', 6)
    >>> fmt.fill((0, 1, 2, 3, 4, 5))
    'my pin is 012345'
    >>> CanaryFormat("{digits:5000}")
    Traceback (most recent call last):
    ...
    ValueError: `template` holes must total at most 256 symbols, got '{digits:5000}'
    """

    template: str
    alphabet: tuple[str, ...] = ()
    vocabulary: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "alphabet", tuple(self.alphabet))
        object.__setattr__(self, "vocabulary", tuple(self.vocabulary))
        holes = _HOLE.findall(self.template)
        if not holes:
            raise ValueError(f"`template` must contain at least one hole such as {{digits:6}}, got {self.template!r}")
        # refuse absurd sizes from the digits alone, before any int() of a huge string or any allocation
        if any(len(length.lstrip("0")) > 6 for _, length in holes) or sum(int(length) for _, length in holes) > MAX_SLOTS:
            raise ValueError(f"`template` holes must total at most {MAX_SLOTS} symbols, got {self.template[:80]!r}")
        for kind, length in holes:
            if kind not in ("digits", "letters", "chars", "words"):
                raise ValueError(f"`template` hole type must be one of 'digits', 'letters', 'chars', 'words', got {kind!r}")
            if int(length) < 1:
                raise ValueError(f"`template` hole length must be >= 1, got {{{kind}:{length}}}")
            if kind == "chars" and len(set(self.alphabet)) < 2:
                raise ValueError("`alphabet` must hold at least 2 distinct symbols for a {chars:N} hole")
            if kind == "words" and len(set(self.vocabulary)) < 2:
                raise ValueError("`vocabulary` must hold at least 2 distinct words for a {words:N} hole")
        if self.space_size.bit_length() > MAX_SPACE_BITS:
            raise ValueError(
                f"`template` randomness space must be at most 2**{MAX_SPACE_BITS} canaries, "
                f"got about 2**{self.space_size.bit_length() - 1} for {self.template[:80]!r}"
            )

    def _holes(self) -> list[tuple[str, int]]:
        return [(kind, int(length)) for kind, length in _HOLE.findall(self.template)]

    def _symbols(self, kind: str) -> tuple[str, ...]:
        if kind == "chars":
            return self.alphabet
        if kind == "words":
            return self.vocabulary
        return _FIXED_ALPHABETS[kind]

    @property
    def slots(self) -> list[tuple[str, ...]]:
        """The symbols each slot may take, in order."""
        return [self._symbols(kind) for kind, length in self._holes() for _ in range(length)]

    @property
    def num_slots(self) -> int:
        return len(self.slots)

    @property
    def space_size(self) -> int:
        """|R|, as an exact integer."""
        size = 1
        for symbols in self.slots:
            size *= len(symbols)
        return size

    @property
    def prefix(self) -> str:
        """The text before the first hole: what a model is primed with."""
        first = _HOLE.search(self.template)
        return self.template if first is None else self.template[: first.start()]

    def fill(self, secret: Sequence[int]) -> str:
        """The canary text for a secret (one symbol index per slot)."""
        secret = tuple(int(index) for index in secret)
        if len(secret) != self.num_slots:
            raise ValueError(f"`secret` must have {self.num_slots} entries, got {len(secret)}")
        symbols = iter(zip(self.slots, secret, strict=True))

        def replace(match: re.Match) -> str:
            kind, length = match.group(1), int(match.group(2))
            parts = []
            for _ in range(length):
                alphabet, index = next(symbols)
                if not 0 <= index < len(alphabet):
                    raise ValueError(f"`secret` entries must be in [0, {len(alphabet) - 1}], got {index}")
                parts.append(alphabet[index])
            return (" " if kind == "words" else "").join(parts)

        return _HOLE.sub(replace, self.template)

    def sample(self, *, seed=0, secure: bool = False) -> Canary:
        """Draw a canary uniformly from R: from ``seed`` (an integer or a numpy Generator; reproducible) or, with ``secure``, from the OS.

        The fixed default seed makes equal calls give equal canaries; a
        canary that must stay unguessable is drawn with ``secure=True``.

        >>> CanaryFormat("pin {digits:4}").sample(seed=0).text
        'pin 8652'
        """
        if secure:
            secret = tuple(secrets.randbelow(len(symbols)) for symbols in self.slots)
        else:
            rng = np.random.default_rng(_check_seed(seed))
            secret = tuple(int(rng.integers(len(symbols))) for symbols in self.slots)
        return Canary(text=self.fill(secret), secret=secret)

    def sample_many(self, count: int, *, seed=0, secure: bool = False, distinct: bool = True) -> list[Canary]:
        """``count`` canaries, all different when ``distinct`` (drawn without replacement), from ``seed`` or, with ``secure``, the OS.

        >>> [canary.text for canary in CanaryFormat("pin {digits:2}").sample_many(3)] == [c.text for c in CanaryFormat("pin {digits:2}").sample_many(3, seed=0)]
        True
        """
        if distinct and count > self.space_size:
            raise ValueError(f"`count` must be <= |R| = {self.space_size} for distinct canaries, got {count}")
        rng = None if secure else np.random.default_rng(_check_seed(seed))
        out: list = []
        seen: set = set()
        while len(out) < count:
            canary = self.sample(secure=True) if secure else self.sample(seed=rng)
            if distinct and canary.secret in seen:
                continue
            seen.add(canary.secret)
            out.append(canary)
        return out

    def enumerate(self) -> Iterator[Canary]:
        """Every canary of R in lexicographic order of secrets (|R| <= ``MAX_ENUMERATION``)."""
        if self.space_size > MAX_ENUMERATION:
            raise ValueError(f"the randomness space is too large to enumerate: |R| = {self.space_size} > {MAX_ENUMERATION}")
        for secret in itertools.product(*(range(len(symbols)) for symbols in self.slots)):
            yield Canary(text=self.fill(secret), secret=secret)
