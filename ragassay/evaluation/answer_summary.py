"""Answer evaluation of one configuration as tables and run metrics. Pure: answers and verdicts in,
Parquet-ready frames, MLflow-ready numbers and warnings out. Averaging happens in
metrics/averaging.py only.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ragassay.answer.grounding import GroundedAnswer
from ragassay.evaluation.questions import EvalQuestion
from ragassay.judge.judge import TOO_LONG
from ragassay.llm.structured import Usage
from ragassay.metrics.answer_metric import AnswerJudgement
from ragassay.metrics.answers import (
    NO_CONTEXTS,
    NOT_ASKED,
    UNREADABLE,
    false_refusal_rate,
    refusal_recall,
)
from ragassay.metrics.averaging import interval_table, mean_scored
from ragassay.metrics.declared import DECLARED_METRICS, NEEDING_CONTEXT, NEEDING_REFERENCE
from ragassay.metrics.names import ANSWER_METRICS, METRIC_TITLES, REPORTED_ANSWER_METRICS
from ragassay.metrics.significance import compare_all_pairs
from ragassay.run_warnings import RunWarning
from ragassay.search.rerank import RerankStats
from ragassay.store.judge_schemas import JUDGMENTS
from ragassay.store.schemas import answers_spec


@dataclass
class AnsweredQuestion:
    """One question through the answer path under one configuration, with its cost."""

    question: EvalQuestion
    answerable: bool
    answer: GroundedAnswer
    usage: Usage
    seconds: float
    # Why a system under test gave no answer (its call failed), or why our answer path could not
    # ask its model (`too_long: ...`): such a question counts in no metric.
    error: str | None = None
    retries: int = 0  # a system under test's attempts after the first
    # What was noticed of a system's call besides its error (systems/records.SystemRecord.note).
    note: str | None = None

    @property
    def error_kind(self) -> str | None:
        """The kind of a failed call (`timeout`, `http_status`, ...): the error's text before `:`."""
        return self.error.split(":")[0] if self.error is not None else None

    @property
    def key(self) -> str:
        return f"{self.question.query_collection}/{self.question.query_id}"


@dataclass
class ConfigurationSummary:
    """What one configuration's answer evaluation logs: run metrics, tables and warnings, and the
    answers and judgements they came from (for the questions' traces)."""

    metrics: dict[str, float]
    answers: pl.DataFrame
    judgments: pl.DataFrame
    warnings: list[RunWarning]
    answered: list[AnsweredQuestion]
    judgements: dict[str, AnswerJudgement]
    # Each question's judge seconds (JudgedConfiguration.seconds), for its trace.
    judge_seconds: dict[str, float] = field(default_factory=dict)


def summarize_configuration(
    label: str,
    answered: list[AnsweredQuestion],
    judgements: dict[str, AnswerJudgement],
    judge_usage: Usage,
    judge_reused: int = 0,
    judge_seconds: dict[str, float] | None = None,
) -> ConfigurationSummary:
    """Run metrics (each answer metric with the number of questions it scored; refusal in both
    directions; cost), the answers and judgments tables, and a warning per unreadable output."""
    failed = [a for a in answered if a.error is not None]
    answerable = [a for a in answered if a.answerable and a.error is None]
    unanswerable = [a for a in answered if not a.answerable and a.error is None]
    metrics: dict[str, float] = {}
    for name in ANSWER_METRICS:
        scores = [judgements[a.key].scores().get(name, NOT_ASKED) for a in answerable if a.key in judgements]
        if scores and all(score == NOT_ASKED for score in scores):
            continue  # left out by the evaluation's `metrics:`, so neither a mean nor a count
        mean, scored = mean_scored(scores)
        if mean is not None:
            metrics[name] = mean
        metrics[f"{name}_scored"] = scored
    refused = [a.answer.outcome == "refused" for a in unanswerable]
    declined = [a.answer.outcome == "refused" for a in answerable]
    refusal = {"refusal_recall": refusal_recall(refused), "false_refusal_rate": false_refusal_rate(declined)}
    metrics.update({name: value for name, value in refusal.items() if value is not None})
    metrics["unanswerable_questions"] = len(unanswerable)
    metrics["answerable_questions"] = len(answerable)
    if failed:
        metrics["failed_questions"] = len(failed)
    answer_usage = Usage.total(a.usage for a in answered)
    metrics.update(answer_usage.as_metrics("answer_model"))
    metrics.update(judge_usage.as_metrics("judge"))
    metrics["judge_reused_verdicts"] = judge_reused
    metrics["answer_seconds"] = round(sum(a.seconds for a in answered), 3)
    if any(a.answer.refusal_source is not None or a.error is not None for a in answered):
        metrics.update(system_call_metrics(answered))
    return ConfigurationSummary(
        metrics=metrics,
        answers=_answers_frame(label, answered, judgements),
        judgments=_judgments_frame(label, answerable, judgements),
        warnings=_warnings(label, answered, judgements),
        answered=answered,
        judgements=judgements,
        judge_seconds=judge_seconds or {},
    )


