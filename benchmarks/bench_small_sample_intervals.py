"""How many questions a percentile bootstrap interval needs before it covers what it claims.

    .venv/bin/python benchmarks/bench_small_sample_intervals.py [--simulations 2000]

For each number of questions n and each kind of per-question score, SIMULATIONS samples are
drawn from a known population; each gets the interval ragassay prints, and the share of samples
whose interval holds the population's true value is its coverage (95% claimed). Printed for:

- the percentile bootstrap of a paired difference (metrics/significance.compare_paired as it was
  for every n), and the exact sign-flip interval it is replaced by below MIN_BOOTSTRAP_QUESTIONS
  (significance.randomization_interval);
- the percentile bootstrap of a mean of scores in [0, 1] (metrics/averaging), and the
  Clopper-Pearson interval it is replaced by below that size (averaging.bounded_mean_interval);
- how often an interval excludes 0 while the randomization test does not reject (must be never).

Populations (per-question values of real metrics' shapes): `binary` differences of recall@1-like
scores (-1 with 0.1, 0 with 0.6, +1 with 0.3), `graded` nDCG-like differences (0 with 0.5, else
a difference of two Beta(2, 2) draws, shifted by +0.1), `skewed` judged scores (Beta(5, 1)) for
means, and `rare` (1 with 0.1, else 0) for means.
"""

from __future__ import annotations

import argparse

import numpy as np

from ragassay.metrics.averaging import bounded_mean_interval
from ragassay.metrics.significance import ALPHA, compare_paired, randomization_interval

SIZES = (3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50)
RESAMPLES = 2000


def _graded(rng: np.random.Generator, n: int) -> np.ndarray:
    changed = rng.random(n) >= 0.5
    return np.where(changed, np.clip(rng.beta(2, 2, n) - rng.beta(2, 2, n) + 0.1, -1, 1), 0.0)


GRADED_TRUTH = float(_graded(np.random.default_rng(1), 4_000_000).mean())


def differences(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    if kind == "binary":
        return rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.1, 0.6, 0.3]), 0.2
    return _graded(rng, n), GRADED_TRUTH


def scores(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    if kind == "skewed":
        return rng.beta(5, 1, n), 5 / 6
    return (rng.random(n) < 0.1).astype(float), 0.1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--simulations", type=int, default=2000)
    arguments = parser.parse_args()
    rng = np.random.default_rng(71)
    print(
        "paired differences: coverage of the percentile bootstrap | of the sign-flip interval | "
        "bootstrap excluding 0 while p >= 0.05"
    )
    for kind in ("binary", "graded"):
        for n in SIZES:
            covered = inverted = disagree = 0
            for simulation in range(arguments.simulations):
                d, truth = differences(kind, n, rng)
                a = np.zeros(n)
                result = compare_paired(a, d, seed=simulation, resamples=RESAMPLES, bootstrap_always=True)
                covered += result.ci_low <= truth <= result.ci_high
                disagree += (result.ci_low > 0 or result.ci_high < 0) and result.p_value >= ALPHA
                low, high = randomization_interval(d, seed=simulation, resamples=RESAMPLES)
                inverted += low <= truth <= high
            s = arguments.simulations
            print(
                f"  {kind:<7} n={n:<3} bootstrap {covered / s:.3f}  sign-flip {inverted / s:.3f}  "
                f"bootstrap excludes 0 beside p>=0.05: {disagree / s:.3f}"
            )
    print("means of scores in [0, 1]: coverage of the percentile bootstrap | of Clopper-Pearson")
    for kind in ("skewed", "rare"):
        for n in SIZES:
            covered = exact = 0
            for _ in range(arguments.simulations):
                x, truth = scores(kind, n, rng)
                boot = x[rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=1)
                low, high = np.percentile(boot, [2.5, 97.5])
                covered += low <= truth <= high
                low, high = bounded_mean_interval(x)
                exact += low <= truth <= high
            s = arguments.simulations
            print(f"  {kind:<7} n={n:<3} bootstrap {covered / s:.3f}  Clopper-Pearson {exact / s:.3f}")


if __name__ == "__main__":
    main()
