"""The blind baseline of a text pool: a topic shift is flagged in 9 of 10 seeds and its words named, random splits at most at the test's level."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privaudit.audits.blind import BLIND_CONFIDENCE
from privaudit.audits.blind_text import blind_text_baseline

pytest.importorskip("sklearn")

PER_TOPIC = 200  # lines of each of two topics of CPython's documentation (pydoc_data.topics, the toolkit's offline corpus)


def _pool(rng):
    from pydoc_data import topics

    chosen = []
    for key in ("formatstrings", "specialnames"):
        lines = [line.strip() for line in topics.topics[key].splitlines() if len(line.split()) >= 5]
        chosen.append([lines[i] for i in rng.choice(len(lines), PER_TOPIC, replace=False)])
    return chosen[0] + chosen[1], np.arange(2 * PER_TOPIC) < PER_TOPIC


def test_members_drawn_mostly_from_one_topic_are_flagged_in_nine_of_ten_seeds():
    base = int(np.random.default_rng().integers(2**31))
    flagged = 0
    for seed in range(base, base + 10):
        rng = np.random.default_rng(seed)
        texts, first_topic = _pool(rng)
        result = blind_text_baseline(texts, rng.random(len(texts)) < np.where(first_topic, 0.8, 0.2), seed=seed)
        flagged += result.flagged and len(result.separating) == 3 and "blind classifier" in str(result.warning())
    assert flagged >= 9, f"seeds {base}..: {flagged} of 10 flagged"


def test_a_random_split_of_a_text_pool_is_flagged_at_most_at_the_tests_level():
    """20 fresh seeds; a test of level 1% flags more than the Binomial(20, 1%) quantile at 1 - 1e-4 (2) with chance below 1e-4."""
    base = int(np.random.default_rng().integers(2**31))
    flagged = 0
    for seed in range(base, base + 20):
        rng = np.random.default_rng(seed)
        texts, _ = _pool(rng)
        result = blind_text_baseline(texts, rng.random(len(texts)) < 0.5, seed=seed)
        flagged += result.flagged
        assert result.auc_low < result.auc < result.auc_high and result.num_in + result.num_out == len(texts)
        assert result.flagged == (result.p_value <= 1 - BLIND_CONFIDENCE)
    assert flagged <= stats.binom.isf(1e-4, 20, 1 - BLIND_CONFIDENCE), f"seeds {base}..: {flagged} of 20 random splits flagged"
