"""Judge-corrected estimates (metrics/judge_error.py): the formulas by hand, the edge cases in
writing, and the proof that the corrected interval covers the truth: a synthetic judge of known
sensitivity and specificity, a known true rate, 400 seeded worlds per setting (tests/coverage_worlds.py;
the benchmark runs 4,000)."""

from __future__ import annotations

import numpy as np
import pytest

from ragassay.metrics.judge_error import LabelStratum, corrected_difference, corrected_mean, error_rates, simple_strata
from ragassay.metrics.label_need import labels_for_width
from tests.coverage_worlds import BIASED_JUDGES, SMALL_BATCHES, biased_judge_world, coverage


def test_error_rates_of_a_simple_sample_are_the_confusion_matrix_ratios():
    # 40 supported labels, 34 judged supported; 10 unsupported, 6 judged unsupported.
    strata = simple_strata([True] * 40 + [False] * 10, [True] * 34 + [False] * 6 + [True] * 4 + [False] * 6)
    rates = error_rates(strata)
    assert (rates.sensitivity, rates.specificity) == pytest.approx((34 / 40, 6 / 10))
    assert rates.balanced_accuracy == pytest.approx((34 / 40 + 6 / 10) / 2)
    assert (rates.labelled, rates.labelled_supported, rates.labelled_unsupported) == (50, 40, 10)
    # The posterior of Se is Beta(34.5, 6.5): its 95% interval, not the plug-in's.
    assert rates.sensitivity_low < 34 / 40 < rates.sensitivity_high
    assert rates.sensitivity_low == pytest.approx(0.720, abs=0.01) and rates.sensitivity_high == pytest.approx(
        0.936, abs=0.01
    )


def test_strata_sampled_by_verdict_are_weighted_by_what_they_stand_for():
    """A batch of 900 judged-supported and 100 judged-unsupported statements, 20 labels drawn from
    each: of the supported verdicts' labels 18 are supported, of the unsupported verdicts' 5. Over
    the batch: supported statements judged supported 900*18/20 = 810, judged unsupported 100*5/20
    = 25, so Se = 810/835; unsupported judged unsupported 100*15/20 = 75 of 75 + 90, Sp = 75/165.
    Counted without weights (18/23 and 15/17) both would be wrong."""
    strata = [LabelStratum("supported", 900, 18, 0, 2, 0), LabelStratum("unsupported", 100, 0, 5, 0, 15)]
    rates = error_rates(strata)
    assert rates.sensitivity == pytest.approx(810 / 835) and rates.specificity == pytest.approx(75 / 165)


def test_the_corrected_mean_is_rogan_gladen():
    strata = simple_strata([True] * 80 + [False] * 40, [True] * 72 + [False] * 8 + [True] * 10 + [False] * 30)
    se, sp = 72 / 80, 30 / 40
    values = [1.0] * 30 + [0.5] * 10 + [0.0] * 10  # mean 0.7
    corrected = corrected_mean(values, strata, seed=3)
    assert corrected.raw == pytest.approx(0.7) and corrected.questions == 50
    assert corrected.estimate == pytest.approx((0.7 + sp - 1) / (se + sp - 1))
    assert corrected.low < corrected.estimate < corrected.high
    assert corrected_mean(values, strata, seed=3) == corrected, "seeded"
    assert corrected_mean([None, None], strata) is None, "nothing scored: nothing to correct"


def test_a_judge_the_labels_do_not_show_separating_the_classes_gets_no_estimate():
    # Balanced accuracy 0.5 on these labels: the judge says "supported" as often either way.
    strata = simple_strata([True] * 20 + [False] * 20, [True] * 15 + [False] * 5 + [True] * 15 + [False] * 5)
    assert not error_rates(strata).separable
    corrected = corrected_mean([1.0, 0.0, 1.0], strata)
    assert (corrected.estimate, corrected.low, corrected.high) == (None, 0.0, 1.0)
    assert error_rates(simple_strata([True] * 5, [True] * 5)).balanced_accuracy is None, "one class only"


def test_a_corrected_difference_is_the_raw_difference_over_youdens_index():
    strata = simple_strata([True] * 80 + [False] * 40, [True] * 72 + [False] * 8 + [True] * 10 + [False] * 30)
    youden = 72 / 80 + 30 / 40 - 1
    a, b = np.array([1.0, 0.0, 1.0, 0.5, 0.0, 1.0]), np.array([1.0, 1.0, 1.0, 1.0, 0.0, 1.0])
    corrected = corrected_difference(a, b, strata)
    assert corrected.raw == pytest.approx((b - a).mean())
    assert corrected.estimate == pytest.approx((b - a).mean() / youden), "the judge's offset cancels"
    assert -1 <= corrected.low <= corrected.estimate <= corrected.high <= 1


# Seeded worlds per setting here: 400 measure a coverage of 0.95 to about +-0.011 (one standard
# error), enough to catch an interval that is wrong, not to tell 0.94 from 0.95; the bounds allow
# three standard errors. `benchmarks/bench_interval_coverage.py` runs the same settings on 4,000
# worlds each (BENCHMARKS.md, "Coverage of the judge-corrected interval").
WORLDS = 400


@pytest.mark.parametrize(("rate", "labels", "sensitivity", "specificity"), BIASED_JUDGES)
def test_the_corrected_interval_covers_the_true_rate_where_the_raw_one_does_not(rate, labels, sensitivity, specificity):
    corrected, raw = coverage(biased_judge_world, WORLDS, rate, labels, sensitivity, specificity)
    assert 0.915 <= corrected <= 0.985, f"corrected coverage {corrected:.3f}"
    assert raw < 0.1, f"raw coverage {raw:.3f}: the judge's bias is outside the raw interval"


