"""SDV 2.x's GaussianCopula and CTGAN with the ``--generator`` contract ``fn(train_df, *, seed, n) -> synthetic_df`` (the ``sdv`` extra).

``--generator privaudit.audits.synthetic_data.sdv_generators:gaussian_copula``
(or ``:ctgan``, ``:memorising_gaussian_copula``, ``:near_copy_gaussian_copula``). SDV is imported inside
each call: it is an optional extra, kept out of the test extra (it pins
pandas < 3).

* **Metadata**: SDV's own detection (``Metadata.detect_from_dataframes``)
  on the table each call is given. Only the sdtypes :data:`SAFE_SDTYPES`
  are accepted; any other (an id, PII such as a ``city`` or an ``email``,
  a date) is refused in one line naming the column, because SDV would
  replace that column by made-up values or model it otherwise than the
  attacks measure it. The detected sdtypes are recorded in the result as a
  convention (each adapter's ``conventions`` attribute).
* **Seeds**: SDV and CTGAN draw from numpy's, torch's and ``random``'s
  global generators while fitting, and sample from a fixed seed (73251)
  unless told otherwise. Each call seeds the three global generators for
  the fit and SDV's sampler from ``seed`` (three 32-bit words of
  ``SeedSequence(seed)``), and restores the caller's global states
  afterwards: the same seed gives the same table, and the caller's random
  streams go on as if nothing had run.
* **CTGAN** runs on the CPU (its GPU draws from CUDA generators this does
  not seed) for :data:`CTGAN_EPOCHS` epochs by default (SDV's default is
  300): minutes, not hours, on a laptop's CPU for a table of a few hundred
  rows. Write your own ``fn`` calling :func:`ctgan` with ``epochs=`` for more.
"""

from __future__ import annotations

import contextlib
import random
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..._core.conventions import Convention, checked
from ..._core.extras import require
from ..._core.validation import check_count
from ...models.device import seeded_torch  # imports torch inside its call: torch comes with SDV (CTGAN)
from .generators import memorising_copula

__all__ = [
    "CTGAN_EPOCHS",
    "SAFE_SDTYPES",
    "ctgan",
    "detect_metadata",
    "gaussian_copula",
    "memorising_gaussian_copula",
    "near_copy_gaussian_copula",
    "sdtype_conventions",
    "seeded_globals",
]

SAFE_SDTYPES = ("numerical", "categorical", "boolean")
CTGAN_EPOCHS = 100
TABLE = "table"  # SDV 2 takes and returns {table name: frame}


@contextlib.contextmanager
def seeded_globals(seed: int) -> Iterator[None]:
    """numpy's legacy, torch's CPU and ``random``'s global generators seeded from ``seed`` inside the block; the caller's states restored after.

    >>> random.seed(1); expected = random.random(); random.seed(1)
    >>> with seeded_globals(5):
    ...     inside = np.random.random()
    >>> with seeded_globals(5):
    ...     again = np.random.random()
    >>> bool(inside == again), random.random() == expected
    (True, True)
    """
    words = np.random.SeedSequence(check_count(seed, "seed")).generate_state(3)
    saved_random, saved_numpy = random.getstate(), np.random.get_state()
    try:
        with seeded_torch(int(words[0])):
            np.random.seed(int(words[1]))
            random.seed(int(words[2]))
            yield
    finally:
        random.setstate(saved_random)
        np.random.set_state(saved_numpy)


def detect_metadata(train_df: Any) -> Any:
    """SDV's ``Metadata`` detected on ``train_df``; a ValueError naming ``--generator`` when a column's sdtype is not one of :data:`SAFE_SDTYPES`."""
    require("sdv", purpose="the SDV adapters of --generator")  # optional: one line naming the sdv extra when it is missing
    from sdv.metadata import Metadata

    metadata = Metadata.detect_from_dataframes({TABLE: train_df})
    unsafe = [
        f"{name!r} as {spec['sdtype']!r}" + (" (PII)" if spec.get("pii") else "")
        for name, spec in _columns(metadata).items()
        if spec["sdtype"] not in SAFE_SDTYPES or spec.get("pii")
    ]
    if unsafe:
        raise ValueError(
            f"`--generator` (SDV): SDV's metadata detection took {', '.join(unsafe)}; SDV would make up values for such a column (ids, PII) "
            f"or model it as neither a number nor a category, so the audit would not measure what it learned. Accepted sdtypes: "
            f"{', '.join(SAFE_SDTYPES)}: name an id column with --id-col, drop the column, or store it as plain numbers or categories"
        )
    return metadata


