"""A DP-FedAvg simulator with random canary clients (One-shot Algorithms 2 and 3), numpy only.

Real clients hold ``examples_per_client`` examples each and train a
one-hidden-layer tanh MLP locally (full-batch SGD, all clients of a round at
once with batched einsums). Each round the server clips every update to the
round's clip norm C_t, adds canary updates (a fixed random direction scaled to
C_t, :class:`privaudit.canaries.update.UpdateCanaries`), adds N(0, (σ C_t)² I),
divides by the *expected* cohort size (a fixed denominator, as DP-FedAvg's
analysis assumes) and hands the result ρ̄_t to the server optimizer.

Participation (``sampling``), for real and canary clients alike:

* ``"uniform"``: each client joins each round independently with probability
  clients_per_round / population (Poisson sampling);
* ``"shuffled"``: the population is shuffled every epoch and cut into rounds
  of ``clients_per_round`` clients;
* ``"fixed"``: the rounds are cut into ``participations`` equal periods and
  every client joins exactly one uniformly chosen round per period, so each
  participates exactly ``participations`` times.

Observed are, for every canary (inserted or not), its cosine with the final
model delta θ_T − θ₀ (Algorithm 2; θ₀ is public, and removing it only
strengthens the attack) and its largest cosine with any round's privatized
aggregate ρ̄_t (Algorithm 3; with SGD ρ̄_t is the model delta itself, and the
iterates determine it for any known server optimizer).

Adaptive clipping follows Andrew et al. (2021): C_{t+1} = C_t exp(−η_C (b̃_t − γ))
with b̃_t the noised fraction of updates of norm ≤ C_t (noise σ_b); the
update noise becomes (σ⁻² − (2σ_b)⁻²)^(−1/2) so that the whole round keeps
noise multiplier σ.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .._core.seeding import check_seed
from .._core.validation import check_choice, check_count, check_fraction, check_positive
from ..canaries.update import DEFAULT_MEMORY_BUDGET, UpdateCanaries

__all__ = ["SAMPLINGS", "SERVER_OPTIMIZERS", "FedAvgConfig", "FedAvgRun", "expected_cohort", "model_dimension", "participation_schedule", "simulate_fedavg"]

SAMPLINGS = ("uniform", "shuffled", "fixed")
SERVER_OPTIMIZERS = ("sgd", "momentum", "adam")
_STREAMS = {"init": 11, "clients": 12, "schedule": 13, "noise": 14, "clip": 15}


def _rng(seed: int, purpose: str) -> np.random.Generator:
    # spawn keys keep these streams apart from the canaries' default_rng([seed, i])
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_STREAMS[purpose],)))


@dataclasses.dataclass(frozen=True)
class FedAvgConfig:
    """Training settings of the simulator (the audit's settings live in ``FLAuditConfig``).

    >>> FedAvgConfig(sampling="poisson")
    Traceback (most recent call last):
    ...
    ValueError: `sampling` must be one of 'uniform', 'shuffled', 'fixed', got 'poisson'
    """

    num_rounds: int = 100
    clients_per_round: int = 20
    sampling: str = "uniform"
    participations: int = 1
    examples_per_client: int = 5
    hidden: int = 128
    local_steps: int = 1
    client_learning_rate: float = 0.5
    server_optimizer: str = "sgd"
    server_learning_rate: float = 1.0
    server_momentum: float = 0.9
    noise_multiplier: float = 1.0
    clip_norm: float = 1.0
    adaptive_clipping: bool = False
    target_quantile: float = 0.5
    clip_learning_rate: float = 0.2
    clipped_count_stddev: float | None = None  # default: expected cohort size / 20 (Andrew et al.)

    def __post_init__(self):
        check_count(self.num_rounds, "num_rounds", minimum=1)
        check_count(self.clients_per_round, "clients_per_round", minimum=1)
        check_choice(self.sampling, "sampling", SAMPLINGS)
        check_count(self.participations, "participations", minimum=1, maximum=self.num_rounds)
        check_count(self.examples_per_client, "examples_per_client", minimum=1)
        check_count(self.hidden, "hidden", minimum=1)
        check_count(self.local_steps, "local_steps", minimum=1)
        check_positive(self.client_learning_rate, "client_learning_rate")
        check_choice(self.server_optimizer, "server_optimizer", SERVER_OPTIMIZERS)
        check_positive(self.server_learning_rate, "server_learning_rate")
        check_fraction(self.server_momentum, "server_momentum")
        check_positive(self.noise_multiplier, "noise_multiplier", allow_zero=True)
        check_positive(self.clip_norm, "clip_norm")
        check_fraction(self.target_quantile, "target_quantile")
        check_positive(self.clip_learning_rate, "clip_learning_rate", allow_zero=True)
        if self.clipped_count_stddev is not None:
            check_positive(self.clipped_count_stddev, "clipped_count_stddev")


@dataclasses.dataclass(frozen=True, eq=False)
class FedAvgRun:
    """What one simulated training run leaves: cosines per canary, participations, accuracy, timings.

    Canaries ``[0, num_observed)`` were inserted, the rest never were.
    ``final_cosines`` are with θ_T − θ₀; ``max_cosines`` the max over rounds
    with ρ̄_t (NaN when all iterates were not tracked). ``seed`` is the seed
    the run drew its clients, schedule, initialisation and noise from.
    """

    final_cosines: np.ndarray
    max_cosines: np.ndarray
    num_observed: int
    participations: np.ndarray
    dimension: int
    denominator: float
    test_accuracy: float
    clip_norms: np.ndarray
    seconds: float
    canary_seconds: float
    seed: int = 0


def participation_schedule(population: int, config: FedAvgConfig, rng: np.random.Generator | int = 0) -> list[np.ndarray]:
    """Client indices of every round, for the config's sampling pattern, drawn from ``rng`` (a numpy Generator, or an integer seed).

    >>> config = FedAvgConfig(num_rounds=8, sampling="fixed", participations=2, clients_per_round=5)
    >>> rounds = participation_schedule(10, config, np.random.default_rng(0))
    >>> np.bincount(np.concatenate(rounds), minlength=10).tolist()
    [2, 2, 2, 2, 2, 2, 2, 2, 2, 2]
    """
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(check_seed(rng, "rng"))
    rounds = config.num_rounds
    if config.sampling == "uniform":
        rate = min(1.0, config.clients_per_round / population)
        return [np.flatnonzero(rng.random(population) < rate) for _ in range(rounds)]
    if config.sampling == "shuffled":
        size = min(config.clients_per_round, population)
        epochs = -(-rounds * size // population)
        order = np.concatenate([rng.permutation(population) for _ in range(epochs)])
        return [np.sort(order[t * size : (t + 1) * size]) for t in range(rounds)]
    slots: list[list] = [[] for _ in range(rounds)]
    for period in np.array_split(np.arange(rounds), config.participations):
        chosen = rng.choice(period, size=population)
        for client, round_index in enumerate(chosen):
            slots[round_index].append(client)
    return [np.asarray(s, dtype=np.int64) for s in slots]


def expected_cohort(population: int, config: FedAvgConfig) -> float:
    """The fixed denominator: the expected number of clients per round."""
    if config.sampling == "fixed":
        return population * config.participations / config.num_rounds
    return float(min(config.clients_per_round, population))


# --- the model: a tanh MLP on flat parameters, batched over clients -------------------------


def _shapes(features: int, hidden: int, classes: int):
    return [(features, hidden), (hidden,), (hidden, classes), (classes,)]


def _unflatten(params: np.ndarray, shapes):
    out, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        out.append(params[..., start : start + size].reshape(params.shape[:-1] + shape))
        start += size
    return out


def _init(shapes, rng) -> np.ndarray:
    parts = []
    for fan_in, shape in ((shapes[0][0], shapes[0]), (shapes[0][0], shapes[1]), (shapes[2][0], shapes[2]), (shapes[2][0], shapes[3])):
        bound = 1.0 / np.sqrt(fan_in)  # torch.nn.Linear's default
        parts.append(rng.uniform(-bound, bound, size=shape).ravel())
    return np.concatenate(parts)


def _local_updates(theta, x, y, shapes, config: FedAvgConfig) -> np.ndarray:
    """Model deltas after ``local_steps`` full-batch SGD steps on each client's data: (clients, d)."""
    params = np.repeat(theta[None, :], x.shape[0], axis=0)
    onehot = np.eye(shapes[3][0])[y]
    for _ in range(config.local_steps):
        w1, b1, w2, b2 = _unflatten(params, shapes)
        hidden = np.tanh(np.einsum("nef,nfh->neh", x, w1) + b1[:, None])
        logits = np.einsum("neh,nhc->nec", hidden, w2) + b2[:, None]
        logits -= logits.max(axis=2, keepdims=True)
        probs = np.exp(logits)
        probs /= probs.sum(axis=2, keepdims=True)
        g_logits = (probs - onehot) / x.shape[1]
        g_hidden = np.einsum("nec,nhc->neh", g_logits, w2) * (1.0 - hidden**2)
        grads = [np.einsum("nef,neh->nfh", x, g_hidden), g_hidden.sum(1), np.einsum("neh,nec->nhc", hidden, g_logits), g_logits.sum(1)]
        params = params - config.client_learning_rate * np.concatenate([g.reshape(g.shape[0], -1) for g in grads], axis=1)
    return params - theta[None, :]


def _accuracy(theta, x, y, shapes) -> float:
    w1, b1, w2, b2 = _unflatten(theta, shapes)
    return float(np.mean((np.tanh(x @ w1 + b1) @ w2 + b2).argmax(1) == y))


# --- the server -------------------------------------------------------------------------------


class _ServerOptimizer:
    def __init__(self, config: FedAvgConfig, dimension: int):
        self.config, self.step_count = config, 0
        self.first, self.second = np.zeros(dimension), np.zeros(dimension)

    def step(self, theta, update):
        c = self.config
        if c.server_optimizer == "sgd":
            return theta + c.server_learning_rate * update
        if c.server_optimizer == "momentum":
            self.first = c.server_momentum * self.first + update
            return theta + c.server_learning_rate * self.first
        self.step_count += 1  # Adam on the pseudo-gradient −update (Reddi et al. 2020)
        self.first = 0.9 * self.first + 0.1 * update
        self.second = 0.999 * self.second + 0.001 * update**2
        first = self.first / (1 - 0.9**self.step_count)
        second = self.second / (1 - 0.999**self.step_count)
        return theta + c.server_learning_rate * first / (np.sqrt(second) + 1e-3)


def _noise_levels(config: FedAvgConfig, denominator: float) -> tuple[float, float]:
    """(update noise multiplier, clipped-count noise stddev) keeping the round's total at σ."""
    if not config.adaptive_clipping:
        return config.noise_multiplier, 0.0
    count_std = config.clipped_count_stddev if config.clipped_count_stddev is not None else denominator / 20.0
    if config.noise_multiplier == 0.0:
        return 0.0, 0.0
    if 2 * count_std <= config.noise_multiplier:
        raise ValueError(f"`clipped_count_stddev` must be > noise_multiplier / 2 = {config.noise_multiplier / 2:g} with adaptive clipping, got {count_std:g}")
    return (config.noise_multiplier**-2 - (2 * count_std) ** -2) ** -0.5, count_std


def _canary_matrix(canaries: UpdateCanaries, budget: int):
    if canaries.num_canaries * canaries.dimension * 4 > budget:
        return None  # regenerate per round instead of holding more than the budget
    return np.concatenate([block for _, block in canaries.chunks(memory_budget_bytes=budget)])


def _cosines(canaries, matrix, vector, budget):
    norm = np.linalg.norm(vector)
    if norm == 0.0:
        return np.zeros(canaries.num_canaries)
    if matrix is None:
        return canaries.cosines(vector, memory_budget_bytes=budget)
    return np.clip(matrix @ (vector / norm).astype(np.float32), -1.0, 1.0).astype(np.float64)


def simulate_fedavg(
    data,
    config: FedAvgConfig,
    canaries: UpdateCanaries,
    *,
    num_observed: int,
    seed: int = 0,
    insert_canaries: bool = True,
    track_all: bool = True,
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET,
) -> FedAvgRun:
    """Train with DP-FedAvg on ``data`` (a :class:`privaudit.data.tabular.Dataset`) with canary clients.

    The first ``num_observed`` canaries of ``canaries`` join the population; the
    rest are never inserted. ``insert_canaries=False`` runs the same schedule
    and noise with the canaries' updates left out (to measure their effect on
    accuracy). ``canaries.dimension`` must equal the model's parameter count
    (see :func:`model_dimension`). Validation is the caller's
    (:meth:`privaudit.audits.fl.audit.FLAudit.run`).
    """
    started = time.perf_counter()
    shapes = _shapes(data.num_features, config.hidden, data.num_classes)
    per_client = config.examples_per_client
    num_real = data.x_train.shape[0] // per_client
    order = _rng(seed, "clients").permutation(data.x_train.shape[0])[: num_real * per_client]
    client_x = data.x_train[order].astype(np.float64).reshape(num_real, per_client, -1)
    client_y = data.y_train[order].reshape(num_real, per_client)
    population = num_real + num_observed
    schedule = participation_schedule(population, config, _rng(seed, "schedule"))
    denominator = expected_cohort(population, config)
    update_noise, count_noise = _noise_levels(config, denominator)
    theta0 = _init(shapes, _rng(seed, "init"))
    theta, clip = theta0.copy(), config.clip_norm
    optimizer = _ServerOptimizer(config, theta.size)
    noise_rng, clip_rng = _rng(seed, "noise"), _rng(seed, "clip")
    canary_started = time.perf_counter()
    matrix = _canary_matrix(canaries, memory_budget_bytes)
    canary_seconds = time.perf_counter() - canary_started
    max_cosines = np.full(canaries.num_canaries, -np.inf if track_all else np.nan)
    participations = np.zeros(num_observed, dtype=np.int64)
    clip_norms = np.empty(config.num_rounds)
    for t, cohort in enumerate(schedule):
        clip_norms[t] = clip
        real = cohort[cohort < num_real]
        total = np.zeros(theta.size)
        within = 0
        if real.size:
            updates = _local_updates(theta, client_x[real], client_y[real], shapes, config)
            norms = np.linalg.norm(updates, axis=1)
            within = int(np.count_nonzero(norms <= clip))
            total += (updates * np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]).sum(0)
        canary_started = time.perf_counter()
        inserted = cohort[cohort >= num_real] - num_real
        participations[inserted] += 1
        if insert_canaries and inserted.size:
            directions = matrix[inserted].sum(0, dtype=np.float64) if matrix is not None else canaries.sum_of(inserted, memory_budget_bytes=memory_budget_bytes)
            total += clip * directions
            within += inserted.size  # a canary's norm is exactly C_t
        canary_seconds += time.perf_counter() - canary_started
        aggregate = (total + update_noise * clip * noise_rng.standard_normal(theta.size)) / denominator
        if track_all:
            canary_started = time.perf_counter()
            np.maximum(max_cosines, _cosines(canaries, matrix, aggregate, memory_budget_bytes), out=max_cosines)
            canary_seconds += time.perf_counter() - canary_started
        theta = optimizer.step(theta, aggregate)
        if config.adaptive_clipping:
            fraction = (within + count_noise * clip_rng.standard_normal()) / denominator
            clip *= float(np.exp(-config.clip_learning_rate * (fraction - config.target_quantile)))
    canary_started = time.perf_counter()
    final = _cosines(canaries, matrix, theta - theta0, memory_budget_bytes)
    canary_seconds += time.perf_counter() - canary_started
    return FedAvgRun(
        final_cosines=final,
        max_cosines=max_cosines,
        num_observed=num_observed,
        participations=participations,
        dimension=int(theta.size),
        denominator=float(denominator),
        test_accuracy=_accuracy(theta, data.x_test.astype(np.float64), data.y_test, shapes),
        clip_norms=clip_norms,
        seconds=time.perf_counter() - started,
        canary_seconds=canary_seconds,
        seed=seed,
    )


def model_dimension(num_features: int, num_classes: int, hidden: int) -> int:
    """Parameter count of the simulator's MLP.

    >>> model_dimension(64, 10, 128)  # digits
    9610
    """
    return sum(int(np.prod(shape)) for shape in _shapes(num_features, hidden, num_classes))
