"""Paired interval and randomization test: seeded, right on clear-cut cases, and never claiming
more than a handful of questions know."""

from __future__ import annotations

import numpy as np
import pytest

from ragassay.metrics.averaging import bounded_mean_interval, mean_interval
from ragassay.metrics.levels import MIN_BOOTSTRAP_QUESTIONS
from ragassay.metrics.significance import ALPHA, RESAMPLES, compare_paired, randomization_p


def test_identical_configurations_differ_by_nothing():
    scores = np.tile([0.2, 0.5, 1.0, 0.0], 8)
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


@pytest.mark.parametrize(
    ("differences", "p"),
    [
        # Better on 5 of 6 questions, tied on 1 (issue 71): 4 of the 64 flips are as extreme.
        ([0.369] * 5 + [0.0], 4 / 64),
        # Better on all of 5: 2 of 32. No 5 questions can reject anything at 0.05.
        ([0.369] * 5, 2 / 32),
        # Better on all of 6: 2 of 64, significant.
        ([0.2] * 6, 2 / 64),
    ],
)
def test_a_handful_of_questions_gets_the_exact_test_and_an_interval_that_agrees_with_it(differences, p):
    d = np.array(differences)
    result = compare_paired(np.zeros(len(d)), d)
    assert result.interval == "sign-flip" and result.p_value == pytest.approx(p)
    excludes_zero = result.ci_low > 0 or result.ci_high < 0
    assert excludes_zero == (result.p_value < ALPHA)
    assert result.ci_low - 1e-9 <= result.mean_difference <= result.ci_high + 1e-9
    if len(d) == 5:
        assert (result.ci_low, result.ci_high) == (-1.0, 1.0), "no difference can be rejected: every one is possible"


def test_the_interval_never_excludes_zero_beside_a_test_that_does_not_reject():
    rng = np.random.default_rng(71)
    for n in (3, 6, 9, 14, 19, 25, 40):
        for _ in range(30):
            d = rng.choice([-1.0, 0.0, 1.0], size=n, p=[0.15, 0.5, 0.35]) * rng.random(n)
            result = compare_paired(np.zeros(n), d, seed=int(rng.integers(1000)), resamples=2000)
            assert (result.ci_low > 0 or result.ci_high < 0) == (result.p_value < ALPHA), (n, result)
            assert result.interval == ("sign-flip" if n < MIN_BOOTSTRAP_QUESTIONS else result.interval)


def test_exact_flips_give_the_exact_p():
    # Three questions all +1: flips all-plus and all-minus are as extreme, 2 of 8.
    assert randomization_p(np.ones(3)) == pytest.approx(2 / 8)


def test_a_mean_over_few_questions_has_an_exact_interval_never_a_point():
    assert bounded_mean_interval([1.0] * 5)[0] == pytest.approx(0.4782, abs=1e-4)
    assert bounded_mean_interval([1.0] * 5)[1] == 1.0
    assert bounded_mean_interval([0.0] * 5) == (0.0, pytest.approx(0.5218, abs=1e-4))
    assert mean_interval([1.0] * 5) == bounded_mean_interval([1.0] * 5)
    low, high = mean_interval(list(np.linspace(0, 1, 40)))
    assert 0.35 < low < 0.5 < high < 0.65, "from MIN_BOOTSTRAP_QUESTIONS on, the bootstrap"
