"""Metrics by hand: each formula on a tiny run, the edge cases in writing, parsing of names."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragassay.evaluation.questions import EvalQuestion, gather_unanswerable, read_unanswerable, sample_questions
from ragassay.evaluation.retrieval_scoring import per_question_frame, score_rankings
from ragassay.metrics.averaging import mean_scores
from ragassay.metrics.names import parse_metric, standard_metrics
from ragassay.metrics.retrieval import judge_run
from tests.conftest import SAMPLE

# Question 1: relevant a (grade 2) and c (grade 1); the run ranks x, a, y, c.
# Question 2: relevant z; the run is empty.
RANKINGS = [["x", "a", "y", "c"], []]
JUDGEMENTS = [{"a": 2, "c": 1}, {"z": 1}]


def values(name: str) -> list[float]:
    return list(parse_metric(name).compute(judge_run(RANKINGS, JUDGEMENTS, depth=10)))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("recall@1", [0.0, 0.0]),
        ("recall@2", [0.5, 0.0]),
        ("recall@4", [1.0, 0.0]),
        ("precision@2", [0.5, 0.0]),
        ("precision@10", [0.2, 0.0]),  # divides by k even though only 4 were retrieved
        ("hit_rate@1", [0.0, 0.0]),
        ("hit_rate@2", [1.0, 0.0]),
        ("mrr", [0.5, 0.0]),
        ("mrr@1", [0.0, 0.0]),
        ("ndcg@2", [(2 / math.log2(3)) / (2 + 1 / math.log2(3)), 0.0]),
        ("ndcg@4", [(2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3)), 0.0]),
    ],
)
def test_each_metric_matches_its_formula(name, expected):
    assert values(name) == pytest.approx(expected, abs=1e-12)


def test_binary_ndcg_is_one_for_a_perfect_ranking():
    judged = judge_run([["a", "b", "n"]], [{"a": 1, "b": 1}], depth=3)
    assert parse_metric("ndcg@3").compute(judged)[0] == pytest.approx(1.0)


def test_a_question_without_relevant_documents_cannot_be_judged():
    with pytest.raises(ValueError, match="at least one relevant"):
        judge_run([["a"]], [{}], depth=1)


def test_an_empty_run_scores_zero_and_still_counts_in_the_mean():
    questions = [EvalQuestion("c", "q1", "?", {("c", "a"): 1}), EvalQuestion("c", "q2", "?", {("c", "b"): 1})]
    rankings = [[("c", "a")], []]
    metrics = standard_metrics([1])
    table = per_question_frame("cfg", questions, rankings, score_rankings(questions, rankings, metrics, depth=1))
    assert table["retrieved"].to_list() == [1, 0]
    assert mean_scores(table, metrics)["recall@1"] == 0.5


@pytest.mark.parametrize(
    ("text", "family", "k", "mlflow_key"),
    [
        ("ndcg@10", "ndcg", 10, "ndcg_at_10"),
        ("recall_at_5", "recall", 5, "recall_at_5"),
        ("MRR", "mrr", None, "mrr"),
        ("hit_rate@3", "hit_rate", 3, "hit_rate_at_3"),
    ],
)
def test_metric_names_parse_once(text, family, k, mlflow_key):
    name = parse_metric(text)
    assert (name.family, name.k, name.mlflow_key) == (family, k, mlflow_key)


@pytest.mark.parametrize("text", ["ndcg", "recall@0", "map@10", "ndcg@ten"])
def test_unknown_metric_names_list_the_valid_ones(text):
    with pytest.raises(ValueError, match="valid: recall@k"):
        parse_metric(text)


def test_seeded_sample_is_reproducible_and_keeps_order():
    questions = [EvalQuestion("c", f"q{i}", "?", {("c", "d"): 1}) for i in range(50)]
    first = sample_questions(questions, 10, seed=7)
    assert first == sample_questions(questions, 10, seed=7)
    assert first != sample_questions(questions, 10, seed=8)
    assert [q.query_id for q in first] == sorted((q.query_id for q in first), key=lambda i: int(i[1:]))
    assert sample_questions(questions, None, seed=7) == questions


def test_the_unanswerable_questions_asked_are_a_seeded_sample_of_the_file():
    path = SAMPLE / "unanswerable.jsonl"
    every = read_unanswerable(path)
    two = gather_unanswerable(path, 2, seed=0)
    assert len(two) == 2 and two == gather_unanswerable(path, 2, seed=0)
    assert [q.query_id for q in two] == [q.query_id for q in every if q in two], "in the file's order"
    assert any(gather_unanswerable(path, 2, seed) != two for seed in range(1, 5)), "another seed, another sample"
    assert gather_unanswerable(path, None, 0) == every and gather_unanswerable(path, 9, 0) == every
    assert gather_unanswerable(path, 0, 0) == [] and gather_unanswerable(None, 2, 0) == []


def test_inputs_are_not_mutated():
    rankings = [["x", "a"]]
    judgements = [{"a": 2}]
    judge_run(rankings, judgements, depth=1)
    assert rankings == [["x", "a"]] and judgements == [{"a": 2}]


def test_random_runs_match_pytrec_eval_exactly():
    """Graded judgements, runs of every length including empty, against pytrec_eval."""
    import random

    import pytrec_eval

    rng = random.Random(13)
    docs = [f"d{i}" for i in range(60)]
    qrels, run, rankings, judgements = {}, {}, [], []
    for q in range(300):
        judged = {d: rng.choice([1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 8))}
        ranking = rng.sample(docs, rng.randint(0, 25))
        qrels[f"q{q}"] = judged
        if ranking:
            run[f"q{q}"] = {d: float(len(ranking) - i) for i, d in enumerate(ranking)}
        rankings.append(ranking)
        judgements.append(judged)
    ks = [1, 3, 5, 10, 20]
    measures = {
        f"recall.{','.join(map(str, ks))}",
        f"P.{','.join(map(str, ks))}",
        "recip_rank",
        f"ndcg_cut.{','.join(map(str, ks))}",
    }
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    judged_run = judge_run(rankings, judgements, depth=25)
    pairs = [
        (f"{family}@{k}", f"{trec}_{k}")
        for k in ks
        for family, trec in (("recall", "recall"), ("precision", "P"), ("ndcg", "ndcg_cut"))
    ]
    for ours_name, trec_name in [*pairs, ("mrr", "recip_rank")]:
        ours = parse_metric(ours_name).compute(judged_run)
        theirs = np.array([reference.get(f"q{q}", {}).get(trec_name, 0.0) for q in range(300)])
        assert np.max(np.abs(ours - theirs)) <= 1e-9, ours_name
