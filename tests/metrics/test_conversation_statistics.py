"""Conversations' statistics: the follow-up gap, whole dialogues resampled together, and a
dialogue handled turn after turn."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ragassay.evaluation.interval_text import GAP_INTERVAL_NOTE, gap_estimate
from ragassay.gates.assertions import check_assertions, parse_answer_assertion, parse_assertion
from ragassay.metrics.averaging import (
    bounded_mean_interval,
    interval_metrics,
    interval_table,
    mean_interval,
    subset_interval_table,
)
from ragassay.metrics.conversations import (
    conversation_success,
    followup_gap,
    question_groups,
    subset_means,
    turn_handled,
)
from ragassay.metrics.levels import MIN_BOOTSTRAP_QUESTIONS
from ragassay.metrics.significance import compare_paired


def test_the_gap_is_followups_minus_first_turns_with_an_interval_over_dialogues():
    # Two kinds of dialogue of three turns: first turns 1 and 1, follow-ups 0.5, 0 and 1, 0.5.
    kinds = ([1.0, 0.5, 0.0], [1.0, 1.0, 0.5])
    count = MIN_BOOTSTRAP_QUESTIONS + 1
    values = [value for number in range(count) for value in kinds[number % 2]]
    dialogues = [f"d{number}" for number in range(count) for _ in range(3)]
    turns = [1, 2, 3] * count
    gap = followup_gap(values, dialogues, turns, seed=1)
    assert (gap.first_mean, gap.first_scored, gap.followup_mean, gap.followup_scored) == (1.0, count, 0.5, 2 * count)
    assert gap.gap == pytest.approx(-0.5) and gap.dialogues == count and gap.has_interval
    # Resampling dialogues: a replicate of the first kind only gives -0.75, of the second -0.25.
    assert -0.75 < gap.ci_low < gap.gap < gap.ci_high < -0.25
    assert followup_gap(values, dialogues, turns, seed=1) == gap, "seeded"


def test_a_gap_over_fewer_dialogues_than_a_bootstrap_needs_has_no_interval_and_says_why():
    # Two dialogues, as in the README's demo: resampling them would print [-0.75, -0.25] or,
    # where they agree, a zero-width interval; neither is what two dialogues know.
    gap = followup_gap([1.0, 0.5, 0.0, 1.0, 1.0, 0.5], ["a"] * 3 + ["b"] * 3, [1, 2, 3] * 2, seed=1)
    assert gap.gap == pytest.approx(-0.5) and gap.dialogues == 2
    assert (gap.ci_low, gap.ci_high) == (None, None) and not gap.has_interval
    assert gap_estimate(gap) == "-0.500 (no CI: 2 dialogues)"
    assert f"none from fewer than {MIN_BOOTSTRAP_QUESTIONS}" in GAP_INTERVAL_NOTE


def test_a_gap_without_follow_ups_or_unscored_turns_says_so():
    gap = followup_gap([1.0, None, None], ["a", "a", "a"], [1, 2, 3])
    assert gap.followup_mean is None and gap.gap is None and gap.ci_low is None and gap.first_mean == 1.0
    # Single questions (no dialogue) are in neither side.
    assert followup_gap([0.0, 1.0], [None, None], [None, None]).first_scored == 0


def test_resampling_groups_of_one_is_the_plain_bootstrap_and_groups_widen_the_interval():
    rng = np.random.default_rng(4)
    a, b = rng.random(30), rng.random(30)
    singles = [f"q{i}" for i in range(30)]
    assert compare_paired(a, b, seed=2, groups=singles) == compare_paired(a, b, seed=2)
    assert mean_interval(list(a), 3, groups=singles) == mean_interval(list(a), 3)
    # Ten dialogues whose three turns move together: as groups the interval is wider.
    together = np.repeat(rng.random(10), 3)
    dialogues = [f"d{i // 3}" for i in range(30)]
    plain, grouped = mean_interval(list(together), 5), mean_interval(list(together), 5, groups=dialogues)
    assert grouped[1] - grouped[0] > plain[1] - plain[0]
    difference = compare_paired(np.zeros(30), together, seed=5, groups=dialogues)
    assert difference.mean_difference == pytest.approx(together.mean()) and difference.questions == 30


def test_a_dialogue_is_handled_when_every_turn_is_cited_correctly_or_declined():
    assert turn_handled(answerable=False, outcome="refused", citations=0, cited_supported=None) is True
    assert turn_handled(answerable=False, outcome="answered", citations=1, cited_supported=1.0) is False
    assert turn_handled(answerable=True, outcome="answered", citations=2, cited_supported=1.0) is True
    assert turn_handled(answerable=True, outcome="answered", citations=2, cited_supported=0.5) is False
    assert turn_handled(answerable=True, outcome="answered", citations=0, cited_supported=None) is False
    assert turn_handled(answerable=True, outcome="refused", citations=0, cited_supported=None) is False
    assert turn_handled(answerable=True, outcome="error", citations=0, cited_supported=None) is None
    assert turn_handled(answerable=True, outcome="answered", citations=1, cited_supported=None) is None
    answers = pl.DataFrame(
        {
            "query_collection": ["c"] * 7,
            "query_id": ["a#1", "a#2", "b#1", "b#2", "x#1", "x#2", "q1"],
            "dialogue_id": ["a", "a", "b", "b", "x", "x", None],
            "turn": [1, 2, 1, 2, 1, 2, None],
            "answerable": [True, False, True, True, True, True, True],
            "outcome": ["answered", "refused", "answered", "answered", "error", "answered", "answered"],
            "citations": [1, 0, 1, 1, 0, 1, 1],
            "citation_precision": [1.0, None, 1.0, 0.0, None, 1.0, 0.0],
        }
    )
    # a: both turns handled; b: its follow-up cites an unsupporting source; x: a failed call, not told.
    assert conversation_success(answers) == (0.5, 2)
    # A dialogue's turns are one group; a single question is a group of its own.
    groups = question_groups(answers)
    assert groups[0] == groups[1] != groups[2] and groups[6] not in groups[:6]
    means = subset_means(answers.with_columns(pl.col("citation_precision").alias("m")), ["m"])
    assert means == {"first_m": 1.0, "followup_m": 0.5}


def test_assertions_bound_first_turns_follow_ups_and_dialogues_handled():
    followup = parse_assertion("hybrid:followup.recall@5>=0.7")
    assert (followup.subset, str(followup.metric), str(followup)) == (
        "followup",
        "recall@5",
        "hybrid:followup.recall@5>=0.7",
    )
    assert parse_assertion("hybrid:first.mrr>0.5").bounded == "first.mrr"
    with pytest.raises(ValueError, match="coverage is over every question"):
        parse_assertion("prod:followup.coverage>=0.9")
    answer = parse_answer_assertion("hybrid:followup.faithfulness>=0.6")
    assert answer.subset == "followup" and answer.metric == "faithfulness"
    assert parse_answer_assertion("hybrid:conversation_success>=0.5").subset is None
    with pytest.raises(ValueError, match="a metric of followup turns must be one of"):
        parse_answer_assertion("hybrid:followup.faithfulness.corrected_low>=0.6")
    results = check_assertions(
        [followup, parse_assertion("hybrid:first.recall@5>=0.7")], {"hybrid": {"followup_recall@5": 0.75}}
    )
    assert [(r.value, r.passed) for r in results] == [(0.75, True), (None, False)]


def test_judge_corrected_intervals_reweight_a_dialogues_turns_together():
    from ragassay.metrics.judge_error import LabelStratum, corrected_difference, corrected_mean

    strata = [LabelStratum("labels", 100.0, 40, 5, 5, 30)]
    rng = np.random.default_rng(8)
    together = list(np.repeat((rng.random(12) > 0.4).astype(float), 3))
    singles = [f"q{i}" for i in range(36)]
    dialogues = [f"d{i // 3}" for i in range(36)]
    plain = corrected_mean(together, strata, seed=2)
    assert corrected_mean(together, strata, seed=2, groups=singles) == plain
    grouped = corrected_mean(together, strata, seed=2, groups=dialogues)
    assert grouped.estimate == plain.estimate and grouped.high - grouped.low > plain.high - plain.low
    a, b = np.zeros(36), np.array(together)
    assert corrected_difference(a, b, strata, 2, groups=singles) == corrected_difference(a, b, strata, 2)


def test_the_regression_gate_bounds_a_drop_over_follow_ups_alone():
    from ragassay.errors import ConfigError
    from ragassay.gates.regression import compare_batches, parse_drop_bound

    def table(followups: list[float]) -> pl.DataFrame:
        # Ten dialogues of three turns: first turns always found, follow-ups as given.
        return pl.DataFrame(
            {
                "query_collection": ["c"] * 30,
                "query_id": [f"d{d}#{t}" for d in range(10) for t in (1, 2, 3)],
                "dialogue_id": [f"d{d}" for d in range(10) for _ in range(3)],
                "turn": [1, 2, 3] * 10,
                "recall@5": [value for d in range(10) for value in (1.0, followups[2 * d], followups[2 * d + 1])],
            }
        )

    baseline, candidate = table([1.0] * 20), table([0.0, 1.0] * 10)
    bound = parse_drop_bound("hybrid:followup.recall@5=0.1")
    assert (bound.subset, bound.metric, bound.bounded) == ("followup", "recall@5", "followup.recall@5")
    [followup, overall] = compare_batches(
        {"hybrid": baseline}, {"hybrid": candidate}, [bound, parse_drop_bound("hybrid:recall@5=0.4")]
    ).to_dicts()
    assert (followup["metric"], followup["questions"], followup["drop"]) == ("followup.recall@5", 20, 0.5)
    assert followup["failed"], "follow-ups dropped by half, every dialogue alike"
    assert overall["drop"] == pytest.approx(1 / 3) and not overall["failed"]
    with pytest.raises(ConfigError, match="not coverage"):
        parse_drop_bound("followup.coverage=0.1")
    with pytest.raises(ConfigError, match="asked no golden dialogue"):
        compare_batches({"hybrid": baseline}, {"hybrid": candidate.drop("turn")}, [bound])


def test_every_mean_has_its_interval_as_run_metrics_first_turns_and_follow_ups_too():
    turns = pl.DataFrame(
        {
            "query_collection": ["c"] * 4,
            "query_id": ["d1#1", "d1#2", "d2#1", "q3"],
            "dialogue_id": ["d1", "d1", "d2", None],
            "turn": [1, 2, 1, None],
            "recall@5": [1.0, 0.0, 1.0, 0.5],
        }
    )
    single = pl.DataFrame(
        {"query_collection": ["c"], "query_id": ["q1"], "recall@5": [None]}, schema_overrides={"recall@5": pl.Float64}
    )
    per_question = {"a": turns, "b": single}
    bounds = interval_metrics(
        pl.concat([interval_table(per_question, ["recall@5"]), subset_interval_table(per_question, ["recall@5"])])
    )
    # A subset's interval reads its own turns: two first turns scored 1, one follow-up scored 0. So
    # few give an exact (Clopper-Pearson) interval, never the point a bootstrap would print.
    assert {key: value for key, value in bounds["a"].items() if "first" in key or "followup" in key} == {
        "lo/first_recall@5": pytest.approx(bounded_mean_interval([1.0, 1.0])[0]),
        "hi/first_recall@5": 1.0,
        "lo/followup_recall@5": 0.0,
        "hi/followup_recall@5": pytest.approx(bounded_mean_interval([0.0])[1]),
    }
    assert 0.0 <= bounds["a"]["lo/recall@5"] <= 0.625 <= bounds["a"]["hi/recall@5"] <= 1.0
    # Nothing scored, no dialogues: no interval to log (never a 0).
    assert "b" not in bounds
