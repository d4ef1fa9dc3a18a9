"""The blind baseline beside the attacks, as the report and the console show it: its numbers, then each attack's advantage over it.

It reads a results dict (``blind_baseline``, and ``attacks`` where the family
has them), as :mod:`privaudit.report.verdict` does, so every family whose
membership the user gave shows it the same way.

>>> blind = {"auc": 0.7, "auc_low": 0.64, "auc_high": 0.76, "tpr": 0.05, "tpr_low": 0.02, "tpr_high": 0.1, "fpr": 0.01, "confidence": 0.99,
...          "folds": 5, "seed": 0, "num_in": 200, "num_out": 242, "flagged": True, "columns": ["age", "bmi"], "separating": [["age", 0.2]]}
>>> attacks = [{"attack": "loss", "auc": 0.72, "fpr": [0.0, 0.01], "tpr": [0.0, 0.04]}]
>>> rows = blind_rows({"blind_baseline": blind, "attacks": attacks})
>>> rows[1]
('loss: advantage over the blind baseline', 'AUC +0.0200, TPR at 1.0% FPR -0.0100')
"""

from __future__ import annotations

from typing import Any

from ..audits.blind import BlindBaseline
from ..audits.blind_image import IMAGE_METHOD
from ..audits.blind_text import TEXT_METHOD

__all__ = ["blind_rows", "blind_of"]

# what each blind classifier is, by the method its result records (the table's trees otherwise)
_CLASSIFIERS = {TEXT_METHOD: "an n-gram logistic regression on the texts", IMAGE_METHOD: "gradient-boosted trees on a pixel embedding"}


def blind_of(data: dict[str, Any]) -> BlindBaseline | None:
    """The result's blind baseline, or None where it has none (privaudit drew the membership, or a file written before it existed)."""
    blind = data.get("blind_baseline")
    if not isinstance(blind, dict):
        return None
    values = dict(blind, columns=tuple(blind["columns"]), separating=tuple((str(name), float(drop)) for name, drop in blind["separating"]))
    return BlindBaseline(**values)


def _tpr_at(attack: dict[str, Any], fpr: float) -> float | None:
    """An attack's TPR at ``fpr`` from its results entry: mia's ``fpr``/``tpr`` lists, or a ``tpr_at_fpr`` mapping; None where not shown."""
    if isinstance(attack.get("fpr"), list) and isinstance(attack.get("tpr"), list) and fpr in attack["fpr"]:
        value = attack["tpr"][attack["fpr"].index(fpr)]
        return None if value is None else float(value)
    table = attack.get("tpr_at_fpr")
    if isinstance(table, dict):
        value = table.get(f"{fpr:g}", table.get(str(fpr)))
        return None if value is None else float(value)
    return None


def blind_rows(data: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """(name, value) rows: the blind baseline's AUC and TPR with intervals, each attack's AUC and TPR minus the baseline's, and a text pool's dataset inference."""
    blind = blind_of(data)
    if blind is None:
        return ()
    what = _CLASSIFIERS.get(blind.method, "gradient-boosted trees on the records")
    rows = [(f"blind baseline (no model: {what}, cross-validated)", blind.describe())]
    for attack in data.get("attacks") or ():
        if not isinstance(attack, dict) or not isinstance(attack.get("auc"), (int, float)):
            continue
        auc, tpr = blind.advantage(float(attack["auc"]), _tpr_at(attack, blind.fpr))
        tpr_text = "n/a" if tpr is None else f"{tpr:+.4f}"
        rows.append((f"{attack.get('attack', 'attack')}: advantage over the blind baseline", f"AUC {auc:+.4f}, TPR at {blind.fpr:.1%} FPR {tpr_text}"))
    inference = data.get("dataset_inference")
    if isinstance(inference, dict) and inference.get("finding"):  # a text pool: were the members, as a set, used?
        rows.append(("dataset inference (Maini et al.: the members as a set against the other texts, no reference model)", str(inference["finding"])))
    return tuple(rows)
