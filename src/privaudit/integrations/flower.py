"""One-shot privacy estimation in a Flower federation: random canary clients (One-shot §4).

:class:`CanaryClients` wraps a Flower strategy that is itself wrapped in one of
Flower's differential-privacy wrappers, e.g.
``CanaryClients(DifferentialPrivacyServerSideFixedClipping(FedAvg(...), ...))``.
Each round it adds the replies of the canary clients chosen for that round to
the real clients' replies *before* the DP wrapper sees them. A canary client
returns the current model plus its fixed random direction scaled to the
round's clipping norm, so Flower's wrapper clips it (a no-op: its norm is the
clip norm), averages it with the real updates and adds its noise to the
aggregate, exactly as for any client. This is Algorithm 2 of One-shot: the
real clients are ``clients(t)`` (sampled by Flower), the canaries ``canaries(t)``.
After training, :meth:`CanaryClients.estimate` takes the cosine of every
canary with the final model delta (final − initial parameters) and reports

* ``epsilon_est``: the one-shot *estimate* ε_est, a Gaussian fitted to the
  inserted canaries' cosines against N(0, 1/d) (Algorithm 2, threat model
  "final model"); not a bound.
* ``epsilon_lo``: the lower bound ε_lo of §5.1 against the exact null law of
  Theorem 3.1, Bonferroni over ranks fixed in advance; Clopper–Pearson by
  default (exact), Jeffreys (the paper's choice, approximate) on request.

Choices, each stated because the paper leaves it open:

* **Participation.** ``canaries_per_round`` canaries take part in each round,
  in shuffled passes over the k canaries (seeded), so every canary takes
  part ⌊T·m/k⌋ or ⌈T·m/k⌉ times: the balanced form of Flower's uniform
  sampling. To mirror ``FedAvg(fraction_train=f)``, take m ≈ f·k. The DP
  wrapper's ``num_sampled_clients`` must count the canaries too (real + m);
  its noise is calibrated to that count, as Algorithm 2's m = |clients(t)| +
  |canaries(t)|. Every round records both counts.
* **Weight.** A canary reports the mean weight of the round's real replies
  (FedAvg averages by ``weighted_by_key``) and, for other numeric metrics,
  their weighted mean, so aggregated metrics are unchanged. DP-FedAvg's
  guarantee presumes equal weights; give every client the same weight.
* **Clip norm.** Read from the wrapper's ``clipping_norm`` each round, so an
  adaptive-clipping wrapper's current norm is used (Proj(c; S(t))).
* **Held-out canaries.** ``num_held_out`` further canaries are never inserted.
  Their cosines follow the null exactly (they are independent of training):
  a check of the null that the estimates assume, reported beside them.
* **Noise.** Flower draws its DP noise from numpy's global generator and
  samples clients with Python's ``random``. The canaries and their schedule
  come from numpy Generators of their own (``seed``) and draw from no global
  RNG, so the user's rounds sample the same clients and add the same noise
  as without the canaries; Flower's noise itself is not seeded here.
* Rounds whose aggregation Flower skips (a client failed) release nothing and
  count no participation.
"""

from __future__ import annotations

import dataclasses
from importlib import metadata

import numpy as np

from .._core.extras import require
from .._core.results import Result
from .._core.validation import check_choice, check_count, check_probability
from ..canaries.update import UpdateCanaries
from ..stats.conversions import gdp_epsilon
from ..stats.intervals import BINOMIAL_METHODS
from ..stats.one_shot import CosineLowerBound, OneShotEstimate, epsilon_lower_bound_cosines, epsilon_one_shot

__all__ = ["CanaryClients", "FlowerCanaryEstimate", "require_flwr"]

THREAT_MODEL = "final model (One-shot Algorithm 2): canary clients' updates chosen by the auditor, only the final model observed"
_SCHEDULE_STREAM = 2**32  # the schedule's generator is default_rng([seed, 2**32]); canary i uses [seed, i]
_FIXED_CLIPPING = ("DifferentialPrivacyServerSideFixedClipping", "DifferentialPrivacyClientSideFixedClipping")


