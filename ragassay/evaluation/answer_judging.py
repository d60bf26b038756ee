"""Answer evaluation at work: every question through the real answer path under one
configuration, each answer judged for every answer metric, and configurations compared pairwise.
Each step returns its results with what its model calls cost."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from pydantic import BaseModel, ConfigDict

from ragassay.answer.answering import PromptTooLong, answer_question
from ragassay.answer.grounding import declined
from ragassay.answer.settings import AnswerConfiguration
from ragassay.evaluation.answer_summary import AnsweredQuestion
from ragassay.evaluation.questions import EvalQuestion, GoldenContext, dialogue_units
from ragassay.judge.answer_judgement import JudgedAnswer, judge_answer
from ragassay.judge.calibration.alignment import AlignedJudges
from ragassay.judge.judge import Judge, judging_cost
from ragassay.llm.openai_server import ModelResponseTooLarge
from ragassay.llm.structured import Usage
from ragassay.llm.threads import in_order
from ragassay.metrics.answer_metric import AnswerJudgement
from ragassay.metrics.answers import pair_outcome, tally_pairs
from ragassay.progress import ProgressReporter
from ragassay.resources import Resources
from ragassay.run_warnings import RunWarning
from ragassay.search.followups import Exchange
from ragassay.store.judge_schemas import PAIRWISE

# Written in both order columns when two answers are the same text: a tie, no judge call needed.
IDENTICAL = "identical"


def answer_questions(
    resources: Resources,
    home: Path,
    collections: tuple[str, ...],
    questions: list[tuple[EvalQuestion, bool]],
    configuration: AnswerConfiguration,
) -> list[AnsweredQuestion]:
    """Each (question, answerable) through exactly `ragassay answer`'s code path: one after another
    with an in-process answer model, `concurrency` at a time with a served one. A dialogue's turns
    are answered in order, each with the conversation so far (its earlier questions and the
    answers this configuration gave them); dialogues go side by side like single questions."""
    lock, done = threading.Lock(), [0]

    def answered_unit(unit: list[int]) -> list[AnsweredQuestion]:
        conversation: list[Exchange] = []
        answered = []
        for position in unit:
            question, answerable = questions[position]
            started = time.perf_counter()
            try:
                answer = answer_question(
                    resources, home, list(collections), question.question, configuration, tuple(conversation)
                )
            except (PromptTooLong, ModelResponseTooLarge) as error:
                # That question's row (in no metric, its warning naming it); the others go on.
                answer = declined(question.question, str(error), [], None, Usage())
                item = AnsweredQuestion(
                    question, answerable, answer, Usage(), time.perf_counter() - started, str(error)
                )
            else:
                cut = answer.history_cut
                note = (
                    f"its conversation's {cut} oldest turns were left out to fit the answer model's context"
                    if cut
                    else None
                )
                item = AnsweredQuestion(
                    question, answerable, answer, answer.usage, time.perf_counter() - started, note=note
                )
            answered.append(item)
            conversation.append(Exchange(question.question, answer.prose))
            with lock:
                done[0] += 1
                progress(done[0], len(questions))
        return answered

    units = dialogue_units([question for question, _ in questions])
    with ProgressReporter(
        f"answering {len(questions)} questions ({configuration.label})", total=len(questions)
    ) as progress:
        results = in_order(answered_unit, units, configuration.model.calls_at_once)
    placed = {position: item for unit, items in zip(units, results) for position, item in zip(unit, items)}
    return [placed[position] for position in range(len(questions))]


@dataclass(frozen=True)
class JudgedConfiguration:
    """Every answer metric of each answerable question of one configuration (keyed by
    `collection/query id`), what the judge cost for it, and how many judgements it took from
    earlier configurations' identical ones."""

    judgements: dict[str, AnswerJudgement]
    usage: Usage
    reused: int
    # Each question's judge seconds (the model's; a remembered verdict costs none): how long its
    # trace's judge span lasts.
    seconds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def combined(cls, parts: list[JudgedConfiguration]) -> JudgedConfiguration:
        """The judgements of a configuration judged in parts (by several tasks), in part order."""
        return cls(
            {key: judgement for part in parts for key, judgement in part.judgements.items()},
            Usage.total(part.usage for part in parts),
            sum(part.reused for part in parts),
            {key: seconds for part in parts for key, seconds in part.seconds.items()},
        )