def system_call_metrics(answered: list[AnsweredQuestion]) -> dict[str, float]:
    """A system under test's calls: asked, answered, coverage = answered / asked, errors by kind,
    retries, and latency p50 and p95 in ms over the calls that returned (as in retrieval evaluation)."""
    returned = [a.seconds * 1000 for a in answered if a.error is None]
    kinds = Counter(a.error_kind for a in answered if a.error is not None)
    metrics = {
        "asked": float(len(answered)),
        "answered": float(len(returned)),
        "coverage": len(returned) / len(answered) if answered else 0.0,
        **{f"errors/{kind}": float(count) for kind, count in sorted(kinds.items())},
        "retries": float(sum(a.retries for a in answered)),
    }
    if returned:
        p50, p95 = np.percentile(returned, [50, 95])
        metrics |= {"latency_p50_ms": round(float(p50), 3), "latency_p95_ms": round(float(p95), 3)}
    return metrics


def _answers_frame(
    label: str, answered: list[AnsweredQuestion], judgements: dict[str, AnswerJudgement]
) -> pl.DataFrame:
    rows = []
    for a in answered:
        judgement = judgements.get(a.key)
        scores = judgement.scores() if judgement else {}
        rows.append(
            {
                "configuration": label,
                "query_collection": a.question.query_collection,
                "query_id": a.question.query_id,
                "question": a.question.question,
                "dialogue_id": a.question.dialogue_id,
                "turn": a.question.turn,
                "search_query": a.answer.search_query,
                "note": a.note,
                "answerable": a.answerable,
                "outcome": "error" if a.error is not None else a.answer.outcome,
                "reason": a.error if a.error is not None else a.answer.reason,
                "answer": a.answer.text,
                "statements": len(a.answer.statements),
                "citations": sum(len(s.citations) for s in a.answer.statements) + len(a.answer.answer_citations),
                "sources": len(a.answer.sources),
                "unparseable": a.answer.unparseable,
                "relevance": a.answer.relevance,
                "answer_calls": a.usage.calls,
                "answer_prompt_tokens": a.usage.prompt_tokens,
                "answer_completion_tokens": a.usage.completion_tokens,
                "answer_model_seconds": a.usage.seconds,
                "answer_seconds": a.seconds,
                **{name: scores[name].value if name in scores else None for name in ANSWER_METRICS},
                # What a metric's judge read beside its value (the implied question).
                **{
                    metric.detail_column: scores[metric.name].detail if metric.name in scores else None
                    for metric in DECLARED_METRICS
                    if metric.detail_column
                },
            }
        )
    return pl.DataFrame(rows, schema=answers_spec(ANSWER_METRICS).schema)


