"""Answer metrics, refusal rates, pairwise tallies, judge agreement and case checks, computed by
hand from scripted verdicts (the judge model is not involved; tests/test_eval_answers.py runs it)."""

from __future__ import annotations

import math

import pytest

from ragassay.answer.grounding import AnsweredStatement, Citation, GroundedAnswer
from ragassay.evaluation.answer_summary import AnsweredQuestion, summarize_configuration
from ragassay.evaluation.questions import EvalQuestion
from ragassay.gates.cases import (
    case_passed,
    check_contains,
    check_excludes,
    check_grounded,
    check_judge_score,
)
from ragassay.judge.prompts import CriteriaScore, criteria_schema
from ragassay.llm.structured import Usage
from ragassay.metrics.agreement import agreement
from ragassay.metrics.answer_metric import AnswerJudgement
from ragassay.metrics.answer_metrics.answer_correctness import answer_correctness
from ragassay.metrics.answer_metrics.answer_relevancy import answer_relevancy
from ragassay.metrics.answer_metrics.citation_precision import citation_precision
from ragassay.metrics.answer_metrics.context_recall import context_recall
from ragassay.metrics.answer_metrics.faithfulness import faithfulness
from ragassay.metrics.answers import (
    NOTHING_TO_JUDGE,
    UNREADABLE,
    Scored,
    false_refusal_rate,
    pair_outcome,
    refusal_recall,
    split_statements,
    tally_pairs,
)
from ragassay.metrics.averaging import mean_scored
from ragassay.metrics.names import ANSWER_METRICS


@pytest.mark.parametrize(
    ("verdicts", "value"),
    [([True, True, False, True], 0.75), ([True], 1.0), ([False, False], 0.0), ([True, False, False], 1 / 3)],
)
def test_faithfulness_is_supported_statements_over_statements(verdicts, value):
    scored = faithfulness(verdicts)
    assert scored.value == pytest.approx(value) and scored.excluded is None and scored.judged == len(verdicts)


def judgement(**scores: Scored) -> AnswerJudgement:
    """One question's judgement with the scores given, every other declared metric left out as
    having nothing to judge."""
    return AnswerJudgement({name: scores.get(name, Scored(None, NOTHING_TO_JUDGE)) for name in ANSWER_METRICS})


def test_an_unreadable_verdict_excludes_the_question_instead_of_scoring_it():
    scored = faithfulness([True, None, False])
    assert scored.value is None and "unreadable" in scored.excluded and "1 of 3" in scored.excluded


@pytest.mark.parametrize(
    ("metric", "reason"),
    [(faithfulness, "no statements"), (context_recall, "no reference answer"), (citation_precision, "no citations")],
)
def test_nothing_to_judge_is_excluded_with_its_reason(metric, reason):
    scored = metric([])
    assert scored.value is None and reason in scored.excluded


def test_answer_relevancy_is_clipped_cosine_and_zero_when_noncommittal():
    assert answer_relevancy(0.82, False).value == pytest.approx(0.82)
    assert answer_relevancy(-0.1, False).value == 0.0
    assert answer_relevancy(0.9, True).value == 0.0
    assert answer_relevancy(None, None).value is None


def test_refusal_is_measured_in_both_directions():
    # 3 of 4 unanswerable questions declined; 1 of 5 answerable questions wrongly declined.
    assert refusal_recall([True, True, False, True]) == 0.75
    assert false_refusal_rate([False, False, True, False, False]) == 0.2
    # A pipeline that declines everything: perfect recall, and every answerable question lost.
    assert refusal_recall([True] * 3) == 1.0 and false_refusal_rate([True] * 4) == 1.0
    assert refusal_recall([]) is None and false_refusal_rate([]) is None


def test_means_count_only_scored_questions():
    values = [Scored(1.0), Scored(None, "unreadable judge output"), Scored(0.5), Scored(None, "refused")]
    assert mean_scored(values) == (0.75, 2)
    assert mean_scored([Scored(None, "refused")]) == (None, 0)


@pytest.mark.parametrize(
    ("text", "statements"),
    [
        ("About six weeks.", ["About six weeks."]),
        (
            "Bees leave 9.5 mm open. They fill wider gaps with comb!",
            ["Bees leave 9.5 mm open.", "They fill wider gaps with comb!"],
        ),
        (
            "Treat above 3 % e.g. in late summer. In spring act at 2 %.",
            ["Treat above 3 % e.g. in late summer.", "In spring act at 2 %."],
        ),
        ("  ", []),
        (None, []),
        # A sentence without content is no statement: "Yes." halved the context recall of a
        # reference whose fact the passage held.
        ("Yes. The drug reduces X.", ["The drug reduces X."]),
        ("No, not really. Hives need shade.", ["Hives need shade."]),
        ("Yes.", []),
        ("Yes, it does.", ["Yes, it does."]),
    ],
)
def test_reference_answers_split_into_sentences(text, statements):
    assert split_statements(text) == statements