def require_flwr():
    """Flower's ``flwr`` package, or an ImportError that names the extra to install."""
    require("flwr.serverapp.strategy", purpose="the Flower integration")  # the message API, Flower >= 1.21
    return require("flwr")


@dataclasses.dataclass(frozen=True, eq=False)
class FlowerCanaryEstimate(Result):
    """ε_est and ε_lo of a Flower run with canary clients, with what produced them.

    ``participations[j]`` counts the released rounds canary j took part in;
    ``rounds`` holds, per released round, the real and canary reply counts,
    the DP wrapper's ``num_sampled_clients`` and the clip norm.
    ``claimed_epsilon`` is ε(δ) that a fixed-clipping wrapper's noise claims
    for the most-inserted canary, all iterates seen and no amplification
    (μ = √n / z, GDP); it presumes each round aggregated
    ``num_sampled_clients`` equally weighted updates. None otherwise.
    """

    epsilon_est: OneShotEstimate
    epsilon_lo: CosineLowerBound
    threat_model: str
    dimension: int
    num_canaries: int
    num_held_out: int
    canaries_per_round: int
    seed: int
    noise_multiplier: float | None
    claimed_epsilon: float | None
    participations: np.ndarray
    rounds: tuple
    canary_cosines: np.ndarray
    held_out_cosines: np.ndarray
    flwr_version: str


class _ShuffledPasses:
    """Canary indices per round: consecutive blocks of seeded shuffles, no repeat within a round.

    >>> passes = _ShuffledPasses(num_canaries=4, per_round=3, seed=0)
    >>> rounds = [passes.next_round() for _ in range(4)]
    >>> np.bincount(np.concatenate(rounds), minlength=4).tolist()  # 12 slots over 4 canaries
    [3, 3, 3, 3]
    >>> all(len(set(r.tolist())) == 3 for r in rounds)
    True
    """

    def __init__(self, num_canaries: int, per_round: int, seed: int):
        self.num_canaries, self.per_round = num_canaries, per_round
        self.rng = np.random.default_rng([seed, _SCHEDULE_STREAM])
        self.queue = np.empty(0, dtype=np.int64)

    def next_round(self) -> np.ndarray:
        if self.queue.size < self.per_round:  # finish this pass, then start a fresh one
            fresh = self.rng.permutation(self.num_canaries)
            # canaries still queued go first; the new pass fills the round with the others
            fresh = np.concatenate([fresh[~np.isin(fresh, self.queue)], fresh[np.isin(fresh, self.queue)]])
            self.queue = np.concatenate([self.queue, fresh])
        chosen, self.queue = self.queue[: self.per_round], self.queue[self.per_round :]
        return chosen


def _flat(ndarrays) -> np.ndarray:
    return np.concatenate([np.asarray(array, dtype=np.float64).ravel() for array in ndarrays])


def _inner(strategy, attribute: str):
    """The first value of ``attribute`` along the chain strategy, strategy.strategy, ..."""
    while strategy is not None:
        if hasattr(strategy, attribute):
            return getattr(strategy, attribute)
        strategy = getattr(strategy, "strategy", None)
    return None


def _check_canary_clients(strategy, num_canaries, canaries_per_round, num_held_out, seed):
    if _inner(strategy, "clipping_norm") is None:
        raise ValueError(
            f"`strategy` must be a Flower DP wrapper with a `clipping_norm` (e.g. DifferentialPrivacyServerSideFixedClipping), got {type(strategy).__name__}"
        )
    num_canaries = check_count(num_canaries, "num_canaries", minimum=2)
    return (
        num_canaries,
        check_count(canaries_per_round, "canaries_per_round", minimum=1, maximum=num_canaries),
        check_count(num_held_out, "num_held_out"),
        check_count(seed, "seed"),
    )