def test_a_few_questions_that_all_score_the_same_get_a_corrected_interval_not_a_point():
    """Resampling five questions that all score 1 would say that the mean is exactly 1, and the
    clipped correction would follow: the pseudo-questions at the bounds keep what five say."""
    strata = simple_strata([True] * 40 + [False] * 30, [True] * 36 + [False] * 4 + [True] * 6 + [False] * 24)
    for values in ([1.0] * 5, [0.0] * 5):
        corrected = corrected_mean(values, strata)
        assert corrected.high - corrected.low > 0.2, corrected
    same = corrected_difference(np.zeros(5), np.zeros(5), strata)
    assert same.estimate == 0.0 and same.low < -0.2 and same.high > 0.2


@pytest.mark.parametrize(("rate", "questions"), SMALL_BATCHES)
def test_the_corrected_interval_covers_the_true_rate_on_small_batches(rate, questions):
    corrected, _ = coverage(biased_judge_world, WORLDS, rate, 100, 0.8, 0.8, questions=questions)
    assert 0.915 <= corrected <= 0.985, f"corrected coverage {corrected:.3f}"


def test_the_default_judges_rates_elsewhere_differ_beyond_their_intervals_so_none_corrects_a_collection():
    """Why a collection without labels gets no corrected numbers: the default judge's error rates on
    two other collections lie outside each other's 95% intervals, so neither can stand in for a third."""
    from ragassay.evaluation.judge_correction import calibration_warnings
    from ragassay.judge.calibration.measured_rates import measured_elsewhere
    from ragassay.judge.learned_verdict import verdict_version
    from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION
    from ragassay.judge.support_rules import asking_threshold_for, support_threshold_for
    from ragassay.llm.settings import DEFAULT_JUDGE, model_id_of

    # The judge's own threshold rule (before its verdict was learned): measured on two collections.
    judge = model_id_of(DEFAULT_JUDGE)
    memerag, scifact = measured_elsewhere(judge, SUPPORT_PROMPT_VERSION, asking_threshold_for(judge))
    memerag_rates, scifact_rates = error_rates([memerag.stratum()]), error_rates([scifact.stratum()])
    assert memerag_rates.labelled == 66 and scifact_rates.labelled == 693
    assert not memerag_rates.sensitivity_low <= scifact.sensitivity <= memerag_rates.sensitivity_high
    assert not scifact_rates.specificity_low <= memerag.specificity <= scifact_rates.specificity_high
    # Its learned verdict (what evaluations use), measured on each collection held out of its fit,
    # differs from collection to collection just as much, and the warning says what it was
    # fitted on, its worst held-out figure, and each collection's rates.
    learned = verdict_version(judge)
    rates = {r.name: r for r in measured_elsewhere(judge, learned, support_threshold_for(judge))}
    assert {"MEMERAG", "SciFact", "WiCE"} <= set(rates)
    memerag_held, wice = error_rates([rates["MEMERAG"].stratum()]), rates["WiCE"]
    assert not memerag_held.specificity_low <= wice.specificity <= memerag_held.specificity_high
    [warning] = calibration_warnings(None, judge)
    assert "no labels of these documents" in warning.reason
    assert "people's labels in 3 collections (memerag, scifact, wice" in warning.reason
    assert "balanced accuracy 0.60 at worst (memerag held out)" in warning.reason
    assert f"specificity {rates['MEMERAG'].specificity:.2f} on MEMERAG" in warning.reason
    assert measured_elsewhere(judge, SUPPORT_PROMPT_VERSION, support_threshold_for(judge)) == (), "another verdict"
    assert measured_elsewhere("gguf:other.gguf", SUPPORT_PROMPT_VERSION, 0.5) == ()


def _drawn_strata(rng, count: int, sensitivity: float, specificity: float, rate: float = 0.7) -> list[LabelStratum]:
    truth = rng.random(count) < rate
    verdicts = np.where(truth, rng.random(count) < sensitivity, rng.random(count) >= specificity)
    return simple_strata(list(truth), list(verdicts))


def test_a_label_budget_says_already_or_never_where_labels_cannot_help():
    rng = np.random.default_rng(11)
    values = [float(v) for v in rng.random(300) < 0.7]
    strata = _drawn_strata(rng, 80, 0.9, 0.8)
    wide = labels_for_width(values, strata, 0.99)
    assert wide.more_labels == 0 and wide.current_width <= 0.99
    narrow = labels_for_width(values, strata, 0.01)
    assert narrow.more_labels is None and narrow.floor_width > 0.01, "300 questions alone are wider than 0.01"
    some = labels_for_width(values, strata, (wide.current_width + wide.floor_width) / 2)
    assert 0 < some.more_labels < 100_000 and some.labelled == 80


def test_a_label_budget_reaches_its_width_when_the_labels_are_drawn():
    """Budgets from 60 labels of a seeded world, then that many more drawn from the same world: the
    corrected interval's realized width over the target, in 30 worlds. Its median is the target's
    (the spread is the first 60 labels' own noise, which the budget cannot know)."""
    rng = np.random.default_rng(7)
    truth = rng.random(300) < 0.7
    values = [float(v) for v in np.where(truth, rng.random(300) < 0.85, rng.random(300) >= 0.85)]
    ratios = []
    for _ in range(30):
        budget = labels_for_width(values, _drawn_strata(rng, 60, 0.85, 0.85), 0.2)
        if budget is None or not budget.more_labels:
            continue
        drawn = corrected_mean(values, _drawn_strata(rng, 60 + budget.more_labels, 0.85, 0.85), 1, 2000)
        ratios.append((drawn.high - drawn.low) / 0.2)
    assert len(ratios) >= 25
    assert 0.85 <= float(np.median(ratios)) <= 1.15, np.round(ratios, 2)
