"""Prefect tasks of answer evaluation: answer every question under a configuration, judge the
answers, compare configurations pairwise, log the batch to MLflow."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay.answer_service import answer_question
from ragassay.config import AnswerConfiguration, AnswerEvalConfig
from ragassay.golden_service import read_unanswerable
from ragassay.judge_service import Judge, judge_answer
from ragassay.search_service import open_collection
from tasks import tracking
from tasks.answer_metrics import AnswerJudgement, pair_outcome
from tasks.answer_scoring import AnsweredQuestion, ConfigurationSummary, warnings_frame
from tasks.answering import ANSWER_PROMPT_VERSION
from tasks.eval_tasks import GoldenContext, gather_golden_questions
from tasks.judging import PROMPT_VERSIONS
from tasks.models import Usage
from tasks.progress import ProgressReporter
from tasks.schemas import PAIRWISE
from tasks.scoring import EvalQuestion

# Written in both order columns when two answers are the same text: a tie, no judge call needed.
IDENTICAL = "identical"


@task(name="load-answer-questions", cache_policy=NO_CACHE)
def load_answer_questions(config: AnswerEvalConfig) -> tuple[list[EvalQuestion], list[EvalQuestion], GoldenContext]:
    """The golden questions (seeded sample) and the unanswerable ones; a bad file fails here,
    before any model call."""
    golden, context = gather_golden_questions(config.home, config.collections, config.max_questions, config.seed)
    unanswerable = read_unanswerable(config.unanswerable) if config.unanswerable else []
    return golden, unanswerable, context


@task(name="answer-questions", cache_policy=NO_CACHE)
def answer_questions(
    home: Path, collections: tuple[str, ...], questions: list[tuple[EvalQuestion, bool]], configuration: AnswerConfiguration
) -> list[AnsweredQuestion]:
    """Each (question, answerable) through exactly `ragassay answer`'s code path."""
    answer_config = configuration.answer_config()
    answered = []
    with ProgressReporter(f"answering {len(questions)} questions ({configuration.label})") as progress:
        for done, (question, answerable) in enumerate(questions, start=1):
            usage = Usage()
            started = time.perf_counter()
            answer = answer_question(home, list(collections), question.question, answer_config, usage)
            answered.append(AnsweredQuestion(question, answerable, answer, usage, time.perf_counter() - started))
            progress(done, len(questions))
    return answered


@task(name="judge-answers", cache_policy=NO_CACHE)
def judge_answers(home: Path, judge: Judge, answered: list[AnsweredQuestion], label: str) -> tuple[dict[str, AnswerJudgement], Usage, int]:
    """Every answer metric of each answerable question, what the judge cost for this configuration,
    and how many judgements it took from earlier configurations' identical ones."""
    judge.usage, judge.cache_hits = Usage(), 0
    answerable = [a for a in answered if a.answerable]
    judgements = {}
    with ProgressReporter(f"judging {len(answerable)} answers ({label})") as progress:
        for done, item in enumerate(answerable, start=1):
            collection = open_collection(home, item.question.query_collection, need_dense=True)
            judgements[item.key] = judge_answer(judge, item.answer, item.question.reference_answer, collection.embed_query)
            progress(done, len(answerable))
    return judgements, judge.usage, judge.cache_hits


@task(name="compare-answers", cache_policy=NO_CACHE)
def compare_answers(
    judge: Judge, label_a: str, answered_a: list[AnsweredQuestion], label_b: str, answered_b: list[AnsweredQuestion]
) -> tuple[pl.DataFrame, Usage]:
    """The judge's preference per answerable question, asked with a first and with b first, and
    what the comparison cost."""
    judge.usage = Usage()
    pairs = [(a, b) for a, b in zip(answered_a, answered_b, strict=True) if a.answerable]
    rows = []
    with ProgressReporter(f"comparing {label_a} with {label_b} on {len(pairs)} questions") as progress:
        for done, (a, b) in enumerate(pairs, start=1):
            if a.answer.text == b.answer.text:
                a_first = b_first = IDENTICAL
                outcome = "tie"
            else:
                reference = a.question.reference_answer
                # The judge reads the answers' words; citation markers would only add noise.
                first = judge.preference(a.question.question, reference, a.answer.prose, b.answer.prose)
                second = judge.preference(a.question.question, reference, b.answer.prose, a.answer.prose)
                a_first = first.value.preferred if first.value else None
                b_first = second.value.preferred if second.value else None
                outcome = pair_outcome(a_first, b_first)
            rows.append(
                {"configuration_a": label_a, "configuration_b": label_b, "query_collection": a.question.query_collection,
                 "query_id": a.question.query_id, "a_first": a_first, "b_first": b_first, "outcome": outcome}
            )
            progress(done, len(pairs))
    return pl.DataFrame(rows, schema=PAIRWISE.schema), judge.usage


def configuration_pairs(labels: list[str]) -> list[tuple[str, str]]:
    return list(itertools.combinations(labels, 2))


@task(name="log-answer-batch", cache_policy=NO_CACHE)
def log_answer_batch(
    config: AnswerEvalConfig,
    batch_id: str,
    context: GoldenContext,
    unanswerable_count: int,
    judge_model_id: str,
    answer_model_ids: dict[str, str],
    summaries: dict[str, ConfigurationSummary],
    pairwise: pl.DataFrame,
    pairwise_tallies: list[dict],
    warnings: list[dict],
) -> tuple[str, dict[str, str]]:
    """One parent run for the batch (pairwise tallies and their cost as `pairwise/A/B/...`
    metrics, the pairwise and warnings tables), one child run per configuration. Returns their ids."""
    collections = list(config.collections)
    mlflow_client = tracking.client(config.home)
    experiment_id = tracking.ensure_experiment(mlflow_client, config.home, collections)
    shared = {
        "collections": collections,
        "max_questions": config.max_questions,
        "seed": config.seed,
        "questions": len(context.questions),
        "unanswerable_questions": unanswerable_count,
        "unanswerable_file": str(config.unanswerable) if config.unanswerable else None,
        "judge": config.judge.model_dump(),
        "judge_model_id": judge_model_id,
        "prompt_version": {"answer": ANSWER_PROMPT_VERSION, **PROMPT_VERSIONS},
        "index_digest": context.index_digests,
        "golden_digest": context.golden_digests,
        "embedding_model": context.embedding_models,
    }
    parent = tracking.start_batch(mlflow_client, experiment_id, batch_id, "answers", collections, tracking.flatten_params(shared))
    child_ids = {}
    for configuration in config.configurations:
        label = configuration.label
        summary = summaries[label]
        child_ids[label] = tracking.log_configuration_run(
            mlflow_client,
            experiment_id,
            parent,
            batch_id,
            "answers",
            collections,
            label,
            params=tracking.flatten_params({**shared, "answer_model_id": answer_model_ids[label], "config": configuration.model_dump()}),
            metrics=summary.metrics,
            artifacts={"answers": summary.answers, "judgments": summary.judgments},
        )
    tallies = {
        f"pairwise/{t['configuration_a']}/{t['configuration_b']}/{key}": value
        for t in pairwise_tallies
        for key, value in t.items()
        if key not in ("configuration_a", "configuration_b")
    }
    tracking.log_values(mlflow_client, parent, {}, tallies)
    tracking.log_tables(mlflow_client, parent, {"pairwise": pairwise, "warnings": warnings_frame(warnings)})
    tracking.finish(mlflow_client, parent)
    return parent, child_ids
