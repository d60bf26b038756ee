"""Seeded worlds where the true supported rate is known, for measuring how often a judge-corrected
interval (metrics/judge_error.corrected_mean) holds it: its coverage. The tests run each setting
on a few hundred worlds, enough to catch an interval that is wrong; the precise figures (4,000 and
1,000 worlds a setting, a coverage measured to about +-0.004 and +-0.007) come from
`benchmarks/bench_interval_coverage.py`, which runs these same worlds."""

from __future__ import annotations

import numpy as np

from ragassay.judge.calibration import alignment
from ragassay.metrics.judge_error import LabelStratum, corrected_mean, simple_strata

# (true rate, labels, judge's sensitivity, judge's specificity): a judge that says "supported" too
# readily, as small models do, then one that says "unsupported" too readily.
BIASED_JUDGES = (
    (0.3, 30, 0.95, 0.6),
    (0.5, 100, 0.95, 0.6),
    (0.7, 300, 0.95, 0.6),
    (0.9, 30, 0.7, 0.9),
    (0.9, 300, 0.7, 0.9),
)
# (true rate, questions) of small batches, judged with sensitivity and specificity 0.8, 100 labels.
SMALL_BATCHES = ((0.9, 8), (0.5, 8), (0.8, 5))
# (true rate, labels) of the aligned judge's world.
ALIGNED = ((0.6, 100),)


def biased_judge_world(rng, rate, labels, sensitivity, specificity, questions=150, pool_rate=0.7, pool=2000):
    """One seeded world: labels drawn as `judge label` draws them (half from each verdict of a
    labelled batch of `pool` statements whose true rate is pool_rate), then an evaluated batch of
    `questions` answers of 1-4 statements at the true rate, judged with the same error rates.
    Returns whether the corrected interval covers the true rate, and whether the raw one does."""
    judged_supported = sensitivity * pool_rate + (1 - specificity) * (1 - pool_rate)
    share_supported = {True: sensitivity * pool_rate / judged_supported}
    share_supported[False] = (1 - sensitivity) * pool_rate / (1 - judged_supported)
    size = {True: rng.binomial(pool, judged_supported)}
    size[False] = pool - size[True]
    strata = []
    for verdict in (True, False):
        supported = rng.binomial(labels // 2, share_supported[verdict])
        unsupported = labels // 2 - supported
        cells = (supported, 0, unsupported, 0) if verdict else (0, supported, 0, unsupported)
        strata.append(LabelStratum(str(verdict), float(size[verdict]), *cells))
    counts = rng.integers(1, 5, size=questions)
    truth = rng.random((questions, 4)) < rate
    verdicts = np.where(truth, rng.random((questions, 4)) < sensitivity, rng.random((questions, 4)) >= specificity)
    values = (verdicts * (np.arange(4) < counts[:, None])).sum(axis=1) / counts
    corrected = corrected_mean(list(values), strata, seed=int(rng.integers(1 << 30)), resamples=1000)
    picks = rng.integers(0, questions, size=(1000, questions))
    low, high = np.percentile(values[picks].mean(axis=1), [2.5, 97.5])
    return corrected.low <= rate <= corrected.high, low <= rate <= high


def aligned_judge_world(rng, rate: float, labels: int, questions: int = 150) -> bool:
    """One seeded world with an aligned judge: each statement's judge log-odds barely depends on
    its truth, a second signal does more (as numbers_found does). A simple random sample of
    labels is cross-fitted as align_judge does, the model fitted on all of them judges an
    evaluated batch (answers of 1-4 statements at the true rate), and the batch's mean is
    corrected with the cross-fitted verdicts' error rates. Whether the interval covers the rate."""

    def statements(count: int, truth: np.ndarray) -> np.ndarray:
        log_odds = rng.normal(np.where(truth, 1.0, 0.5), 1.0)
        signal = rng.normal(np.where(truth, 1.0, -0.5), 1.0)
        return np.column_stack([log_odds, signal, rng.normal(0, 1, count)])

    truth = rng.random(labels) < 0.7
    truth[:2] = [True, False]
    features = statements(labels, truth)
    groups = [str(i // 2) for i in range(labels)]
    cross_fitted, _ = alignment.cross_fitted_probabilities(features, truth, groups, int(rng.integers(1 << 30)))
    model = alignment.aligned_model(0).fit(features, truth)
    strata = simple_strata(list(truth), list(cross_fitted >= 0.5))
    counts = rng.integers(1, 5, size=questions)
    evaluated = rng.random((questions, 4)) < rate
    verdicts = model.predict_proba(statements(questions * 4, evaluated.ravel()))[:, 1].reshape(questions, 4) >= 0.5
    values = (verdicts * (np.arange(4) < counts[:, None])).sum(axis=1) / counts
    corrected = corrected_mean(list(values), strata, seed=int(rng.integers(1 << 30)), resamples=1000)
    return corrected.low <= rate <= corrected.high


def coverage(world, replications: int, *setting, seed: int = 2026, **options) -> np.ndarray:
    """The mean over `replications` seeded worlds of what `world` returns (a share, or a share per
    interval when it returns several)."""
    rng = np.random.default_rng(seed)
    return np.mean([world(rng, *setting, **options) for _ in range(replications)], axis=0)
