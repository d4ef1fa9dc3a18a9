"""What a user's training function ran, observed: σ, q and the steps from its Opacus objects, never the values typed beside it.

A ``--train`` function runs inside the audit. Settings typed beside it
(the config's ``noise_multiplier`` and ``sampling_rate``, ``--steps``) say
what the user *believes* ran. The function tells privaudit what did run by
calling :func:`report_opacus` after training, with its DPOptimizer and
Opacus' accountant (or data loader): privaudit reads σ from the optimizer,
q and the step count from the accountant's history. Outside an audit the
call only returns what it read.

:func:`typed_settings_status` then says, for each typed setting, whether it
was observed; a typed value that differs from what ran is refused in one
line naming the option and the observed value; with no report, each
typed value is labelled "as given, not observed".

>>> with observing_training() as seen:
...     pass  # the user's function, which reports nothing
>>> typed_settings_status({"noise_multiplier": ("config `noise_multiplier`", 1.1)}, seen)
{'noise_multiplier': 'as given, not observed'}
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Mapping
from typing import Any

from .opacus import OpacusSettings, read_opacus_settings

__all__ = ["AS_GIVEN", "OBSERVED", "describe_status", "observing_training", "report_opacus", "typed_settings_status"]

AS_GIVEN = "as given, not observed"
OBSERVED = "observed: read from the Opacus optimizer and accountant the training function reported"
_SEEN: contextvars.ContextVar[list | None] = contextvars.ContextVar("privaudit_observed_training", default=None)
_RELATIVE = 5e-3  # a σ typed to 2 digits (0.86) matches the 0.859375 a calibration picked; 0.94 does not


def report_opacus(optimizer, *, accountant=None, data_loader=None) -> OpacusSettings:
    """Call at the end of your training function: σ from ``optimizer``, q and the steps from ``accountant`` (or ``data_loader``).

    Nothing is changed; inside an audit (:func:`observing_training`) the
    settings are recorded, so the audit states what ran instead of what was typed.
    """
    settings = read_opacus_settings(optimizer, data_loader=data_loader, accountant=accountant)
    seen = _SEEN.get()
    if seen is not None:
        seen.append(settings)
    return settings


@contextlib.contextmanager
def observing_training() -> Iterator[list[OpacusSettings]]:
    """Collect what the training function run in the block reports through :func:`report_opacus`."""
    seen: list[OpacusSettings] = []
    token = _SEEN.set(seen)
    try:
        yield seen
    finally:
        _SEEN.reset(token)


def _observed_value(settings: OpacusSettings, key: str) -> float:
    return {"noise_multiplier": settings.noise_multiplier, "sampling_rate": settings.sample_rate, "num_steps": float(settings.steps)}[key]


def typed_settings_status(typed: Mapping[str, tuple[str, float]], seen: list[OpacusSettings]) -> dict[str, str]:
    """For each typed setting (key -> (the option's name, the typed value)): "observed", or "as given, not observed".

    A training function that reported other values than typed, or several
    runs that disagree, are refused in one line naming the options and the
    observed values.
    """
    if not seen:
        return {key: AS_GIVEN for key in typed}
    reported = {(s.noise_multiplier, s.sample_rate, s.steps) for s in seen}
    if len(reported) > 1:
        raise ValueError(
            f"the training function reported {len(reported)} different Opacus runs (σ, q, steps): {sorted(reported)}; report the one that trained the model"
        )
    ran = seen[0]
    wrong = [
        (name, value, _observed_value(ran, key))
        for key, (name, value) in typed.items()
        if not math.isclose(float(value), _observed_value(ran, key), rel_tol=_RELATIVE if key != "num_steps" else 0.0)
    ]
    if wrong:
        typed_text = ", ".join(f"{name} {value:g}" for name, value, _ in wrong)
        observed_text = ", ".join(f"{observed:g}" for *_, observed in wrong)
        raise ValueError(
            f"{typed_text} differ from what the training function ran: {observed_text} (σ {ran.noise_multiplier:g}, q {ran.sample_rate:g}, "
            f"{ran.steps} steps, read from its Opacus optimizer and accountant); set them to what ran"
        )
    return {key: OBSERVED for key in typed}


def describe_status(status: Mapping[str, str], values: Mapping[str, Any]) -> str:
    """One line: each setting with its value and whether it was observed.

    >>> describe_status({"noise_multiplier": AS_GIVEN}, {"noise_multiplier": 0.86})
    'noise_multiplier 0.86 (as given, not observed)'
    """
    return "; ".join(f"{key} {values[key]:g} ({'observed' if text == OBSERVED else text})" for key, text in status.items())
