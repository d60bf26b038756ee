"""Paired comparison of two configurations on the same questions: is the difference real?

Both tests are seeded, so the same scores always give the same interval and p-value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RESAMPLES = 10_000


@dataclass(frozen=True)
class PairedComparison:
    """Mean of (b - a) over questions, its bootstrap 95% interval, and a randomization p-value."""

    questions: int
    mean_difference: float
    ci_low: float
    ci_high: float
    p_value: float


def compare_paired(a: np.ndarray, b: np.ndarray, seed: int = 0, resamples: int = RESAMPLES) -> PairedComparison:
    """Compare per-question scores b against a (same questions, same order).

    - Bootstrap: resample the questions with replacement `resamples` times; the interval is the
      2.5th and 97.5th percentile of the resampled mean differences.
    - Randomization (sign-flip) test: under the null hypothesis the two labels are exchangeable
      per question, so each difference keeps or flips its sign at random;
      p = (1 + #{|mean of flipped differences| >= |observed mean|}) / (1 + resamples),
      two-sided, never 0.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired scores need equal 1-d shapes, got {a.shape} and {b.shape}")
    differences = b - a
    count = len(differences)
    if count == 0:
        return PairedComparison(0, 0.0, 0.0, 0.0, 1.0)
    observed = differences.mean()
    rng = np.random.default_rng(seed)
    bootstrap = np.empty(resamples)
    signed_means = np.empty(resamples)
    # In blocks, so memory stays bounded for large question sets.
    block = max(1, 2_000_000 // count)
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        picks = rng.integers(0, count, size=(size, count))
        bootstrap[start : start + size] = differences[picks].mean(axis=1)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, count))
        signed_means[start : start + size] = (signs * differences).mean(axis=1)
    low, high = np.percentile(bootstrap, [2.5, 97.5])
    # A tolerance, so that flips giving the observed mean up to rounding count as extreme.
    extreme = np.abs(signed_means) >= abs(observed) - 1e-12
    p_value = (1 + int(extreme.sum())) / (1 + resamples)
    return PairedComparison(count, float(observed), float(low), float(high), float(p_value))