@pytest.mark.parametrize(
    ("a_first", "b_first", "outcome"),
    [
        ("first", "second", "a"),  # a preferred in both orders
        ("second", "first", "b"),
        ("tie", "tie", "tie"),
        ("first", "first", "inconsistent"),  # the judge preferred whatever came first
        ("tie", "first", "inconsistent"),
        (None, "first", "unreadable"),
    ],
)
def test_pairwise_verdicts_in_both_orders(a_first, b_first, outcome):
    assert pair_outcome(a_first, b_first) == outcome


def test_pairwise_tally_counts_every_question_once():
    tally = tally_pairs(["a", "a", "b", "tie", "inconsistent", "unreadable"])
    assert (tally["wins_a"], tally["ties"], tally["wins_b"], tally["inconsistent"], tally["unreadable"]) == (
        2,
        1,
        1,
        1,
        1,
    )
    assert tally["questions"] == 6 and tally["inconsistent_share"] == pytest.approx(1 / 5)


def test_agreement_against_labels_by_hand():
    labels = [True, True, True, False, False, False, True, False]
    verdicts = [True, True, False, False, False, True, None, None]
    result = agreement(labels, verdicts)
    # Readable: 6. tp=2 fn=1 fp=1 tn=2; p_o = 4/6; p_e = 0.5*0.5 + 0.5*0.5 = 0.5; kappa = (2/3-1/2)/(1/2) = 1/3.
    assert result.readable == 6 and result.unreadable_rate == 0.25
    assert result.confusion == {
        "supported_judged_supported": 2,
        "supported_judged_unsupported": 1,
        "unsupported_judged_supported": 1,
        "unsupported_judged_unsupported": 2,
    }
    assert result.accuracy == pytest.approx(4 / 6) and result.kappa == pytest.approx(1 / 3)
    # Recall supported 2/3, recall unsupported 2/3; precision supported 2/3, unsupported 2/3.
    assert result.balanced_accuracy == pytest.approx(2 / 3)
    assert (result.recall_supported, result.recall_unsupported) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert (result.precision_supported, result.precision_unsupported) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert result.kappa_ci_low <= result.kappa <= result.kappa_ci_high


def test_balanced_accuracy_does_not_reward_saying_supported_to_everything():
    labels = [True] * 9 + [False]
    result = agreement(labels, [True] * 10)
    assert result.accuracy == 0.9 and result.balanced_accuracy == 0.5 and result.kappa == 0.0
    assert result.recall_unsupported == 0.0 and result.precision_unsupported is None


def test_the_kappa_interval_is_seeded_and_narrows_with_more_labels():
    labels = [True, False, True, True, False, True, False, True] * 4
    verdicts = [True, False, False, True, False, True, True, True] * 4
    first, again = agreement(labels, verdicts, seed=3), agreement(labels, verdicts, seed=3)
    assert (first.kappa_ci_low, first.kappa_ci_high) == (again.kappa_ci_low, again.kappa_ci_high)
    wide = agreement(labels[:8], verdicts[:8], seed=3)
    assert first.kappa == pytest.approx(wide.kappa)
    assert first.kappa_ci_high - first.kappa_ci_low < wide.kappa_ci_high - wide.kappa_ci_low


def test_a_judge_that_always_says_one_thing_has_kappa_zero():
    result = agreement([True, False, True, True], [False, False, False, False])
    assert result.accuracy == 0.25 and result.kappa == 0.0 and not math.copysign(1, result.kappa) < 0
    assert agreement([True], [None]).kappa is None


def _answered(
    query_id: str, answerable: bool, outcome: str, statements: int = 0, reference: str | None = None, unparseable=False
):
    citation = Citation(1, "doc", "doc#0", 0, 4, "text")
    answer = GroundedAnswer(
        f"question {query_id}",
        outcome,
        "" if outcome == "answered" else "declined",
        [AnsweredStatement(f"statement {i}", [citation]) for i in range(statements)],
        unparseable=unparseable,
    )
    usage = Usage(calls=1, prompt_tokens=100, completion_tokens=10, seconds=2.0)
    return AnsweredQuestion(
        EvalQuestion("sample", query_id, answer.question, {}, reference), answerable, answer, usage, 2.5
    )