class CanaryClients:
    """A Flower strategy that adds canary clients in front of a DP wrapper (One-shot Algorithm 2).

    Implements Flower's message-API ``Strategy`` interface and runs Flower's
    own round loop (``Strategy.start``). ``strategy`` is a Flower DP wrapper
    (it must expose ``clipping_norm``); its ``num_sampled_clients`` must be the
    real clients per round plus ``canaries_per_round``.

    Examples
    --------
    >>> from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg
    >>> dp = DifferentialPrivacyServerSideFixedClipping(FedAvg(), noise_multiplier=1.0, clipping_norm=0.5, num_sampled_clients=10 + 4)
    >>> strategy = CanaryClients(dp, num_canaries=40, canaries_per_round=4, num_held_out=40, seed=0)
    >>> [len(strategy._passes.next_round()) for _ in range(3)]  # 4 of the 40 canaries join each round
    [4, 4, 4]
    >>> CanaryClients(FedAvg(), num_canaries=40, canaries_per_round=4)
    Traceback (most recent call last):
    ...
    ValueError: `strategy` must be a Flower DP wrapper with a `clipping_norm` (e.g. DifferentialPrivacyServerSideFixedClipping), got FedAvg
    """

    def __init__(self, strategy, *, num_canaries: int, canaries_per_round: int, num_held_out: int = 0, seed: int = 0):
        require_flwr()
        self.strategy = strategy
        self.num_canaries, self.canaries_per_round, self.num_held_out, self.seed = _check_canary_clients(
            strategy, num_canaries, canaries_per_round, num_held_out, seed
        )
        self.canaries: UpdateCanaries | None = None  # built on the first round, once d is known
        self.initial_arrays = self.final_arrays = None
        self._current = None
        self._passes = _ShuffledPasses(self.num_canaries, self.canaries_per_round, self.seed)
        self.participations = np.zeros(self.num_canaries, dtype=np.int64)
        self.rounds: list[dict] = []

    def __repr__(self) -> str:
        return f"CanaryClients({self.strategy!r}, num_canaries={self.num_canaries}, canaries_per_round={self.canaries_per_round})"

    # --- Flower's Strategy interface --------------------------------------------------------

    def summary(self) -> None:
        """Log the wrapped strategy's summary (Flower calls this at start)."""
        self.strategy.summary()

    def start(self, grid, initial_arrays, **kwargs):
        """Run Flower's own training loop (``Strategy.start``) with this strategy; returns Flower's Result."""
        from flwr.serverapp.strategy import Strategy

        return Strategy.start(self, grid, initial_arrays, **kwargs)

    def configure_train(self, server_round, arrays, config, grid):
        """Remember the round's model (the canaries' base) and let the wrapped strategy sample clients."""
        if self.canaries is None:
            self.initial_arrays = arrays
            dimension = sum(int(np.asarray(a).size) for a in arrays.to_numpy_ndarrays())
            self.canaries = UpdateCanaries(num_canaries=self.num_canaries + self.num_held_out, dimension=dimension, seed=self.seed)
        self._current = arrays
        return self.strategy.configure_train(server_round, arrays, config, grid)

    def aggregate_train(self, server_round, replies):
        """Add this round's canary replies to the real ones, then let the DP wrapper aggregate all."""
        replies = list(replies)
        real = [reply for reply in replies if not reply.has_error()]
        if not real or len(real) < len(replies):  # Flower's DP wrappers skip rounds with failures
            return self.strategy.aggregate_train(server_round, replies)
        chosen = self._passes.next_round()
        clipping_norm = float(_inner(self.strategy, "clipping_norm"))
        canary_replies = [self._canary_reply(index, clipping_norm, real) for index in chosen]
        arrays, metrics = self.strategy.aggregate_train(server_round, replies + canary_replies)
        if arrays is not None:
            self.final_arrays = arrays
            self.participations[chosen] += 1
            self.rounds.append(
                {
                    "round": int(server_round),
                    "clients": len(real),
                    "canaries": len(canary_replies),
                    "num_sampled_clients": _inner(self.strategy, "num_sampled_clients"),
                    "clipping_norm": clipping_norm,
                }
            )
        return arrays, metrics

    def configure_evaluate(self, server_round, arrays, config, grid):
        """Unchanged: canaries do not evaluate."""
        return self.strategy.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(self, server_round, replies):
        """Unchanged: canaries do not evaluate."""
        return self.strategy.aggregate_evaluate(server_round, replies)

    # --- canary replies -------------------------------------------------------------------------

    def _canary_reply(self, index: int, clipping_norm: float, real):
        from flwr.app import Array, ArrayRecord, Message, RecordDict

        assert self._current is not None and self.canaries is not None  # set by configure_fit before any reply
        current = self._current.to_numpy_ndarrays()
        update = clipping_norm * self.canaries.direction(int(index))  # Proj(c_j; S(t)): norm exactly S(t)
        arrays, start = {}, 0
        for key, base in zip(self._current.keys(), current):
            stop = start + base.size
            arrays[key] = Array(np.asarray(base + update[start:stop].reshape(base.shape), dtype=base.dtype))
            start = stop
        array_key = next(iter(real[0].content.array_records.keys()))
        metric_key, metrics = self._canary_metrics(real)
        content = RecordDict({array_key: ArrayRecord(arrays), metric_key: metrics})
        return Message(content, reply_to=real[0])  # metadata borrowed from a real reply; only content is read

    def _canary_metrics(self, real):
        """The metric record of a typical client: mean weight, weighted means of other numbers."""
        from flwr.app import MetricRecord

        metric_key, template = next(iter(real[0].content.metric_records.items()))
        weight_key = _inner(self.strategy, "weighted_by_key")
        records = [reply.content[metric_key] for reply in real]
        weights = np.array([float(r[weight_key]) for r in records]) if weight_key in template else np.ones(len(records))
        values = {}
        for key, value in template.items():
            numbers = [r.get(key) for r in records]
            if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers):
                values[key] = value  # lists and the like: a copy of the first client's
            elif key == weight_key:
                values[key] = float(np.mean(weights))
            else:
                values[key] = float(np.average(numbers, weights=weights))
        return metric_key, MetricRecord(values)

    # --- the estimates --------------------------------------------------------------------------

    def estimate(self, *, delta: float, confidence: float = 0.95, interval: str = "clopper-pearson") -> FlowerCanaryEstimate:
        """ε_est and ε_lo from the canaries' cosines with the final model delta.

        ``interval`` bounds ε_lo's false-negative rate: "clopper-pearson"
        (exact, the default) or "jeffreys" (One-shot §5.1, approximate).
        """
        delta = check_probability(delta, "delta")
        confidence = check_probability(confidence, "confidence")
        interval = check_choice(interval, "interval", BINOMIAL_METHODS)
        if self.final_arrays is None:
            raise ValueError("no round has been aggregated yet: run the strategy (start) before `estimate`")
        model_delta = _flat(self.final_arrays.to_numpy_ndarrays()) - _flat(self.initial_arrays.to_numpy_ndarrays())
        cosines = self.canaries.cosines(model_delta)
        inserted, held_out = cosines[: self.num_canaries], cosines[self.num_canaries :]
        dimension = self.canaries.dimension
        noise = _inner(self.strategy, "noise_multiplier")
        claimed = None
        if type(self.strategy).__name__ in _FIXED_CLIPPING and noise and self.participations.max() > 0:
            claimed = gdp_epsilon(np.sqrt(self.participations.max()) / noise, delta)
        return FlowerCanaryEstimate(
            epsilon_est=epsilon_one_shot(inserted, dimension=dimension, delta=delta),
            epsilon_lo=epsilon_lower_bound_cosines(inserted, dimension=dimension, delta=delta, confidence=confidence, interval=interval),
            threat_model=THREAT_MODEL,
            dimension=dimension,
            num_canaries=self.num_canaries,
            num_held_out=self.num_held_out,
            canaries_per_round=self.canaries_per_round,
            seed=self.seed,
            noise_multiplier=None if noise is None else float(noise),
            claimed_epsilon=claimed,
            participations=self.participations.copy(),
            rounds=tuple(dict(r) for r in self.rounds),
            canary_cosines=inserted,
            held_out_cosines=held_out,
            flwr_version=metadata.version("flwr"),
        )
