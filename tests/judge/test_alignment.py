"""The aligned judge (judge/calibration/alignment.py) with real scikit-learn fits on labelled judgements, and
the correction it feeds (judge/calibration/correction.py) from a real labels table in a workspace: used only
when cross-validation shows it ahead, read back from its JSON, its cross-fitted verdicts (never
in-sample ones) in the correction, and set aside when the labels changed since the fit."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import balanced_accuracy_score, roc_auc_score

from ragassay.errors import CollectionDeleted, ConfigError
from ragassay.judge.calibration import aligned_store, alignment, correction, labelled_statements, labels
from ragassay.judge.calibration.alignment import AlignedJudge, LabelledJudgement, align_judge, numbers_found
from ragassay.judge.learned_verdict import verdict_version
from ragassay.judge.support_rules import support_threshold_for
from ragassay.store.judge_schemas import JUDGE_LABELS
from ragassay.store.tables import write_table
from ragassay.store.workspace import collection_paths
from tests.coverage_worlds import ALIGNED, aligned_judge_world, coverage

JUDGE = "qwen2.5-1.5b:test"
VERDICT_VERSION = verdict_version(JUDGE)  # what its P(supported) is: the learned verdict's
THRESHOLD = support_threshold_for(JUDGE)  # the learned verdict's, for the default judge
TOWNS = ["Nexo", "Arden", "Balk", "Corin", "Dunmore", "Elst", "Fenwick", "Garrow", "Hale", "Ivel"]


def _judgement(number: int, supported: bool, p: float, question: int) -> LabelledJudgement:
    """A statement about a bridge's opening year against a context that gives the year: a
    supported statement repeats it, an unsupported one names another."""
    town = TOWNS[number % len(TOWNS)]
    year = 1900 + number
    said = year if supported else year + 17
    context = (
        f"[1] The bridge at {town} opened in {year} after ten years of work on its piers.\n"
        f"[2] Ferries crossed the river at {town} before the bridge was built."
    )
    return LabelledJudgement(
        f"item-{number}", f"q{question}", f"The bridge at {town} opened in {said}.", context, p, supported
    )


def _off_threshold(count: int = 60, seed: int = 1) -> list[LabelledJudgement]:
    """Labels on which the judge's P says nothing (supported and unsupported both 0.5-0.95) while
    the statement's number says everything: the plain threshold is near chance, an aligned judge
    reading numbers_found is not."""
    rng = random.Random(seed)
    return [_judgement(n, n % 3 != 0, rng.uniform(0.5, 0.95), n // 2) for n in range(count)]


def test_auc_and_balanced_accuracy_equal_scikit_learns():
    rng = np.random.default_rng(3)
    for _ in range(20):
        labels = rng.random(40) < 0.7
        labels[:2] = [True, False]
        scores = np.round(rng.random(40), 1)  # ties, which the rank formula must average
        assert alignment.auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))
        assert alignment.balanced_accuracy(labels, scores >= 0.5) == pytest.approx(
            balanced_accuracy_score(labels, scores >= 0.5)
        )


def test_numbers_found_is_the_share_of_the_statements_numbers_in_the_context():
    assert numbers_found("opened in 1931 with 2 lanes", "in 1931 it opened") == 0.5
    assert numbers_found("it has 1,200 beds", "a hospital of 1,200 beds") == 1.0
    assert numbers_found("no number here", "1931") == 1.0


def test_an_aligned_judge_ahead_of_the_plain_threshold_is_used_with_figures_out_of_sample():
    items = _off_threshold()
    aligned = align_judge("c", items, JUDGE, VERDICT_VERSION, THRESHOLD)
    comparison = aligned.comparison
    assert aligned.used, aligned.reason
    assert aligned.reason.startswith("ahead of the plain threshold")
    assert comparison.plain_balanced_accuracy < 0.7 < 0.95 < comparison.aligned_balanced_accuracy
    assert comparison.ahead_share >= alignment.AHEAD_SHARE
    assert comparison.aligned_balanced_accuracy_low <= comparison.aligned_balanced_accuracy
    assert comparison.aligned_balanced_accuracy <= comparison.aligned_balanced_accuracy_high
    assert (comparison.labelled, comparison.groups, comparison.folds) == (60, 30, 5)
    assert set(aligned.cross_fitted) == {item.item_id for item in items}
    cross_fitted_ba = balanced_accuracy_score(
        [i.supported for i in items], [aligned.cross_fitted[i.item_id] for i in items]
    )
    assert cross_fitted_ba == pytest.approx(comparison.aligned_balanced_accuracy), (
        "the stored out-of-fold verdicts are the ones the comparison scored"
    )
    unseen = _judgement(97, False, 0.93, 99)
    assert not aligned.supported(unseen.statement, unseen.context, unseen.p_supported), (
        "a confident P with a year the context does not give is unsupported once aligned"
    )


def test_a_fit_that_does_not_beat_the_plain_threshold_is_stored_unused_with_why():
    rng = random.Random(5)
    # The plain threshold is right on every label and the other features are alike for all: a fit
    # can at best tie it, and a tie is not ahead.
    p_supported = [rng.uniform(THRESHOLD - 0.35, THRESHOLD + 0.14) for _ in range(60)]
    items = [
        LabelledJudgement(
            f"item-{n}",
            f"q{n // 2}",
            _judgement(n, True, 0, 0).statement,
            _judgement(n, True, 0, 0).context,
            p,
            p >= THRESHOLD,
        )
        for n, p in enumerate(p_supported)
    ]
    aligned = align_judge("c", items, JUDGE, VERDICT_VERSION, THRESHOLD)
    assert not aligned.used
    assert aligned.reason.startswith("not ahead of the plain threshold in most replicates")
    assert "the plain judge stays" in aligned.reason
    assert aligned.comparison is not None and aligned.comparison.ahead_share < alignment.AHEAD_SHARE
    assert aligned.comparison.plain_balanced_accuracy == 1.0


def test_the_use_rule_wants_the_fit_ahead_more_often_than_behind_and_its_auc_not_clearly_below():
    """The thresholds of USE_RULE, read on one real comparison with its bootstrap shares moved: a
    fit ahead in 60% of replicates is used (the rule wanted 90% until 2026-12-06); one ahead in
    40%, or whose AUC is below the plain P's in 95% of them, is not."""
    comparison = align_judge("c", _off_threshold(), JUDGE, VERDICT_VERSION, THRESHOLD).comparison
    for ahead, auc_below, used in ((0.6, 0.3, True), (0.4, 0.3, False), (0.6, 0.95, False)):
        verdict, reason = alignment._verdict_on(replace(comparison, ahead_share=ahead, auc_behind_share=auc_below))
        assert verdict is used, reason
        assert f"ahead in {ahead:.0%} of replicates" in reason


