"""An MST-style tabular generator (McKenna et al. 2021), fitted with ``mbi`` (Private-PGM).

MST measures every one-way marginal and the two-way marginals along a
maximum spanning tree of the columns, fits a graphical model to those
measurements with Private-PGM, and samples from the model. Here:

* columns with at most ``max_bins`` distinct values are categorical; others
  are cut into ``max_bins`` quantile bins and decoded uniformly inside the
  bin (rounded for integer-valued columns), so no real value is copied;
* the label is one more column, so records come with their labels;
* the tree is the maximum spanning tree of the pairwise mutual information
  (MST's selection without the privacy noise); ``noise_scale`` > 0 adds
  Gaussian noise of that standard deviation to every measured count, as
  MST does when the generator itself must be differentially private;
* records are drawn i.i.d. by ancestral sampling along the tree from the
  fitted model's marginals (mbi's own ``synthetic_data`` rounds counts to
  match marginals, which makes rows dependent; PANORAMIA's game assumes
  i.i.d. generated points).

Needs the ``panoramia`` extra (``mbi``, which uses JAX).
"""

from __future__ import annotations

import warnings

import numpy as np

from .._core.extras import require
from .._core.validation import check_count, check_positive

__all__ = ["MSTGenerator"]


def _require_mbi():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mbi warns about JAX's float32 default at import
        return require("mbi", purpose="the tabular generator")


def _mutual_information(a: np.ndarray, b: np.ndarray, size_a: int, size_b: int) -> float:
    joint = np.bincount(a * size_b + b, minlength=size_a * size_b).reshape(size_a, size_b) / a.size
    outer = joint.sum(1, keepdims=True) * joint.sum(0, keepdims=True)
    mask = joint > 0
    return float(np.sum(joint[mask] * np.log(joint[mask] / outer[mask])))


def _spanning_tree(codes: np.ndarray, sizes: list[int]) -> list[tuple[int, int]]:
    """Edges (parent, child) of the maximum mutual-information tree, rooted at the last column."""
    from scipy.sparse.csgraph import breadth_first_order, minimum_spanning_tree

    d = codes.shape[1]
    weights = np.zeros((d, d))
    for i in range(d):
        for j in range(i + 1, d):
            # shifted so that independent pairs still form an edge (zero weight means "no edge")
            weights[i, j] = 1.0 + _mutual_information(codes[:, i], codes[:, j], sizes[i], sizes[j])
    tree = minimum_spanning_tree(-weights)
    symmetric = (tree + tree.T) != 0
    order, parents = breadth_first_order(symmetric, d - 1, directed=False)
    return [(int(parents[child]), int(child)) for child in order[1:]]


class MSTGenerator:
    """MST-style generator of tabular records (features and label) via mbi.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 3, size=(400, 3)).astype(float)
    >>> y = (x[:, 0] > 0).astype(int)
    >>> generator = MSTGenerator().fit(x, y, seed=0)
    >>> fake_x, fake_y = generator.sample(5000, seed=1)
    >>> fake_x.shape, bool(np.mean((fake_y == 1) != (fake_x[:, 0] > 0)) < 0.01)  # y is a function of x0
    ((5000, 3), True)
    """

    def __init__(self, *, max_bins: int = 16, noise_scale: float = 0.0, iterations: int = 1000):
        self.max_bins = check_count(max_bins, "max_bins", minimum=2)
        self.noise_scale = check_positive(noise_scale, "noise_scale", allow_zero=True)
        self.iterations = check_count(iterations, "iterations", minimum=1)

    def _encode(self, x: np.ndarray, y: np.ndarray):
        self._columns = []  # per feature: ("values", array) or ("bins", edges, integer-valued)
        codes = []
        for column in x.T:
            values = np.unique(column)
            if values.size <= self.max_bins:
                self._columns.append(("values", values))
                codes.append(np.searchsorted(values, column))
            else:
                edges = np.unique(np.quantile(column, np.linspace(0, 1, self.max_bins + 1)))
                integer = bool(np.all(column == np.round(column)))
                self._columns.append(("bins", edges, integer))  # type: ignore[arg-type]
                codes.append(np.clip(np.searchsorted(edges, column, side="right") - 1, 0, edges.size - 2))
        self._num_classes = int(y.max()) + 1
        codes.append(y)
        sizes = [len(c[1]) if c[0] == "values" else c[1].size - 1 for c in self._columns] + [self._num_classes]
        return np.stack(codes, axis=1).astype(np.int64), sizes

    def fit(self, x, y, *, seed: int = 0) -> MSTGenerator:
        """Fit on real records ``x`` (n, d) with integer labels ``y`` (n,)."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.int64)
        if x.ndim != 2 or y.shape != (x.shape[0],) or x.shape[0] < 2:
            raise ValueError(f"`x` must be (n, d) with n >= 2 and `y` of shape (n,), got {x.shape} and {y.shape}")
        mbi = _require_mbi()
        codes, sizes = self._encode(x, y)
        names = [f"c{j}" for j in range(codes.shape[1])]
        data = mbi.Dataset({name: codes[:, j] for j, name in enumerate(names)}, mbi.Domain(names, sizes))
        self._edges = _spanning_tree(codes, sizes)
        rng = np.random.default_rng(seed)
        cliques = [(name,) for name in names] + [(names[p], names[c]) for p, c in self._edges]
        measurements = []
        for clique in cliques:
            counts = np.asarray(data.project(clique).datavector())
            if self.noise_scale > 0:
                counts = counts + rng.normal(0.0, self.noise_scale, counts.shape)
            measurements.append(mbi.LinearMeasurement(counts, clique, stddev=max(self.noise_scale, 1.0)))
        model = mbi.estimation.MirrorDescent().estimate(data.domain, measurements, iters=self.iterations)
        root = np.clip(np.asarray(model.project((names[-1],)).datavector(), dtype=np.float64), 0, None)
        self._root = root / root.sum()
        self._conditionals = []
        for parent, child in self._edges:
            joint = np.asarray(
                model.project((names[parent], names[child])).transpose((names[parent], names[child])).datavector(flatten=False), dtype=np.float64
            )
            joint = np.clip(joint, 0, None) + 1e-12  # a parent value the model gives no mass still gets a row
            self._conditionals.append(joint / joint.sum(1, keepdims=True))
        return self

    def _decode(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = np.empty((codes.shape[0], len(self._columns)))
        for j, column in enumerate(self._columns):
            if column[0] == "values":
                out[:, j] = column[1][codes[:, j]]
                continue
            _, edges, integer = column  # type: ignore[misc]
            low, high = edges[codes[:, j]], edges[codes[:, j] + 1]
            values = low + rng.random(codes.shape[0]) * (high - low)
            out[:, j] = np.clip(np.round(values), low, high) if integer else values
        return out

    def sample(self, n: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` i.i.d. records by ancestral sampling along the tree; returns (x, y)."""
        n = check_count(n, "n", minimum=1)
        if not hasattr(self, "_root"):
            raise ValueError("the generator must be fitted before sampling: call fit(x, y) first")
        rng = np.random.default_rng(seed)
        codes = np.zeros((n, len(self._columns) + 1), dtype=np.int64)
        codes[:, -1] = rng.choice(self._root.size, size=n, p=self._root)
        for (parent, child), conditional in zip(self._edges, self._conditionals):
            cumulative = np.cumsum(conditional[codes[:, parent]], axis=1)
            draws = rng.random(n)[:, None] * cumulative[:, -1:]
            codes[:, child] = np.minimum((draws >= cumulative).sum(1), conditional.shape[1] - 1)
        return self._decode(codes, rng), codes[:, -1].copy()