def judge_answers(
    resources: Resources,
    home: Path,
    judge: Judge,
    answered: list[AnsweredQuestion],
    label: str,
    aligned: AlignedJudges | None = None,
    metrics: frozenset[str] | None = None,
) -> JudgedConfiguration:
    """Judge each answerable question's answer for the metrics asked for (None: all); answer relevancy embeds with the question
    collection's own model (the one it was indexed with, the default one when it is not indexed:
    a system under test answers from its own index, so none of ours is needed). A question
    collection with an aligned judge in use (aligned) has its support verdicts read by it."""
    by_collection = aligned.by_collection if aligned else {}
    answerable = [a for a in answered if a.answerable and a.error is None]

    def judged_one(item: AnsweredQuestion) -> JudgedAnswer:
        embedder = resources.collection_embedder(home, item.question.query_collection)
        return judge_answer(
            judge,
            item.answer,
            item.question.reference_answer,
            embedder.embed_query,
            by_collection.get(item.question.query_collection),
            metrics,
        )

    with ProgressReporter(f"judging {len(answerable)} answers ({label})", total=len(answerable)) as progress:
        # A served judge judges several answers at once (each fanning out its passages too; the
        # model bounds the calls in flight); an in-process one, one answer after another.
        results = judge.each(judged_one, answerable, progress)
    judged = {item.key: result for item, result in zip(answerable, results)}
    return JudgedConfiguration(
        {key: result.judgement for key, result in judged.items()},
        Usage.total(result.usage for result in judged.values()),
        sum(result.reused for result in judged.values()),
        {key: result.usage.seconds for key, result in judged.items()},
    )


def configuration_pairs(labels: list[str]) -> list[tuple[str, str]]:
    return list(itertools.combinations(labels, 2))


class PairwiseTally(BaseModel):
    """One pair's row of the pairwise summary: the judge's preferences asked in both orders
    (metrics/answers.tally_pairs) and what asking cost (Usage.as_metrics with prefix `judge`;
    None where not known: a batch read back from MLflow, whose pairwise table keeps the verdicts,
    not their cost)."""

    model_config = ConfigDict(frozen=True)

    configuration_a: str
    configuration_b: str
    wins_a: int
    ties: int
    wins_b: int
    inconsistent: int
    unreadable: int
    questions: int
    inconsistent_share: float
    judge_calls: int | None = None
    judge_prompt_tokens: int | None = None
    judge_completion_tokens: int | None = None
    judge_seconds: float | None = None
    judge_unparseable: int | None = None
    judge_cached_calls: int | None = None


@dataclass(frozen=True)
class PairComparison:
    """One pair of configurations compared question by question, and what the judge cost."""

    label_a: str
    label_b: str
    table: pl.DataFrame
    usage: Usage

    def tally(self) -> PairwiseTally:
        """Wins, ties, inconsistent verdicts and the judge's cost, as one row of the pairwise summary."""
        return PairwiseTally(
            configuration_a=self.label_a,
            configuration_b=self.label_b,
            **tally_pairs(self.table["outcome"].to_list()),
            **self.usage.as_metrics("judge"),
        )


def compare_answers(
    judge: Judge, label_a: str, answered_a: list[AnsweredQuestion], label_b: str, answered_b: list[AnsweredQuestion]
) -> PairComparison:
    """The judge's preference per answerable question, asked with a first and with b first."""
    # A question either system under test failed to answer is compared on nothing.
    pairs = [
        (a, b)
        for a, b in zip(answered_a, answered_b, strict=True)
        if a.answerable and a.error is None and b.error is None
    ]
    rows, asked = [], []
    with ProgressReporter(
        f"comparing {label_a} with {label_b} on {len(pairs)} questions", total=len(pairs)
    ) as progress:
        for done, (a, b) in enumerate(pairs, start=1):
            if a.answer.text == b.answer.text:
                a_first = b_first = IDENTICAL
                outcome = "tie"
            else:
                reference = a.question.reference_answer
                # The judge reads the answers' words; citation markers would only add noise.
                first = judge.preference(a.question.question, reference, a.answer.prose, b.answer.prose)
                second = judge.preference(a.question.question, reference, b.answer.prose, a.answer.prose)
                asked += [first, second]
                a_first = first.value.preferred if first.value else None
                b_first = second.value.preferred if second.value else None
                outcome = pair_outcome(a_first, b_first)
            rows.append(
                {
                    "configuration_a": label_a,
                    "configuration_b": label_b,
                    "query_collection": a.question.query_collection,
                    "query_id": a.question.query_id,
                    "a_first": a_first,
                    "b_first": b_first,
                    "outcome": outcome,
                }
            )
            progress(done, len(pairs))
    return PairComparison(label_a, label_b, pl.DataFrame(rows, schema=PAIRWISE.schema), judging_cost(asked)[0])


def batch_warnings(configuration_warnings: list[list[RunWarning]], context: GoldenContext) -> list[RunWarning]:
    """Every configuration's warnings, then the golden set's (which belong to no configuration)."""
    return [warning for warnings in configuration_warnings for warning in warnings] + context.warnings