def _columns(metadata: Any) -> dict[str, Any]:
    return metadata.to_dict()["tables"][TABLE]["columns"]


def sdtype_conventions(train_df: Any) -> tuple[Convention, ...]:
    """The sdtypes SDV detects on ``train_df`` (the audit records them; an unsafe one is refused by :func:`detect_metadata`)."""
    sdtypes = ", ".join(f"{name}: {spec['sdtype']}" for name, spec in _columns(detect_metadata(train_df)).items())
    return (
        checked(
            "SDV metadata (sdtypes)",
            sdtypes,
            f"SDV's Metadata.detect_from_dataframes on the training table; only {', '.join(SAFE_SDTYPES)} accepted (no id, PII or date column)",
        ),
    )


def _synthesize(name: str, train_df: Any, *, seed: int, n: int, **options: Any) -> Any:
    """Fit SDV's single-table synthesizer ``name`` on ``train_df`` and sample ``n`` rows, seeded (see the module's docstring)."""
    n = check_count(n, "n", minimum=1)
    require("sdv", purpose="the SDV adapters of --generator")
    sample_seed = int(np.random.SeedSequence(check_count(seed, "seed")).generate_state(4)[3])
    with seeded_globals(seed):
        from sdv import single_table

        metadata = detect_metadata(train_df)
        with warnings.catch_warnings():  # SDV's advice to save the metadata to a file: the result records the sdtypes instead
            warnings.filterwarnings("ignore", message="We strongly recommend saving the metadata")
            synthesizer = getattr(single_table, name)(metadata, **options)
            synthesizer.fit({TABLE: train_df.copy()})
        # SDV samples from a fixed seed (73251) unless a random state is set: without this every seed would give the same table
        synthesizer._set_random_state(sample_seed)
        return synthesizer.sample(n)[TABLE].reset_index(drop=True)


def _recording(function: Callable[..., Any]) -> Callable[..., Any]:
    function.conventions = sdtype_conventions  # type: ignore[attr-defined]  # the audit records them in the result
    return function


@_recording
def gaussian_copula(train_df: Any, *, seed: int, n: int) -> Any:
    """``n`` rows from SDV's ``GaussianCopulaSynthesizer`` (SDV's defaults) fitted on ``train_df``."""
    return _synthesize("GaussianCopulaSynthesizer", train_df, seed=seed, n=n)


@_recording
def ctgan(train_df: Any, *, seed: int, n: int, epochs: int = CTGAN_EPOCHS, **options: Any) -> Any:
    """``n`` rows from SDV's ``CTGANSynthesizer`` trained ``epochs`` epochs on the CPU (SDV's other defaults, or ``options``)."""
    return _synthesize("CTGANSynthesizer", train_df, seed=seed, n=n, epochs=check_count(epochs, "epochs", minimum=1), enable_gpu=False, **options)


@_recording
def memorising_gaussian_copula(train_df: Any, *, seed: int, n: int) -> Any:
    """:func:`gaussian_copula`'s rows, 5% of them replaced by copies of the most outlying training records (:func:`.generators.memorising_copula`)."""
    return memorising_copula(train_df, seed=seed, n=n, base=gaussian_copula)


@_recording
def near_copy_gaussian_copula(train_df: Any, *, seed: int, n: int) -> Any:
    """:func:`memorising_gaussian_copula` with near-copies: noise on every numeric column, one category changed (:func:`.generators.near_copy_copula`)."""
    return memorising_copula(train_df, seed=seed, n=n, near=True, base=gaussian_copula)