def _judgments_frame(
    label: str, answerable: list[AnsweredQuestion], judgements: dict[str, AnswerJudgement]
) -> pl.DataFrame:
    rows = [
        {
            "configuration": label,
            "query_collection": a.question.query_collection,
            "query_id": a.question.query_id,
            **{key: value for key, value in verdict.items() if key in JUDGMENTS.schema},
        }
        for a in answerable
        if a.key in judgements
        for verdict in judgements[a.key].verdicts
    ]
    return pl.DataFrame(rows, schema=JUDGMENTS.schema)


def _warnings(label: str, answered: list[AnsweredQuestion], judgements: dict[str, AnswerJudgement]) -> list[RunWarning]:
    """What a configuration's answers leave out, and why: an unreadable answer or verdict, a
    reranker's fallback, answers without context text, failed calls, questions without a reference."""
    warnings = [warning for a in answered for warning in _question_warnings(label, a, judgements.get(a.key))]
    # A fallback is never silent: those questions were answered from the fused order.
    reranked = RerankStats.total(a.answer.rerank for a in answered if a.error is None)
    if reranked.fallbacks:
        warnings.append(RunWarning(configuration=label, metric="rerank", reason=reranked.fallback_reason()))
    without_contexts = [a.key for a in answered if a.error is None and not a.answer.contexts_returned and a.answerable]
    if without_contexts:
        warnings.append(
            RunWarning(
                configuration=label,
                metric=", ".join(NEEDING_CONTEXT),
                question=_first_keys(without_contexts),
                reason=f"{len(without_contexts)} answers came without context text: {NO_CONTEXTS}",
            )
        )
    failures: dict[str, list[AnsweredQuestion]] = {}
    for a in answered:
        if a.error is not None:
            failures.setdefault(a.error_kind, []).append(a)
    for kind, items in failures.items():
        # too_long: our answer path did not ask its model; any other kind is a system's failed call.
        whose = "the answer model was not asked: " if kind == TOO_LONG else ""
        source = "" if kind == TOO_LONG else " from the system"
        warnings.append(
            RunWarning(
                configuration=label,
                metric=f"errors/{kind}",
                question=items[0].key,
                reason=f"{len(items)} questions got no answer{source} ({whose}{items[0].error}); they count in no metric",
            )
        )
    missing = [a.key for a in answered if a.answerable and not a.question.reference_answer]
    if missing:
        warnings.append(
            RunWarning(
                configuration=label,
                metric=", ".join(NEEDING_REFERENCE),
                question=_first_keys(missing),
                reason=f"{len(missing)} questions have no reference answer, so {_in_words(NEEDING_REFERENCE)} "
                "cannot score them",
            )
        )
    return warnings


def _in_words(metrics: tuple[str, ...]) -> str:
    """Metrics' titles as a sentence names them: `context recall and answer correctness`."""
    titles = [METRIC_TITLES[name] for name in metrics]
    return " and ".join(titles) if len(titles) < 3 else ", ".join(titles[:-1]) + " and " + titles[-1]


def _question_warnings(label: str, a: AnsweredQuestion, judgement: AnswerJudgement | None) -> list[RunWarning]:
    """One question's: an answer the model's output did not give, a metric its judge's output did not."""
    warnings = []
    if a.answer.unparseable:
        warnings.append(
            RunWarning(
                configuration=label,
                metric="answer",
                question=a.key,
                reason="the answer model's output could not be read; the user saw a refusal, and it counts as one",
            )
        )
    for name, scored in (judgement.scores() if judgement else {}).items():
        if scored.excluded and scored.excluded.startswith(UNREADABLE):
            # A prompt the judge's context could not hold was never sent: named for what it is.
            too_long = [
                v for v in judgement.verdicts if v["metric"] == name and (v["error"] or "").startswith(TOO_LONG)
            ]
            reason = (
                f"{TOO_LONG}: {len(too_long)} of its verdicts did not fit the judge's context (never sent, never "
                "cut); not scored"
                if too_long
                else scored.excluded
            )
            warnings.append(RunWarning(configuration=label, metric=name, question=a.key, reason=reason))
    return warnings


