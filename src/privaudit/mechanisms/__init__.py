"""Testing any differentially private mechanism from its samples.

A mechanism is a callable ``fn(dataset, size, rng) -> samples`` that returns
``size`` independent outputs of the mechanism run on ``dataset`` (a numpy
array of records), drawing its randomness from ``rng`` (a
``numpy.random.Generator``). The outputs are scalars (shape ``(size,)``),
vectors (``(size, d)``) or tables (``(size, rows, columns)``).

* :mod:`.sampling`: importing a mechanism, checking what it returns, drawing samples,
  and :func:`.sampling.from_release` for a function that releases one output per call;
* :mod:`.claims`: the claim under test, (ε, δ)-DP or ρ-zCDP, as the (ε, δ) that is tested;
* :mod:`.statistics`: distinguishing statistics fitted on pilot samples;
* :mod:`.learned`: the learned ones among them, density-ratio regions and a classifier's score;
* :mod:`.tester`: held-out threshold tests in both directions, Bonferroni over all, the verdict;
* :mod:`.neighbours`: the neighbouring dataset, checked when given, and the candidates of a search;
* :mod:`.search`: the pair (D, D') searched on the search's own samples, then a local search;
* :mod:`.examples`: correct mechanisms that ship with privaudit (the default audit's).
"""