def test_too_few_labels_of_a_class_or_too_few_questions_keep_the_plain_judge():
    few_unsupported = [_judgement(n, n % 10 != 0, 0.9, n) for n in range(60)]
    aligned = align_judge("c", few_unsupported, JUDGE, VERDICT_VERSION, THRESHOLD)
    assert not aligned.used and aligned.comparison is None
    assert aligned.reason.startswith("only 54 supported and 6 unsupported labels")
    two_questions = [_judgement(n, n % 2 == 0, 0.9, n % 2 + n % 4) for n in range(40)]
    assert "questions" in align_judge("c", two_questions, JUDGE, VERDICT_VERSION, THRESHOLD).reason


def test_the_stored_form_is_json_and_reads_back_to_the_same_verdicts():
    aligned = align_judge("c", _off_threshold(), JUDGE, VERDICT_VERSION, THRESHOLD)
    back = AlignedJudge.from_json(json.loads(json.dumps(aligned.as_json())))
    assert back == aligned
    for item in _off_threshold(20, seed=9):
        assert back.probability(item.statement, item.context, item.p_supported) == aligned.probability(
            item.statement, item.context, item.p_supported
        )
    with pytest.raises(ValueError, match="schema_version"):
        AlignedJudge.from_json({**aligned.as_json(), "schema_version": 99})


START = datetime(2026, 12, 1, tzinfo=UTC)


def _labels_table(items: list[LabelledJudgement]) -> pl.DataFrame:
    """The labels a person gave these judgements in one sample of one batch, with the P each was judged with."""
    return pl.DataFrame(
        [
            {
                "item_id": item.item_id,
                "sample_id": "b1/seed-0/count-60",
                "batch_id": "b1",
                "query_collection": "c",
                "query_id": item.group,
                "metric": "faithfulness",
                "statement": item.statement,
                "context": item.context,
                "question": "When did the bridge open?",
                "stratum": "supported" if item.p_supported >= THRESHOLD else "unsupported",
                "stratum_size": 100,
                "judge_model": JUDGE,
                "prompt_version": VERDICT_VERSION,
                "support_threshold": THRESHOLD,
                "p_supported": item.p_supported,
                "label": "supported" if item.supported else "unsupported",
                "who": "ana",
                "labelled_at": START + timedelta(minutes=minute),
            }
            for minute, item in enumerate(items)
        ],
        schema=JUDGE_LABELS.schema,
    )


