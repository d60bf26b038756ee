"""Each answered question of an answer evaluation as the trace MLflow's Traces view shows: what was
retrieved (every passage, as MLflow's RETRIEVER span convention expects), the answer with its
tokens and model, and every judge verdict beside the passage it was judged against, with the
question's scores as assessments (feedback from the judge and the refusal count). The golden set's
expected documents sit on the retrieve span and its reference answer on the answer span, beside
what they are compared with, rather than as MLflow expectations: a run's Traces table shows ten
columns until a user picks others, and two expectation columns would leave room for only three
scores, faithfulness not among them. A golden dialogue is a session, as MLflow 3's Sessions view
reads one: a trace per turn, each with its own scores, all carrying the session's id in their
metadata (`mlflow.trace.session`), and the dialogue's scores (each metric's mean over its turns,
whether every turn was handled) as session-level assessments on its first turn. Pure: answers and
verdicts in, trace records out; tracking.log_traces writes them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ragassay.evaluation.answer_summary import AnsweredQuestion
from ragassay.judge.judge import context_text
from ragassay.metrics.answer_metric import AnswerJudgement
from ragassay.metrics.answers import NOT_ASKED, UNREADABLE
from ragassay.metrics.conversations import turn_handled
from ragassay.metrics.declared import BY_NAME, TURN_METRIC
from ragassay.metrics.names import ANSWER_METRICS

# MLflow's span types (mlflow.entities.SpanType), named here so this module needs no MLflow.
CHAIN, RETRIEVER, LLM, EVALUATOR = "CHAIN", "RETRIEVER", "LLM", "EVALUATOR"
# The feedback names of a trace, as MLflow's assessment filters and columns show them.
REFUSAL = "refusal"
# A dialogue's conversation success (metrics/conversations.py) as its trace's yes/no score. Named
# to sort after "faithfulness": a run's Traces tab shows the first few scores by name, and
# faithfulness must stay among them.
TURNS_HANDLED = "turns_handled"
# MLflow's trace metadata key that groups traces into a session (mlflow.tracing.constant.TraceMetadataKey).
SESSION = "mlflow.trace.session"
# A dialogue's mean of a metric over its turns: `session_faithfulness` beside its first turn's own
# `faithfulness`, and sorted after it (the Traces tab's first columns keep the turns' scores).
SESSION_SCORE = "session_"


@dataclass(frozen=True)
class SpanRecord:
    """One span: its name, MLflow span type, inputs, outputs, attributes and children."""

    name: str
    span_type: str
    inputs: Any = None
    outputs: Any = None
    attributes: dict[str, Any] = field(default_factory=dict)
    children: tuple[SpanRecord, ...] = ()
    # How long the step took, measured (None: as long as its children together). Spans are logged
    # after the work, so tracking/traces.py lays them end to end with these lengths.
    seconds: float | None = None

    def duration(self) -> float:
        """Its measured seconds, or its children's together."""
        return self.seconds if self.seconds is not None else sum(child.duration() for child in self.children)


@dataclass(frozen=True)
class FeedbackRecord:
    """A score on the trace: its value (None with `error` when it could not be given), who gave it
    (`LLM_JUDGE` with the judge model and prompt version, or `CODE` for what is counted), why."""

    name: str
    value: float | str | None
    source_type: str
    source_id: str
    rationale: str | None = None
    error: str | None = None
    # {SESSION: id} for a score of a whole session (a dialogue), as MLflow keeps session-level ones.
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class QuestionTrace:
    """One question (or dialogue turn) under one configuration: the root span, its tags, its
    scores, and its trace metadata (the session a dialogue's turn belongs to)."""

    root: SpanRecord
    tags: dict[str, str]
    feedback: tuple[FeedbackRecord, ...]
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TraceSettings:
    """What every trace of a configuration names: its label, the batch, the answer model (or the
    system under test), the judge, its threshold and prompt version."""

    label: str
    batch_id: str
    answered_by: str
    judge_model_id: str
    support_threshold: float
    judge_prompts: str
    # A system under test retrieves inside its call: its answer span is the call, its retrieve span none.
    system_under_test: bool = False