def test_configuration_summary_counts_exclusions_refusals_and_warnings():
    answered = [
        _answered("g1", True, "answered", 2, "One. Two."),
        _answered("g2", True, "answered", 1, "One."),
        _answered("g3", True, "refused", 0, "One."),
        _answered("g4", True, "answered", 1, None),
        _answered("u1", False, "refused"),
        _answered("u2", False, "answered", 1),
        _answered("u3", False, "refused", unparseable=True),
    ]
    refused = Scored(None, "refused")
    judgements = {
        "sample/g1": judgement(
            faithfulness=faithfulness([True, False]),
            context_recall=context_recall([True, True]),
            answer_relevancy=answer_relevancy(0.8, False),
            citation_precision=citation_precision([True, False]),
            answer_correctness=answer_correctness(0.9, 0.5),
        ),
        "sample/g2": judgement(
            faithfulness=faithfulness([None]),
            context_recall=context_recall([False]),
            answer_relevancy=answer_relevancy(0.6, False),
            citation_precision=citation_precision([True]),
            answer_correctness=answer_correctness(0.2, 0.5),
        ),
        "sample/g3": judgement(
            faithfulness=refused,
            context_recall=context_recall([True]),
            answer_relevancy=refused,
            citation_precision=refused,
        ),
        "sample/g4": judgement(
            faithfulness=faithfulness([True]),
            context_recall=context_recall([]),
            answer_relevancy=answer_relevancy(None, None),
            citation_precision=citation_precision([True]),
        ),
    }
    summary = summarize_configuration("hybrid", answered, judgements, Usage(calls=9), judge_reused=2)
    m = summary.metrics
    assert (m["faithfulness"], m["faithfulness_scored"]) == (pytest.approx(0.75), 2)  # g1 0.5, g4 1.0; g2 unreadable
    assert (m["context_recall"], m["context_recall_scored"]) == (pytest.approx(2 / 3), 3)  # g1 1, g2 0, g3 1
    assert (m["answer_relevancy"], m["answer_relevancy_scored"]) == (pytest.approx(0.7), 2)
    assert (m["citation_precision"], m["citation_precision_scored"]) == (pytest.approx(2.5 / 3), 3)
    # g1 graded correct, g2 incorrect; g3 refused; g4 has no reference answer to grade against.
    assert (m["answer_correctness"], m["answer_correctness_scored"]) == (0.5, 2)
    assert m["refusal_recall"] == pytest.approx(2 / 3) and m["unanswerable_questions"] == 3
    assert m["false_refusal_rate"] == 0.25 and m["answerable_questions"] == 4
    assert m["answer_model_calls"] == 7 and m["judge_calls"] == 9 and m["judge_reused_verdicts"] == 2
    warned = {(w.metric, w.question) for w in summary.warnings}
    assert warned == {
        ("faithfulness", "sample/g2"),
        ("answer_relevancy", "sample/g4"),
        ("answer", "sample/u3"),
        ("context_recall, answer_correctness", "sample/g4"),
    }
    assert summary.answers.height == 7 and summary.answers.filter(answerable=False)["faithfulness"].null_count() == 3
    assert summary.answers.filter(query_id="g2")["faithfulness"].to_list() == [None]
    assert summary.answers["answer_correctness"].to_list() == [1.0, 0.0, None, None, None, None, None]


def test_answer_correctness_applies_the_threshold_and_leaves_an_unreadable_grade_out():
    assert answer_correctness(0.5, 0.5) == Scored(1.0, None, 1)
    assert answer_correctness(0.49, 0.5) == Scored(0.0, None, 1)
    unreadable = answer_correctness(None, 0.5)
    assert unreadable.value is None and unreadable.excluded == UNREADABLE


def test_case_checks_are_case_insensitive_and_all_must_pass():
    answer = "Smoke masks isopentyl acetate, which smells like BANANAS."
    assert check_contains(answer, ["bananas", "Isopentyl"]).passed
    assert not check_contains(answer, ["lemon"]).passed
    assert check_excludes(answer, ["lemon"]).passed and not check_excludes(answer, ["banana"]).passed
    assert case_passed([check_contains(answer, ["banana"]), check_excludes(answer, ["lemon"])])
    assert not case_passed([check_contains(answer, ["banana"]), check_excludes(answer, ["banana"])])
    assert not case_passed([])


def test_malformed_judge_output_fails_the_check_as_a_judge_error():
    failed = check_judge_score(None, "score: Input should be less than or equal to 1", 0.5)
    assert not failed.passed and failed.judge_error and "less than" in failed.detail
    assert check_judge_score(CriteriaScore(score=0.5, reason="ok"), None, 0.5).passed
    assert not check_judge_score(CriteriaScore(score=0.4, reason="partly"), None, 0.5).passed


@pytest.mark.parametrize(
    ("verdicts", "passed", "judge_error"),
    [
        ([True, True, True, False], True, False),
        ([True, False], False, False),
        ([True, None], False, True),
        ([], True, False),
    ],
)
def test_grounded_check_needs_the_minimum_share_of_supported_claims(verdicts, passed, judge_error):
    result = check_grounded(verdicts, passages=5, min_supported=0.7)
    assert (result.passed, result.judge_error) == (passed, judge_error)
    assert ("unreadable" if judge_error else "5 passages") in result.detail


def test_criteria_schema_only_allows_scores_in_tenths():
    assert criteria_schema()["properties"]["score"]["enum"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
