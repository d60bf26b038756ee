"""Paired bootstrap interval and randomization test: seeded, and right on clear-cut cases."""

from __future__ import annotations

import numpy as np
import pytest

from ragassay.metrics.significance import RESAMPLES, compare_paired


def test_identical_configurations_differ_by_nothing():
    scores = np.array([0.2, 0.5, 1.0, 0.0])
    result = compare_paired(scores, scores)
    assert (result.mean_difference, result.ci_low, result.ci_high, result.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_a_consistent_improvement_is_significant():
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 0.5, size=60)
    b = a + 0.3
    result = compare_paired(a, b, seed=3)
    assert result.mean_difference == pytest.approx(0.3)
    assert result.ci_low == pytest.approx(0.3) and result.ci_high == pytest.approx(0.3)
    assert result.p_value == pytest.approx(1 / (RESAMPLES + 1))


def test_noise_is_not_significant_and_the_interval_covers_zero():
    rng = np.random.default_rng(2)
    a = rng.uniform(size=40)
    b = a + rng.normal(0, 0.2, size=40)
    result = compare_paired(a, b, seed=0)
    assert result.ci_low < 0 < result.ci_high or result.p_value > 0.05
    assert 0 < result.p_value <= 1


def test_the_same_seed_gives_the_same_answer():
    rng = np.random.default_rng(3)
    a, b = rng.uniform(size=30), rng.uniform(size=30)
    assert compare_paired(a, b, seed=5) == compare_paired(a, b, seed=5)
    assert compare_paired(a, b, seed=5) != compare_paired(a, b, seed=6)


def test_unpaired_shapes_are_refused():
    with pytest.raises(ValueError, match="equal 1-d shapes"):
        compare_paired(np.zeros(3), np.zeros(4))