def answer_traces(
    answered: list[AnsweredQuestion],
    judgements: dict[str, AnswerJudgement],
    judge_seconds: dict[str, float],
    settings: TraceSettings,
) -> list[QuestionTrace]:
    """A trace per question of a configuration (a failed call of a system under test too, its
    error as the answer span's output), and per turn of each golden dialogue, the turns of one
    dialogue a session (_dialogue_traces). Each step
    lasts what it took: retrieval and answer from the question's measured seconds, the judge from
    its model seconds (judge_seconds, by question key)."""
    traces, dialogues = [], {}
    for item in answered:
        if item.question.dialogue_id is None:
            traces.append(_trace(item, judgements.get(item.key), judge_seconds, settings))
        else:
            dialogues.setdefault((item.question.query_collection, item.question.dialogue_id), []).append(item)
    for turns in dialogues.values():
        traces.extend(_dialogue_traces(turns, judgements, judge_seconds, settings))
    return traces


def _retrieve_span(item: AnsweredQuestion) -> SpanRecord:
    """The retrieve span: each passage the answer could cite, as MLflow's retriever spans show
    documents, and the documents the golden set expects (answerable questions)."""
    return SpanRecord(
        "retrieve",
        RETRIEVER,
        inputs={"query": item.answer.search_query or item.question.question},
        outputs=[
            {
                "page_content": source.text,
                "metadata": {
                    "doc_uri": source.doc_id,
                    "chunk_id": source.chunk_id,
                    "source_number": source.number,
                    "collection": source.collection,
                    "char_start": source.char_start,
                    "char_end": source.char_end,
                },
                "id": source.chunk_id or None,
            }
            for source in item.answer.sources
        ],
        attributes={"expected_documents": sorted(f"{c}/{d}" for (c, d) in item.question.judgements)}
        if item.answerable
        else {},
    )


def _trace(
    item: AnsweredQuestion, judgement: AnswerJudgement | None, judge_seconds: dict[str, float], settings: TraceSettings
) -> QuestionTrace:
    root = SpanRecord(
        # The trace's name on MLflow's Traces page: which configuration, question and batch.
        f"{settings.label} · {item.key} · batch {settings.batch_id}",
        CHAIN,
        inputs={"question": item.question.question, "query_id": item.key},
        outputs={"answer": item.answer.text if item.error is None else None, "outcome": _outcome(item)},
        attributes={"answerable": item.answerable},
        children=_steps(item, judgement, judge_seconds.get(item.key), settings),
    )
    tags = {
        "ragassay.batch_id": settings.batch_id,
        "ragassay.configuration": settings.label,
        "ragassay.query_id": item.key,
        "ragassay.outcome": _outcome(item),
    }
    verdicts = judgement.verdicts if judgement else []
    return QuestionTrace(root, tags, _feedback(item, judgement, verdicts, settings))


def _dialogue_traces(
    turns: list[AnsweredQuestion],
    judgements: dict[str, AnswerJudgement],
    judge_seconds: dict[str, float],
    settings: TraceSettings,
) -> list[QuestionTrace]:
    """One golden dialogue under a configuration as an MLflow session: a trace per turn (its
    follow-up query, retrieval, answer, verdicts and scores), each with the session's id, which
    names the batch, the configuration and the dialogue (a dialogue is a session of each
    configuration of each batch). The first turn's trace also holds the dialogue's scores as
    session-level assessments: each judged metric's mean over its turns (which turns scored what
    in the rationale) and whether every turn was cited or declined as it should be."""
    first = turns[0].question
    key = f"{first.query_collection}/{first.dialogue_id}"
    session = {SESSION: f"{settings.batch_id}/{settings.label}/{key}"}
    traces = []
    for item in turns:
        turn = _trace(item, judgements.get(item.key), judge_seconds, settings)
        tags = turn.tags | {"ragassay.dialogue": key, "ragassay.turn": str(item.question.turn)}
        feedback = turn.feedback
        if item is turns[0]:
            dialogue = _dialogue_feedback(turns, judgements, settings)
            feedback += tuple(replace(record, metadata=session) for record in dialogue)
        traces.append(replace(turn, tags=tags, feedback=feedback, metadata=session))
    return traces