def _first_keys(keys: list[str]) -> str:
    """The first five question keys of a warning, and … when there are more."""
    return ", ".join(keys[:5]) + (" …" if len(keys) > 5 else "")


# The functions below take each configuration's answers as per-question scores (`per_question`:
# metrics/averaging.answer_scores of its answers table, refusal both ways beside the judged
# metrics), computed once per batch by evaluation/answer_outcomes.summarize_answer_batch.


def answer_intervals(per_question: dict[str, pl.DataFrame], seed: int = 0) -> pl.DataFrame:
    """Each answer metric's mean, scored count and 95% interval per configuration, refusal both
    ways included."""
    return interval_table(per_question, list(REPORTED_ANSWER_METRICS), seed)


def answer_differences(per_question: dict[str, pl.DataFrame], seed: int = 0) -> pl.DataFrame:
    """Every pair of configurations, every answer metric: the paired difference over the questions
    both scored, its bootstrap 95% interval and randomization p (metrics/significance.py), as
    retrieval evaluation compares its metrics."""
    return compare_all_pairs(per_question, REPORTED_ANSWER_METRICS, seed)


def question_set_warnings(per_question: dict[str, pl.DataFrame]) -> list[RunWarning]:
    """A warning for each pair of configurations and metric scored on different questions: their
    means are not over the same questions, and only the questions both scored are compared."""
    key = pl.col("query_collection") + "/" + pl.col("query_id")
    scored = {
        label: {
            name: set(table.filter(pl.col(name).is_not_null()).select(key).to_series())
            for name in REPORTED_ANSWER_METRICS
        }
        for label, table in per_question.items()
    }
    warnings = []
    for label_a, label_b in itertools.combinations(scored, 2):
        differing = [name for name in REPORTED_ANSWER_METRICS if scored[label_a][name] != scored[label_b][name]]
        if differing:
            counts = "; ".join(
                f"{name} {len(scored[label_a][name])} against {len(scored[label_b][name])} "
                f"({len(scored[label_a][name] & scored[label_b][name])} both)"
                for name in differing
            )
            warnings.append(
                RunWarning(
                    configuration=f"{label_a} vs {label_b}",
                    metric=", ".join(differing),
                    question="",
                    reason=f"scored on different questions ({counts}); their means are over different questions, "
                    "and the paired differences use only the questions both scored",
                )
            )
    return warnings


# The judgments table's probabilities, rounded in the preview: the verdict's, then what the judge
# model said where it was asked, then the correctness grade's.
JUDGMENT_PROBABILITIES = (
    "p_supported",
    "three_way_p_supported",
    "three_way_p_contradicted",
    "judge_p_supported",
    "p_correct",
)
# The judgments table as MLflow's UI previews it: what a person reads first (the question, the
# statement, the verdict and its probabilities, the passage it was judged against), then where it is from.
JUDGMENTS_PREVIEW_FIRST = ("question", "statement", "verdict", *JUDGMENT_PROBABILITIES, "context", "metric")


def judgments_preview(judgments: pl.DataFrame, answers: pl.DataFrame) -> pl.DataFrame:
    """One configuration's judgments for a person to read in MLflow: each row with its question's
    text, the columns in JUDGMENTS_PREVIEW_FIRST order and the rest after, P to 3 places (the
    Parquet table beside it keeps every digit)."""
    questions = answers.select("query_collection", "query_id", "question").unique(
        ["query_collection", "query_id"], keep="first", maintain_order=True
    )
    joined = judgments.join(questions, on=["query_collection", "query_id"], how="left", maintain_order="left")
    rest = [name for name in judgments.columns if name not in JUDGMENTS_PREVIEW_FIRST]
    probabilities = [name for name in JUDGMENT_PROBABILITIES if name in judgments.columns]
    first = [name for name in JUDGMENTS_PREVIEW_FIRST if name in joined.columns]
    return joined.with_columns(pl.col(*probabilities).round(3)).select(*first, *rest)
