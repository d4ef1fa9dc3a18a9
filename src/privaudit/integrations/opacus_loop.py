"""The user's Opacus loop, observed step by step and held against what its accountant assumes.

Opacus' accountant assumes Poisson sampling at rate q, one noisy step per
recorded entry, per-sample clipping of records that do not mix, and the σ it
recorded. :class:`LoopRecorder` notes, at each ``optimizer.step()`` that
noises, what fed it: the (logical) batch size, the forward/backward passes
accumulated into it, which records were in it (where the data loader's
dataset is a ``TensorDataset`` whose rows can be matched), the BatchNorm
layers in training mode, and the accountant's entries. :func:`loop_checks`
then tests each assumption, with a stated false-alarm rate where it is
statistical (:mod:`privaudit.stats.sampling_checks`, each at ``LOOP_ALPHA``),
and turns each mismatch into a finding: its cause, in one sentence a user can
act on, and how much it matters where that is known.

>>> checks = loop_checks(LoopRecord(batch_sizes=(64,) * 30, passes=(1,) * 30, dataset_size=1797), sample_rate=1 / 29, run_steps=30,
...                      delta=1e-5, sigma=1.0, loader_kind="DataLoader")
>>> [check.name for check in checks if check.finding]
['batch sizes']
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._core.results import Result
from ..stats.conversions import gaussian_epsilon
from ..stats.sampling_checks import binomial_total_pvalue, largest_cosine_pvalue, largest_count_pvalue, tied_values_pvalue
from ..stats.shuffling import shuffled_epsilon_lower_bound

__all__ = ["LOOP_ALPHA", "LoopCheck", "LoopRecord", "LoopRecorder", "loop_checks", "loader_kind", "noise_reuse_check"]

LOOP_ALPHA = 1e-4  # false-alarm rate of each statistical check on a correct Poisson loop
SHUFFLED_SAMPLES = 100_000  # Monte Carlo draws per direction of the shuffled loop's lower bound (about 3 s at the zoo's 87 steps)
REUSE_STEPS = 20_000  # the noise-reuse check compares every pair among the first this many noisy steps


@dataclasses.dataclass(frozen=True)
class LoopRecord(Result):
    """What the audited noised steps were fed: one entry per step (BatchMemoryManager's micro-batches summed into their step)."""

    batch_sizes: tuple[int, ...]
    passes: tuple[int, ...]  # forward/backward passes accumulated into the step (Opacus' accumulated_iterations)
    dataset_size: int | None = None
    record_counts: tuple[int, ...] | None = None  # per record of the dataset, where rows were matched
    unmatched_rows: int = 0
    batchnorm_in_training: tuple[str, ...] = ()
    accountant_steps: int | None = None  # entries the accountant recorded while the auditor was attached
    accountant_steps_before: int | None = None  # entries it already held when the auditor was first attached
    divisors: tuple[float, ...] = ()  # what Opacus divided each noisy sum by (expected_batch_size × passes; 1 with loss_reduction "sum")


@dataclasses.dataclass(frozen=True)
class LoopCheck(Result):
    """One assumption of the accounting, what was observed, and the finding when they disagree (None: consistent or not tested)."""

    name: str
    observed: str
    p_value: float | None = None
    finding: str | None = None


def loader_kind(data_loader) -> str | None:
    """The data loader's class and, where not Opacus' own, its sampler's: what make_private handed back, as the user passed it."""
    if data_loader is None:
        return None
    sampler = getattr(getattr(data_loader, "batch_sampler", None), "sampler", None) or getattr(data_loader, "sampler", None)
    kind = type(data_loader).__name__
    return kind if kind == "DPDataLoader" or sampler is None else f"{kind} with {type(sampler).__name__}"


class LoopRecorder:
    """Collects a :class:`LoopRecord` from inside the auditor's wrappers; reads the user's objects, never changes them."""

    def __init__(self, model, data_loader, accountant):
        import torch

        self.accountant = accountant
        self.dataset_size = None
        self._index: dict[bytes, int] | None = None
        dataset = getattr(data_loader, "dataset", None)
        if dataset is not None and hasattr(dataset, "__len__"):
            self.dataset_size = len(dataset)
        if isinstance(dataset, torch.utils.data.TensorDataset) and len(dataset) <= 1_000_000:
            rows = dataset.tensors[0].detach().cpu().contiguous()
            self._shape, self._dtype = tuple(rows.shape[1:]), rows.dtype
            flat = rows.reshape(len(rows), -1).numpy()
            index: dict[bytes, int] = {}
            for i, row in enumerate(flat):
                index[row.tobytes()] = -1 if row.tobytes() in index else i  # duplicated rows cannot be told apart
            self._index = index
            self.counts = np.zeros(len(rows), dtype=np.int64)
        self._pending_rows: list[int] = []
        self.divisors: list[float] = []
        self.unmatched = 0
        self.batch_sizes: list[int] = []
        self.passes: list[int] = []
        self._pending_size = self._pending_passes = 0
        self.batchnorm = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        self.batchnorm_seen: set[str] = set()
        self._accountant_start = self._accountant_steps()

    def _accountant_steps(self) -> int | None:
        history = getattr(self.accountant, "history", None)
        return None if history is None else sum(int(count) for *_, count in history)

    @property
    def tracks_records(self) -> bool:
        return self._index is not None

    def forward(self, inputs) -> None:
        """A training forward pass: note which dataset rows it holds."""
        if self._index is None or not inputs:
            return
        x = inputs[0]
        if not hasattr(x, "shape") or tuple(x.shape[1:]) != self._shape or x.dtype != self._dtype:
            self.unmatched += int(len(x)) if hasattr(x, "__len__") else 1
            return
        flat = x.detach().cpu().contiguous().reshape(len(x), -1).numpy()
        for row in flat:
            found = self._index.get(row.tobytes())
            if found is None:
                self.unmatched += 1
            elif found >= 0:
                self._pending_rows.append(found)

    def step(self, size: int, passes: int, proceed: bool, divisor: float = 1.0) -> None:
        """A call of the optimizer's pre_step: ``size`` rows in ``passes`` passes; ``proceed`` when it noised (not a skipped micro-batch).

        ``divisor`` is what Opacus divided the step's noisy sum by.
        """
        self._pending_size += size
        self._pending_passes = max(self._pending_passes, passes)
        self.batchnorm_seen.update(name for name, m in self.batchnorm if m.training)
        if not proceed:
            return
        self.batch_sizes.append(self._pending_size)
        self.passes.append(self._pending_passes)
        self.divisors.append(float(divisor))
        if self._index is not None and self._pending_rows:
            np.add.at(self.counts, self._pending_rows, 1)
        self._pending_rows, self._pending_size, self._pending_passes = [], 0, 0

    def record(self) -> LoopRecord:
        now, start = self._accountant_steps(), self._accountant_start
        return LoopRecord(
            batch_sizes=tuple(self.batch_sizes),
            passes=tuple(self.passes),
            dataset_size=self.dataset_size,
            record_counts=None if self._index is None else tuple(int(c) for c in self.counts),
            unmatched_rows=self.unmatched,
            batchnorm_in_training=tuple(sorted(self.batchnorm_seen)),
            accountant_steps=None if now is None or start is None else now - start,
            accountant_steps_before=start,
            divisors=tuple(self.divisors),
        )


def shuffled_epsilon(sigma: float, delta: float, epochs: int) -> float:
    """ε(δ) of ``epochs`` Gaussian mechanisms at σ (sensitivity 1): each record in one step per epoch, no amplification credited.

    An upper bound for shuffled fixed-size batches whatever the permutation
    where a neighbouring dataset replaces the record by one of zero gradient
    (the adversary told where each record went can only learn more), exact
    GDP composition (μ = √epochs / σ), rounded up. Not under add/remove, the
    adjacency of the Poisson accounting: there one record more or less also
    changes the size of the short batch, at a known step, so this is no upper
    bound (:func:`~privaudit.stats.shuffling.shuffled_epsilon_lower_bound`
    gives a lower one).

    >>> round(shuffled_epsilon(1.0, 1e-5, 1), 2)
    4.38
    """
    return float(gaussian_epsilon(sigma, delta, num_steps=max(1, int(epochs))))


def _batch_checks(
    record: LoopRecord, q: float, n: int, loader: str | None, sigma: float, delta: float, run_steps: int, shuffled: bool, seed: int
) -> list[LoopCheck]:
    sizes = np.asarray(record.batch_sizes, dtype=np.int64)
    checks = []
    values, counts = np.unique(sizes[sizes > 0], return_counts=True)
    common = f"{counts.max()} of {len(sizes)} steps had {values[counts.argmax()]} records" if len(values) else "no non-empty step"
    p_tied = tied_values_pvalue(sizes, n=n, p=q)
    finding = None
    if p_tied < LOOP_ALPHA:
        epochs = math.ceil(run_steps * q - 1e-9)
        eps = shuffled_epsilon(sigma, delta, epochs)
        if loader is not None and loader.startswith("DPDataLoader"):
            cause = (
                "the batches that fed optimizer.step() did not come from the DPDataLoader that make_private returned (its batch sizes vary): "
                "iterate that loader, not your own"
            )
        elif loader is not None:
            cause = f"make_private returned a {loader} (poisson_sampling=False), yet Opacus' accountant accounts Poisson sampling: pass poisson_sampling=True"
        else:
            cause = "the loop's batches are not Poisson-sampled, as Opacus' accountant assumes: iterate the DPDataLoader that make_private returns"
        finding = f"batch sizes are fixed ({common}; Poisson sampling at q = {q:.4g} of {n} records gives binomial sizes, p ≤ {p_tied:.2g}): {cause}."
        if shuffled:
            steps = max(1, round(1.0 / q))
            low = shuffled_epsilon_lower_bound(sigma, steps, epochs, delta, samples=SHUFFLED_SAMPLES, seed=seed)
            finding += (
                f" Each record was in one batch per epoch: the {epochs} epoch(s) of {steps} steps that ran have ε ≥ {low.epsilon:.4g} "
                f"({low.confidence:.0%} Monte Carlo lower bound, other records' gradients opposing it; Annamalai et al., arXiv:2411.10614) "
                f"at δ = {delta:g}, add/remove as the accountant; ε ≤ {eps:.4g} only where a neighbour replaces the record by one of zero "
                "gradient (E Gaussian steps, no amplification by shuffling): with a record more or less the short batch changes too"
            )
    checks.append(LoopCheck("batch sizes", f"{common}; sizes {sizes.min()}–{sizes.max()}", p_tied, finding))
    total = int(sizes.sum())
    trials = n * len(sizes)
    p_rate = binomial_total_pvalue(min(total, trials), n=trials, p=q)
    rate = total / trials
    finding = None
    if p_rate < LOOP_ALPHA:
        finding = (
            f"the observed sampling rate {rate:.4g} ({total} records in {len(sizes)} steps of {n}) differs from the q = {q:.4g} the accountant "
            f"recorded (p ≤ {p_rate:.2g}): account the loop at the rate that ran, or feed the steps from the loader make_private returned"
        )
    checks.append(LoopCheck("sampling rate", f"{rate:.4g} observed, {q:.4g} accounted", p_rate, finding))
    return checks


def _record_checks(record: LoopRecord, q: float, loader: str | None) -> list[LoopCheck]:
    counts = np.asarray(record.record_counts, dtype=np.int64)
    steps = len(record.batch_sizes)
    checks = []
    p_heavy = largest_count_pvalue(counts, trials=steps, p=q)
    finding = None
    if p_heavy < LOOP_ALPHA:
        where = f" (the loader's sampler: {loader.split(' with ')[-1]})" if loader and " with " in loader else ""
        finding = (
            f"record {int(counts.argmax())} was in {int(counts.max())} of {steps} steps, which Poisson sampling at q = {q:.4g} allows with "
            f"p ≤ {p_heavy:.2g}: records are drawn with unequal probability{where}, so the accountant's q understates the heaviest records' rate; "
            "sample uniformly (Opacus' DPDataLoader) or account the largest per-record rate"
        )
    checks.append(LoopCheck("per-record inclusion", f"largest count {int(counts.max())} in {steps} steps", p_heavy, finding))
    p_even = tied_values_pvalue(counts, n=steps, p=q, exclude_zero=False)
    finding = None
    if p_even < LOOP_ALPHA and not checks[0].finding:  # a heavy record already explains an uneven spread
        values, ties = np.unique(counts, return_counts=True)
        finding = (
            f"{ties.max()} of {len(counts)} records were in exactly {values[ties.argmax()]} steps (p ≤ {p_even:.2g} under Poisson sampling): "
            "each record once per epoch means shuffled batches, which Opacus' accountant does not cover"
        )
    checks.append(LoopCheck("per-record regularity", f"{len(np.unique(counts))} distinct counts over {len(counts)} records", p_even, finding))
    return checks


def loop_checks(
    record: LoopRecord, *, sample_rate: float | None, run_steps: int, delta: float, sigma: float, loader_kind: str | None, seed: int = 0
) -> tuple[LoopCheck, ...]:
    """Each assumption of Opacus' accounting against what the loop did; a check with a ``finding`` flags the run.

    ``seed`` seeds the Monte Carlo lower bound on a shuffled loop's ε (:func:`~privaudit.stats.shuffling.shuffled_epsilon_lower_bound`).
    """
    checks: list[LoopCheck] = []
    n, q = record.dataset_size, sample_rate
    if not record.batch_sizes:
        return ()
    if n and q:
        # every row of every step matched to a record (a model fed by keyword, or transformed inputs, leave it untested)
        matched = record.record_counts is not None and not record.unmatched_rows and sum(record.record_counts) == sum(record.batch_sizes)
        per_record = _record_checks(record, q, loader_kind) if matched else []
        heavy = any(check.finding for check in per_record[:1])
        # the shuffling ε holds where every record was in one batch per epoch: seen, or a loader without replacement and no heavy record
        shuffled = not heavy and "WeightedRandomSampler" not in str(loader_kind) and (not per_record or bool(per_record[1].finding))
        checks += _batch_checks(record, q, n, loader_kind, sigma, delta, run_steps, shuffled, seed)
        checks += per_record
    else:
        checks.append(LoopCheck("batch sizes", "not tested: pass data_loader= (the loader make_private returned) and the accountant for N and q"))
    many = max(record.passes)
    checks.append(
        LoopCheck(
            "passes per noisy step",
            f"up to {many}",
            finding=None
            if many == 1
            else (
                f"{many} forward/backward passes were accumulated into one noisy step: Opacus accounts them as one Poisson batch at rate {many}·q, "
                f"but a record can be in several of them (sensitivity up to {many}·C), which that accounting does not cover; "
                "use BatchMemoryManager for large logical batches"
            ),
        )
    )
    bn = record.batchnorm_in_training
    checks.append(
        LoopCheck(
            "layers that mix samples",
            ", ".join(bn) or "none in training mode",
            finding=None
            if not bn
            else (
                f"BatchNorm layer(s) {', '.join(bn)} ran in training mode: each record's output depends on its batch, so clipping one "
                "record's gradient does not bound its influence; replace them (opacus.validators.ModuleValidator.fix uses GroupNorm)"
            ),
        )
    )
    checks += _divisor_checks(record)
    if record.accountant_steps is not None:
        ran = len(record.batch_sizes)
        checks.append(
            LoopCheck(
                "accountant entries",
                f"{record.accountant_steps} recorded, {ran} noisy steps taken",
                finding=None
                if record.accountant_steps == ran
                else (
                    f"the accountant recorded {record.accountant_steps} steps while the optimizer took {ran} noisy steps: it is not the accountant "
                    "of this optimizer (a second make_private?); report the ε of the accountant that recorded every step"
                ),
            )
        )
    return tuple(checks)


def _divisor_checks(record: LoopRecord) -> list[LoopCheck]:
    """The noisy sum divided by one fixed number, as the accountant assumes (Opacus: expected_batch_size, never the realised size)."""
    if not record.divisors:
        return []
    per_pass = np.asarray(record.divisors, dtype=np.float64) / np.asarray(record.passes, dtype=np.float64)
    values = np.unique(per_pass)
    observed = f"{values[0]:g}" if len(values) == 1 else f"{len(values)} values, {values.min():g}–{values.max():g}"
    finding = None
    if len(values) > 1:
        realised = int(np.sum(per_pass == np.asarray(record.batch_sizes) / np.asarray(record.passes)))
        finding = (
            f"the noisy sum was divided by {len(values)} different numbers over {len(per_pass)} noisy steps ({values.min():g} to "
            f"{values.max():g}; the realised batch size at {realised} of them): optimizer.expected_batch_size was changed during the run. "
            "Dividing by the realised batch size makes the update depend on how many records were sampled, which one record's presence "
            "changes, and Opacus' accountant assumes a fixed divisor: leave expected_batch_size as make_private set it"
        )
    return [LoopCheck("divisor of the noisy sum", observed, finding=finding)]


def noise_reuse_check(fingerprints) -> LoopCheck:
    """The largest |cosine| between two noisy steps' noise (the same coordinates of the user's parameters) against independent draws.

    The p-value is :func:`~privaudit.stats.sampling_checks.largest_cosine_pvalue`'s
    (an exact Beta tail, times the number of pairs). Noise drawn again from
    the same generator state (a seed reset each step, a generator made anew)
    gives cos = 1 and p = 0.

    >>> rng = np.random.default_rng(0)
    >>> noise_reuse_check(rng.normal(size=(50, 64))).finding is None
    True
    >>> noise_reuse_check(np.tile(rng.normal(size=64), (3, 1))).p_value
    0.0
    """
    steps = np.asarray(fingerprints, dtype=np.float64)[:REUSE_STEPS]
    count, length = steps.shape
    if count < 2 or length < 2:
        return LoopCheck("noise reused across steps", "not tested: fewer than two noisy steps")
    p, largest, pair = largest_cosine_pvalue(steps)
    finding = None
    if p < LOOP_ALPHA:
        finding = (
            f"the noise of noisy steps {pair[0]} and {pair[1]} is the same draw (|cosine| {largest:.4f} over {length} coordinates of your "
            f"parameters; independent noise allows it with p ≤ {p:.2g}): noise reused across steps adds no privacy, so the accounting "
            "does not hold. Do not reset torch's seed (or the optimizer's generator) inside the loop"
        )
    tested = "" if len(fingerprints) <= REUSE_STEPS else f" (the first {REUSE_STEPS} noisy steps)"
    return LoopCheck("noise reused across steps", f"largest |cosine| {largest:.3g} over {count} steps{tested}", p, finding)


def noise_check(standardised, sigma: float, *, where: str = "coordinates of your parameters' noise") -> LoopCheck:
    """Σ z² of the noise (each value in units of σ·C read at its step) against χ²(n), two-sided: the σ read is the σ applied.

    >>> noise_check(np.random.default_rng(0).normal(size=5000), 1.0).finding is None
    True
    >>> noise_check(np.random.default_rng(0).normal(size=5000) * 0.9, 1.0).observed
    'measured 0.8959 × σ read'
    """
    from scipy import stats

    z = np.asarray(standardised, dtype=np.float64)
    statistic = float(np.sum(z**2))
    p = float(min(1.0, 2 * min(stats.chi2.cdf(statistic, len(z)), stats.chi2.sf(statistic, len(z)))))
    scale = math.sqrt(statistic / len(z))
    finding = None
    if p < LOOP_ALPHA:
        finding = (
            f"the noise applied is {scale:.4g} × the σ = {sigma:.4g} read from the optimizer (p ≤ {p:.2g} over {len(z)} {where}): "
            "the optimizer does not noise with the noise_multiplier it reports"
        )
    return LoopCheck("noise scale", f"measured {scale:.4g} × σ read", p, finding)