def _steps(
    item: AnsweredQuestion, judgement: AnswerJudgement | None, judge_seconds: float | None, settings: TraceSettings
) -> tuple[SpanRecord, ...]:
    """A question's (or turn's) steps: the follow-up's query (what it searched with its
    conversation), the retrieval, the answer, and the judge's verdicts. The answer lasts the
    question's model seconds (a rewrite's and a reranking's included; a system under test's: its
    call), the retrieval the rest of the question's seconds, the judge its model seconds, and each
    verdict its own model seconds (none for one the completion cache remembered, or read back from
    a stored table, which keeps no seconds)."""
    answer = item.answer
    sources = {source.number: source for source in answer.sources}
    reference = item.question.reference_answer if item.answerable else None
    # Model seconds of our answer path (a remembered answer's: none); the rest of the question's
    # seconds is its retrieval (and, for a follow-up, searching with its conversation).
    answer_seconds = item.seconds if settings.system_under_test else item.usage.seconds
    retrieve = replace(_retrieve_span(item), seconds=max(item.seconds - answer_seconds, 0.0))
    generate = SpanRecord(
        "answer",
        LLM,
        inputs={"question": item.question.question, "sources": len(answer.sources)},
        outputs={"error": item.error} if item.error is not None else {"answer": answer.text, "outcome": answer.outcome},
        attributes={
            "model_id": settings.answered_by,
            "prompt_tokens": item.usage.prompt_tokens,
            "completion_tokens": item.usage.completion_tokens,
            "reason": answer.reason,
            **({"reference_answer": reference} if reference else {}),
        },
        seconds=answer_seconds,
    )
    verdicts = judgement.verdicts if judgement else []
    context = context_text(answer.sources)
    judge = SpanRecord(
        "judge",
        CHAIN,
        seconds=judge_seconds or 0.0,
        attributes={"judge_model_id": settings.judge_model_id, "prompts": settings.judge_prompts},
        children=tuple(
            _verdict_span(verdict, sources, context, item.question.reference_answer, settings) for verdict in verdicts
        ),
    )
    query = (
        (
            SpanRecord(
                "follow-up query",
                CHAIN,
                inputs={"question": item.question.question, "earlier_questions": list(item.question.history)},
                outputs={"query": answer.search_query},
            ),
        )
        if answer.search_query
        else ()
    )
    return (*query, retrieve, generate, judge)


def _outcome(item: AnsweredQuestion) -> str:
    return "error" if item.error is not None else item.answer.outcome


def _verdict_span(
    verdict: dict, sources: dict, context: str, reference: str | None, settings: TraceSettings
) -> SpanRecord:
    """One verdict beside the passage it was judged against: the cited source for a citation's, the
    reference answer for a grade of the whole answer (a metric with a grade_threshold), else the
    whole numbered context."""
    metric, number = verdict["metric"], verdict["source_number"]
    grade_threshold = BY_NAME[metric].grade_threshold if metric in BY_NAME else None
    correctness = grade_threshold is not None
    if correctness:
        passage = f"reference answer: {reference}"
    elif number is not None and number in sources:
        passage = sources[number].text
    else:
        passage = context
    index = verdict["statement_index"]
    threshold = grade_threshold(settings.judge_model_id) if correctness else settings.support_threshold
    probability = verdict["p_correct"] if correctness else verdict["p_supported"]
    # Named by the statement itself (cut to a span list's width), its number first to keep two
    # equal statements apart; the threshold beside the verdict it decided.
    return SpanRecord(
        f"{metric}: whole answer" if index < 0 else f"{metric} {index + 1}: {_cut(verdict['statement'])}",
        EVALUATOR,
        inputs={"statement": verdict["statement"], "passage": passage, "source_number": number},
        outputs={
            "verdict": verdict["verdict"],
            "p": probability,
            "threshold": threshold,
            "error": verdict["error"],
            # The judge model's answers beside a learned verdict's P, where they were asked.
            **{
                shown: verdict[name]
                for shown, name in (
                    ("judge_p", "judge_p_supported"),
                    ("three_way_p_supported", "three_way_p_supported"),
                    ("three_way_p_contradicted", "three_way_p_contradicted"),
                )
                if verdict.get(name) is not None
            },
        },
        attributes={
            "metric": metric,
            "p_correct" if correctness else "p_supported": probability,
            "threshold": threshold,
        },
        seconds=verdict.get("seconds") or 0.0,
    )