@pytest.fixture
def labelled_collection(tmp_path):
    """A workspace whose collection c holds 60 labels and its aligned judge fitted on them, stored
    where `judge calibrate --collection` stores it."""
    items = _off_threshold()
    paths = collection_paths(tmp_path, "c", must_exist=False)
    write_table(_labels_table(items), paths.judge_labels, JUDGE_LABELS)
    rows = labels.labelled_statements(labelled_statements.collection_labels(tmp_path, ["c"]))
    judgements = aligned_store.labelled_judgements(rows, {row["item_id"]: row["p_supported"] for row in rows})
    digest = alignment.labels_digest((row["item_id"], row["label"] == "supported") for row in rows)
    aligned = align_judge("c", judgements, JUDGE, VERDICT_VERSION, THRESHOLD, digest=digest)
    paths.aligned_judge.write_text(json.dumps(aligned.as_json()))
    return tmp_path, items, aligned


def _never(row: dict) -> float:
    raise AssertionError(f"{row['item_id']}: every label holds this judge's P(supported)")


def test_the_correction_reads_the_cross_fitted_verdicts_of_the_labels_the_judge_was_fitted_on(labelled_collection):
    home, _, aligned = labelled_collection
    loaded = aligned_store.load_aligned_judges(home, ["c"], JUDGE)
    assert set(loaded.by_collection) == {"c"} and loaded.notes == ()
    corrected = correction.judge_calibration(home, ["c"], JUDGE, _never, loaded)
    plain = correction.judge_calibration(home, ["c"], JUDGE, _never)
    counted = sum(s.supported_judged_supported + s.unsupported_judged_supported for s in corrected.strata)
    assert counted == sum(aligned.cross_fitted.values()), "verdicts 'supported' are the cross-fitted ones"
    assert corrected.aligned_judges and corrected.aligned_judges[0].startswith("c: aligned judge fitted on 60 labels")
    assert corrected.rates.balanced_accuracy > plain.rates.balanced_accuracy + 0.2
    assert plain.aligned_judges == ()


def test_an_aligned_judge_fitted_on_other_labels_or_for_another_judge_is_set_aside_with_a_note(labelled_collection):
    home, items, _ = labelled_collection
    assert aligned_store.load_aligned_judges(home, ["c"], "smollm2:other").by_collection == {}
    assert "not this judge" in aligned_store.load_aligned_judges(home, ["c"], "smollm2:other").notes[0]
    paths = collection_paths(home, "c", must_exist=False)
    relabelled = _labels_table([*items[:-1], LabelledJudgement(**{**items[-1].__dict__, "supported": False})])
    write_table(relabelled, paths.judge_labels, JUDGE_LABELS)
    loaded = aligned_store.load_aligned_judges(home, ["c"], JUDGE)
    assert loaded.by_collection == {}
    assert "labels changed since its aligned judge was fitted" in loaded.notes[0]
    note = correction.judge_calibration(home, ["c"], JUDGE, _never, loaded).warnings()[0]
    assert "ragassay judge calibrate --collection c" in note


def test_a_damaged_aligned_judge_file_is_named(labelled_collection):
    home, _, _ = labelled_collection
    collection_paths(home, "c", must_exist=False).aligned_judge.write_text('{"schema_version": 1, "collection": "c"}')
    with pytest.raises(ConfigError, match=r"aligned_judge\.json cannot be read as an aligned judge"):
        aligned_store.load_aligned_judges(home, ["c"], JUDGE)


def test_an_aligned_judge_is_not_stored_into_a_collection_deleted_meanwhile(tmp_path):
    aligned = align_judge("gone", _off_threshold(), JUDGE, VERDICT_VERSION, THRESHOLD)
    with pytest.raises(CollectionDeleted, match="'gone' was deleted while `judge calibrate` ran"):
        aligned_store.store_aligned_judge(tmp_path, aligned)
    assert not collection_paths(tmp_path, "gone", must_exist=False).root.exists(), "no folder made anew"


@pytest.mark.slow
@pytest.mark.parametrize(("rate", "labels"), ALIGNED)
def test_the_corrected_interval_covers_the_true_rate_with_an_aligned_judges_cross_fitted_rates(rate, labels):
    """The coverage test of metrics/judge_error.py extended to the aligned judge: error rates read
    from cross-fitted verdicts (fold models) stand for the model fitted on all the labels. 200
    seeded worlds measure a coverage of 0.95 to about +-0.015, enough to catch an interval that is
    wrong; `benchmarks/bench_interval_coverage.py` runs 1,000 (to +-0.007)."""
    covered = coverage(aligned_judge_world, 200, rate, labels)
    assert 0.905 <= covered <= 0.99, f"corrected coverage {covered:.3f}"