SPAN_NAME_CHARACTERS = 60


def _cut(statement: str) -> str:
    text = " ".join(statement.split())
    return text if len(text) <= SPAN_NAME_CHARACTERS else text[: SPAN_NAME_CHARACTERS - 1].rstrip() + "…"


def _dialogue_feedback(
    turns: list[AnsweredQuestion], judgements: dict[str, AnswerJudgement], settings: TraceSettings
) -> tuple[FeedbackRecord, ...]:
    """A dialogue's scores: each judged metric's mean over the turns that scored it (none where no
    turn did; named SESSION_SCORE + the metric), and whether every turn was handled
    (metrics/conversations.turn_handled)."""
    judged_by = f"{settings.judge_model_id} ({settings.judge_prompts})"
    records = []
    for name in ANSWER_METRICS:
        scored = [
            (item.question.turn, judgements[item.key].scores()[name].value)
            for item in turns
            if item.key in judgements and judgements[item.key].scores()[name].value is not None
        ]
        if scored:
            mean = round(sum(value for _, value in scored) / len(scored), 4)
            rationale = "mean over turns: " + ", ".join(f"turn {turn} {value:.2f}" for turn, value in scored)
            records.append(FeedbackRecord(SESSION_SCORE + name, mean, "LLM_JUDGE", judged_by, rationale=rationale))
    handled = [
        turn_handled(
            item.answerable,
            _outcome(item),
            sum(len(s.citations) for s in item.answer.statements) + len(item.answer.answer_citations),
            judgements[item.key].scores()[TURN_METRIC].value if item.key in judgements else None,
        )
        for item in turns
    ]
    if all(value is not None for value in handled):
        records.append(
            FeedbackRecord(
                TURNS_HANDLED,
                "yes" if all(handled) else "no",
                "LLM_JUDGE",
                judged_by,
                rationale=", ".join(f"turn {n}: {'handled' if ok else 'not'}" for n, ok in enumerate(handled, 1)),
            )
        )
    return tuple(records)


def _feedback(
    item: AnsweredQuestion, judgement: AnswerJudgement | None, verdicts: list[dict], settings: TraceSettings
) -> tuple[FeedbackRecord, ...]:
    """Each judged metric's score of the question (or why it has none), and its refusal outcome."""
    judged_by = f"{settings.judge_model_id} ({settings.judge_prompts})"
    records = []
    if judgement is not None:
        scores = judgement.scores()
        for name in ANSWER_METRICS:
            scored = scores[name]
            if scored == NOT_ASKED:
                continue
            failing = [
                v["statement"] for v in verdicts if v["metric"] == name and v["verdict"] in ("unsupported", "incorrect")
            ]
            # Each metric's own word for what failed (answer correctness grades the whole answer).
            failed_as = BY_NAME[name].failed_as
            rationale = (f"{failed_as}: " + " | ".join(failing)) if failing else None
            # Left out by design (a refusal, no reference answer, no contexts) is no error; the
            # judge's unreadable output is.
            unreadable = scored.value is None and (scored.excluded or "").startswith(UNREADABLE)
            if scored.value is None and not unreadable:
                rationale = f"not scored: {scored.excluded}"
            records.append(
                FeedbackRecord(
                    name,
                    scored.value,
                    "LLM_JUDGE" if BY_NAME[name].asks_judge else "CODE",
                    judged_by if BY_NAME[name].asks_judge else "ragassay",
                    rationale=rationale,
                    error=f"not scored: {scored.excluded}" if unreadable else None,
                )
            )
    if item.error is None:
        declined = item.answer.outcome == "refused"
        refusal = (
            ("false refusal" if declined else "answered")
            if item.answerable
            else ("correct refusal" if declined else "missed refusal")
        )
        records.append(FeedbackRecord(REFUSAL, refusal, "CODE", "ragassay", rationale=item.answer.reason))
    return tuple(records)
