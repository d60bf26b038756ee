"""The judge model at work: the judgements of judge/prompts.py through the one model interface,
with their cost, and the judging of one answer for every answer metric."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypedDict

import numpy as np
from pydantic import BaseModel

from ragassay.answer.grounding import GroundedAnswer, Source
from ragassay.judge.alignment import AlignedJudge
from ragassay.judge.learned_verdict import LEARNED_THRESHOLD, LearnedVerdict, learned_verdict_for
from ragassay.judge.metric_input import MetricInput
from ragassay.judge.passage_choice import passages_to_ask
from ragassay.judge.prompts import (
    CORRECTNESS_MAX_TOKENS,
    CORRECTNESS_OPTIONS,
    CRITERIA_MAX_TOKENS,
    IMPLIED_QUESTION_MAX_TOKENS,
    SUPPORT_MAX_TOKENS,
    SUPPORT_OPTIONS,
    CorrectnessGrade,
    CriteriaScore,
    ImpliedQuestion,
    Preference,
    SupportVerdict,
    correctness_messages,
    criteria_messages,
    criteria_schema,
    implied_question_messages,
    support_messages,
)
from ragassay.llm.completion import ChatModel, spelled_options
from ragassay.llm.messages import one_line
from ragassay.llm.openai_server import ModelResponseTooLarge
from ragassay.llm.structured import Structured, Usage, generate_structured, unreadable
from ragassay.llm.threads import in_order
from ragassay.metrics.answers import (
    NO_CONTEXTS,
    NOT_ASKED,
    AnswerJudgement,
    Scored,
    Verdict,
    answer_correctness,
    answer_relevancy,
    citation_precision,
    context_recall,
    faithfulness,
    split_statements,
)
from ragassay.metrics.declared import ADDED_METRICS, BUILT_IN_METRICS

# Tokens the chat template adds around each message (role markers); used to check a prompt fits.
TEMPLATE_TOKENS_PER_MESSAGE = 8
# Below this share of its probability on "supported" or "unsupported" the judge meant neither:
# the verdict is unreadable rather than a coin flip between two unlikely words.
MIN_OPTION_COVERAGE = 0.5
# P(supported) at or above which a statement is judged supported, per judge model. 0.5 unless the
# model's threshold was chosen on the development half of MEMERAG-EXT (benchmarks/
# bench_judge_agreement.py; BENCHMARKS.md, "Judge agreement"): a small model says "supported"
# too readily, and a threshold on its probability corrects that bias.
SUPPORT_THRESHOLDS = {"qwen2.5-1.5b": 0.85}
DEFAULT_SUPPORT_THRESHOLD = 0.5
# Two answers whose P(correct) differ by less than this are a tie in a pairwise comparison.
PREFERENCE_TIE_MARGIN = 0.05
# P(correct) at or above which an answer counts as correct (answer_correctness). Not calibrated
# against people's labels: the judge's own odds, read as they are.
CORRECT_THRESHOLD = 0.5


def asking_threshold_for(model_id: str) -> float:
    """The threshold on a judge model's own P(supported): a catalog model's calibrated one (its id
    starts with the catalog name), else 0.5. Where a learned verdict reads the judge, it decides
    only which passages are asked (support_by_passage stops at the first that passes it)."""
    return SUPPORT_THRESHOLDS.get(model_id.split(":", 1)[0], DEFAULT_SUPPORT_THRESHOLD)


def support_threshold_for(model_id: str) -> float:
    """The threshold on a support verdict's P(supported): the learned verdict's where one reads
    this judge (learned_verdict.LEARNED_THRESHOLD), else asking_threshold_for."""
    return LEARNED_THRESHOLD if learned_verdict_for(model_id) is not None else asking_threshold_for(model_id)


# A verdict's error when its prompt did not fit the judge's context: never sent, never cut.
TOO_LONG = "too_long"


class Judge:
    """The judge model: each judgement asked at temperature 0, and remembered by the digest of its
    prompt for the judge's lifetime (one evaluation), so an identical judgement (the same
    statement and context in two configurations) costs one call. A remembered result comes back
    marked `reused`, with zero cost; each result carries its own cost. A prompt that does not fit
    the model's context is never cut: it comes back unreadable, marked `too_long`.

    A served judge (an `openai` backend of `concurrency` > 1) is asked that many judgements at once
    (support_by_passage); every result is what the same prompt asked alone gives, in the same place:
    results are keyed and placed by their prompt, never by when they came back."""

    def __init__(
        self, model: ChatModel, support_threshold: float | None = None, learned: LearnedVerdict | str | None = "default"
    ):
        self.model = model
        self.model_id = model.model_id
        # The learned verdict that reads this judge's odds with the statement's passages (the
        # shipped one for the default judge; None: the judge's own P against its threshold).
        self.learned = learned_verdict_for(model.model_id) if learned == "default" else learned
        own_threshold = asking_threshold_for(model.model_id)
        if self.learned is None:
            # The judge's own P is the verdict: one threshold both asks and decides.
            self.asking_threshold = self.support_threshold = (
                own_threshold if support_threshold is None else support_threshold
            )
        else:
            self.asking_threshold = own_threshold
            self.support_threshold = LEARNED_THRESHOLD if support_threshold is None else support_threshold
        self.concurrency = getattr(model, "concurrency", 1)
        self._remembered: dict[str, Structured] = {}
        # Prompts being asked now: a thread asking the same prompt waits for that answer instead of
        # asking again, so concurrent judging makes the calls sequential judging makes.
        self._in_flight: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def _remember(self, key_parts: list, max_tokens: int, messages: list[dict], ask) -> Structured:
        key = hashlib.sha256(json.dumps(key_parts, sort_keys=True).encode()).hexdigest()
        with self._lock:
            remembered, asking = self._remembered.get(key), self._in_flight.get(key)
            if remembered is None and asking is None:
                self._in_flight[key] = threading.Event()
        if asking is not None:
            asking.wait()  # then remembered, or (when that call failed) asked again by this thread
            return self._remember(key_parts, max_tokens, messages, ask)
        if remembered is not None:
            return replace(remembered, usage=Usage(), completions=[], reused=True)
        try:
            result = self._asked(max_tokens, messages, ask)
            with self._lock:
                self._remembered[key] = result
        finally:
            with self._lock:
                self._in_flight.pop(key).set()
        return result

    def _asked(self, max_tokens: int, messages: list[dict], ask) -> Structured:
        """ask(), unless the prompt does not fit the judge's context."""
        prompt_tokens = self.prompt_tokens(messages)
        if prompt_tokens + max_tokens > self.model.context_size:
            # Cutting the context would turn supported statements into unsupported ones; say so instead.
            result = replace(
                unreadable(
                    f"{TOO_LONG}: prompt of about {prompt_tokens} tokens does not fit the judge's context of "
                    f"{self.model.context_size}"
                ),
                too_long=True,
            )
        else:
            result = ask()
        return result

    def prompt_tokens(self, messages: list[dict]) -> int:
        return sum(self.model.count_tokens(m["content"]) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)

    def _ask(self, messages: list[dict], output: type, max_tokens: int, schema: dict | None = None) -> Structured:
        return self._remember(
            [output.__name__, messages, schema],
            max_tokens,
            messages,
            lambda: _unless_too_large(
                lambda: generate_structured(self.model, messages, output, max_tokens=max_tokens, schema=schema)
            ),
        )

    def support(self, context: str, statement: str, question: str | None = None) -> Structured[SupportVerdict]:
        """Supported when P(supported) >= the judge's threshold; unreadable when the model put less
        than MIN_OPTION_COVERAGE of its probability on either word. question: the question the
        statement's answer responds to, shown to the judge when given. With a learned verdict,
        P(supported) is the learned verdict's, read from the judge's and the context's."""
        return self._learned(self._judged(context, statement, question), statement, [context], question)

    def _judged(self, context: str, statement: str, question: str | None) -> Structured[SupportVerdict]:
        """The judge model's own verdict: its P(supported) against asking_threshold."""
        messages = support_messages(context, statement, question)
        return self._option_probability(
            ["support", self.asking_threshold, messages],
            messages,
            SUPPORT_OPTIONS,
            "supported",
            SUPPORT_MAX_TOKENS,
            lambda p: SupportVerdict(
                verdict="supported" if p >= self.asking_threshold else "unsupported", p_supported=round(p, 6)
            ),
        )

    def _learned(
        self, result: Structured[SupportVerdict], statement: str, passages: list[str], question: str | None
    ) -> Structured[SupportVerdict]:
        """The judge's verdict read by the learned verdict (none: as it is)."""
        if self.learned is None or result.value is None:
            return result
        judge_p = result.value.p_supported
        p = self.learned.p_supported(statement, passages, question, judge_p)
        verdict = "supported" if p >= self.support_threshold else "unsupported"
        return replace(
            result, value=SupportVerdict(verdict=verdict, p_supported=round(p, 6), judge_p_supported=judge_p)
        )

    def support_by_passage(
        self, passages: list[str], statements: list[str], question: str | None = None
    ) -> list[Structured[SupportVerdict]]:
        """Each statement's support verdict over several passages (support-probability/5): its
        verdicts against passages alone, with the question shown, in the order and number
        judge/passage_choice.passages_to_ask gives (most lexically similar first), stopping at the
        first that supports it; P(supported) is the highest of the verdicts asked, supported when
        that is >= the threshold. Unreadable when a verdict asked is (a passage left unread could
        be the one that supports it).

        Asked in rounds (every statement's first passage, then the next of those not yet
        supported), each round passage by passage, so that consecutive prompts share the
        instructions, the question and the passage as a prefix llama.cpp evaluates once. Version 4
        asked every passage; on MEMERAG-EXT's development half version 5 asks 0.28 of its calls, at
        the same balanced accuracy and kappa, AUC 0.744 against 0.752 (BENCHMARKS.md, "Cheaper
        verdicts")."""
        if not passages:
            # Nothing was retrieved, so nothing supports the statement: unsupported, no judge call.
            return [Structured(SupportVerdict(verdict="unsupported", p_supported=0.0), "", None, 0, [], Usage())] * len(
                statements
            )
        order = [passages_to_ask(statement, passages) for statement in statements]
        asked: list[list[Structured[SupportVerdict]]] = [[] for _ in statements]
        waiting = list(range(len(statements)))
        round_number = 0
        while waiting:
            pairs = sorted((order[index][round_number], index) for index in waiting)
            verdicts = self.each(lambda pair: self._judged(passages[pair[0]], statements[pair[1]], question), pairs)
            for (_, index), verdict in zip(pairs, verdicts):
                asked[index].append(verdict)
            round_number += 1
            waiting = [
                index
                for index in waiting
                if round_number < len(order[index]) and not _settled(asked[index][-1], self.asking_threshold)
            ]
        return [
            self._learned(_highest(results), statement, passages, question)
            for results, statement in zip(asked, statements, strict=True)
        ]

    def each(
        self, judge: Callable, items: list, on_progress: Callable[[int, int], None] = lambda done, total: None
    ) -> list:
        """judge(item) of every item, in the items' order: one by one for an in-process judge
        (consecutive prompts share their prefix), `concurrency` at a time for a served one."""
        return in_order(judge, items, self.concurrency, on_progress)

    def implied_question(self, answer: str) -> Structured[ImpliedQuestion]:
        return self._ask(implied_question_messages(answer), ImpliedQuestion, IMPLIED_QUESTION_MAX_TOKENS)

    def correctness(self, question: str, reference: str | None, answer: str) -> Structured[CorrectnessGrade]:
        """P(correct) of one answer to a question; unreadable as for support."""
        messages = correctness_messages(question, reference, answer)
        return self._option_probability(
            ["correctness", messages],
            messages,
            CORRECTNESS_OPTIONS,
            "correct",
            CORRECTNESS_MAX_TOKENS,
            lambda p: CorrectnessGrade(p_correct=round(p, 6)),
        )

    def preference(self, question: str, reference: str | None, first: str, second: str) -> Structured[Preference]:
        """The answer with the higher P(correct), each graded alone; a tie when they differ by less
        than PREFERENCE_TIE_MARGIN. Asking with the answers swapped reuses both gradings, so the
        order cannot change the verdict. Unreadable when either grading is."""
        graded = [self.correctness(question, reference, answer) for answer in (first, second)]
        usage = Usage.total(result.usage for result in graded)
        if any(result.value is None for result in graded):
            error = next(result.error for result in graded if result.value is None)
            return Structured(None, "", error, 1, [], replace(usage, unparseable=1))
        p_first, p_second = (result.value.p_correct for result in graded)
        preferred = (
            "tie" if abs(p_first - p_second) < PREFERENCE_TIE_MARGIN else ("first" if p_first > p_second else "second")
        )
        value = Preference(preferred=preferred, p_correct_first=p_first, p_correct_second=p_second)
        return Structured(
            value,
            "",
            None,
            1,
            [c for result in graded for c in result.completions],
            usage,
            reused=all(r.reused for r in graded),
        )

    def _option_probability(
        self,
        key_parts: list,
        messages: list[dict],
        options: dict[str, tuple[str, ...]],
        positive: str,
        max_tokens: int,
        value_of: Callable[[float], BaseModel],
    ) -> Structured:
        """A one-word judgement read as P(positive option), made into the judgement's value by
        value_of; unreadable when the options held less than MIN_OPTION_COVERAGE of the model's
        probability. Remembered under key_parts."""

        def ask() -> Structured:
            try:
                answer = self.model.option_probabilities(messages, spelled_options(options))
            except ModelResponseTooLarge as error:
                return unreadable(str(error))  # this verdict's outcome, not the evaluation's
            completion = answer.completion
            if answer.coverage < MIN_OPTION_COVERAGE:
                error = f"the judge put only {answer.coverage:.2f} of its probability on {' or '.join(repr(o) for o in options)}"
                return Structured(None, completion.text, error, 1, [completion], Usage.of([completion], unparseable=1))
            value = value_of(answer.probabilities[positive])
            return Structured(value, completion.text, None, 1, [completion], Usage.of([completion]))

        return self._remember(key_parts, max_tokens, messages, ask)

    def criteria(self, question: str, answer: str, criteria: str) -> Structured[CriteriaScore]:
        return self._ask(
            criteria_messages(question, answer, criteria), CriteriaScore, CRITERIA_MAX_TOKENS, criteria_schema()
        )


def _unless_too_large(ask: Callable[[], Structured]) -> Structured:
    """ask(); a served model's response too large to read is that judgement's unreadable outcome."""
    try:
        return ask()
    except ModelResponseTooLarge as error:
        return unreadable(str(error))


def _settled(result: Structured[SupportVerdict], threshold: float) -> bool:
    """No further passage is asked after a verdict that supports the statement or is unreadable."""
    return result.value is None or result.value.p_supported >= threshold


def _highest(results: list[Structured[SupportVerdict]]) -> Structured[SupportVerdict]:
    """One statement's verdicts against each passage as one: the highest P(supported), what they
    all cost; unreadable (too long, when one was) if any is."""
    usage = Usage.total(result.usage for result in results)
    completions = [c for result in results for c in result.completions]
    reused = all(result.reused for result in results)
    failed = [result for result in results if result.value is None]
    if failed:
        return replace(failed[0], usage=usage, completions=completions, reused=reused)
    best = max(results, key=lambda result: result.value.p_supported)
    return replace(best, usage=usage, completions=completions, reused=reused)


def judging_cost(results: list[Structured]) -> tuple[Usage, int]:
    """What some judgements cost, and how many of them were remembered instead of asked."""
    return Usage.total(result.usage for result in results), sum(1 for result in results if result.reused)


def verdict_of(result: Structured[SupportVerdict]) -> Verdict:
    return None if result.value is None else result.value.verdict == "supported"


def context_text(sources: list[Source]) -> str:
    """The retrieved context as the answer model saw it: numbered sources."""
    return "\n".join(f"[{source.number}] {one_line(source.text)}" for source in sources)


REFUSED = "refused"


@dataclass(frozen=True)
class JudgedAnswer:
    """Every answer metric of one answer, what judging it cost, and how many judgements were
    remembered from identical earlier ones."""

    judgement: AnswerJudgement
    usage: Usage
    reused: int


class VerdictRow(TypedDict):
    """One verdict of an answer's judgement, as the judgments table, the traces and the labelling
    sample read it (store/schemas JUDGMENTS holds the same columns but `seconds`)."""

    metric: str
    statement_index: int  # -1: the whole answer (answer correctness, a citation of the prose)
    statement: str
    source_number: int | None
    verdict: str  # supported, unsupported, correct, incorrect or unreadable
    p_supported: float | None  # P(correct) for answer correctness
    error: str | None
    context: str
    cited_sources: list[int]
    # The model seconds this verdict took (over every passage asked; 0 when the completion cache
    # remembered it): its span's length in the answer's trace. Not a column of the judgments table.
    seconds: float


class _Verdicts:
    """The verdicts of one answer's judgement and the judge calls they cost, recorded as they are
    read (an aligned judge, when given, reads each support verdict's P with its statement and
    context)."""

    def __init__(self, judge: Judge, question: str, aligned: AlignedJudge | None) -> None:
        self.judge, self.question, self.aligned = judge, question, aligned
        self.rows: list[VerdictRow] = []
        self.asked: list[Structured] = []

    def support(
        self, metric: str, index: int, statement: str, source: int | None, context: str, cited: list[int], result=None
    ) -> Verdict:
        """Record one support verdict: `result` when it was asked already (over several
        passages), else asked here against `context` alone."""
        result = result if result is not None else self.judge.support(context, statement, self.question)
        self.asked.append(result)
        verdict = verdict_of(result)
        if self.aligned is not None and verdict is not None:
            verdict = self.aligned.supported(statement, context, result.value.p_supported)
        word = "unreadable" if verdict is None else ("supported" if verdict else "unsupported")
        p = result.value.p_supported if result.value else None
        self.rows.append(
            VerdictRow(
                metric=metric,
                statement_index=index,
                statement=statement,
                source_number=source,
                verdict=word,
                p_supported=p,
                error=result.error,
                context=context,
                cited_sources=cited,
                seconds=result.usage.seconds,
            )
        )
        return verdict


def judge_answer(
    judge: Judge,
    answer: GroundedAnswer,
    reference_answer: str | None,
    embed: Callable[[str], np.ndarray],
    aligned: AlignedJudge | None = None,
    metrics: frozenset[str] | None = None,
) -> JudgedAnswer:
    """The answer metrics of one answer (metrics/declared.py): faithfulness, context recall,
    answer relevancy, citation precision and answer correctness each from its own function
    below, an added metric from its declaration's `score`; those `metrics` leaves out (None: all)
    are not asked (metrics.answers.NOT_ASKED), and cost nothing.

    embed: the question collection's embedding model (normalized vectors), for answer relevancy.
    Answer correctness asks the grading pairwise comparison asks (judge.correctness of the
    answer's prose), so with pairwise comparison on it costs no extra judge call.
    aligned: the question collection's aligned judge (judge/alignment.py), when it has one in use:
    it reads each support verdict's P(supported) with its statement and context into the
    verdict; P(supported) is recorded as the judge gave it.
    A dialogue's follow-up is judged as asked in its conversation (answer.question_in_context:
    "And the autumn one?" with the questions before it), for every prompt that shows a question.
    """
    asks = (lambda name: True) if metrics is None else metrics.__contains__
    verdicts = _Verdicts(judge, answer.question_in_context, aligned)
    context = context_text(answer.sources)
    reference_statements = split_statements(reference_answer)
    judged_statements = answer.outcome != "refused" and answer.contexts_returned and asks("faithfulness")
    answer_statements = answer.statements if judged_statements else []
    # Every statement judged against the sources passage by passage, in one pass (prompts that
    # share a passage share their prefix): the reference's statements, then the answer's.
    asked_references = reference_statements if answer.sources and asks("context_recall") else []
    over_passages = (
        judge.support_by_passage(
            context.splitlines(), asked_references + [s.text for s in answer_statements], answer.question_in_context
        )
        if answer.contexts_returned
        else []
    )
    reference_results, answer_results = over_passages[: len(asked_references)], over_passages[len(asked_references) :]
    if not asks("context_recall"):
        recall = NOT_ASKED
    elif reference_statements or not (reference_answer or "").strip():
        recall = _context_recall(verdicts, answer, context, reference_statements, reference_results)
    else:
        recall = Scored(None, "the reference answer states nothing to look for (a bare answer such as 'Yes.')")
    given = MetricInput(
        "",
        answer,
        answer.question_in_context,
        context,
        reference_answer,
        embed,
        lambda name, index, statement, against: verdicts.support(name, index, statement, None, against, []),
    )
    added = _added_metrics(given, asks)
    if answer.outcome == "refused":
        not_scored = Scored(None, REFUSED)
        refused = {name: not_scored if asks(name) else NOT_ASKED for name in _SCORED_ONLY_WHEN_ANSWERED}
        judgement = AnswerJudgement(**refused, context_recall=recall, verdicts=verdicts.rows, added=added)
        return JudgedAnswer(judgement, *judging_cost(verdicts.asked))
    relevancy, implied_question = (
        _answer_relevancy(verdicts, answer, embed) if asks("answer_relevancy") else (NOT_ASKED, None)
    )
    judgement = AnswerJudgement(
        faithfulness=_faithfulness(verdicts, answer, context, answer_results) if asks("faithfulness") else NOT_ASKED,
        context_recall=recall,
        answer_relevancy=relevancy,
        citation_precision=_citation_precision(verdicts, answer) if asks("citation_precision") else NOT_ASKED,
        answer_correctness=(
            _answer_correctness(verdicts, answer, reference_answer) if asks("answer_correctness") else NOT_ASKED
        ),
        implied_question=implied_question,
        verdicts=verdicts.rows,
        added=added,
    )
    return JudgedAnswer(judgement, *judging_cost(verdicts.asked))


# The built-in metrics a refused answer does not have (context recall is retrieval's).
_SCORED_ONLY_WHEN_ANSWERED = tuple(metric.name for metric in BUILT_IN_METRICS if not metric.scored_when_refused)


def _added_metrics(given: MetricInput, asks: Callable[[str], bool]) -> dict[str, Scored]:
    """The declared metrics beyond the built-in ones (metrics/declared.ADDED_METRICS) that are
    asked for, each from its own score function given the answer (`given`, named for it); a
    refused answer has only those scored whatever the answer was."""
    scored = {}
    for metric in ADDED_METRICS:
        if not asks(metric.name):
            scored[metric.name] = NOT_ASKED
        elif given.answer.outcome == "refused" and not metric.scored_when_refused:
            scored[metric.name] = Scored(None, REFUSED)
        elif metric.needs_context and not given.answer.contexts_returned:
            scored[metric.name] = Scored(None, NO_CONTEXTS)
        elif metric.needs_reference and not (given.reference_answer or "").strip():
            scored[metric.name] = Scored(None, "no reference answer")
        else:
            scored[metric.name] = metric.score(replace(given, metric=metric.name))
    return scored


def _context_recall(
    verdicts: _Verdicts, answer: GroundedAnswer, context: str, statements: list[str], results: list[Structured]
) -> Scored:
    """Context recall: each reference statement's verdict over the retrieved passages (`results`,
    asked with the answer's statements)."""
    if not answer.contexts_returned:
        # A system under test that returns no context text: nothing to hold the reference
        # against, so the metric is not applicable (never 0).
        return Scored(None, NO_CONTEXTS)
    if statements and not answer.sources:
        # Nothing was retrieved, so no reference statement can be in the context: 0, no judge call.
        return context_recall([False] * len(statements))
    return context_recall(
        [
            verdicts.support("context_recall", i, statement, None, context, [], result)
            for i, (statement, result) in enumerate(zip(statements, results, strict=True))
        ]
    )


def _faithfulness(verdicts: _Verdicts, answer: GroundedAnswer, context: str, results: list[Structured]) -> Scored:
    """Faithfulness: each answer statement's verdict over the retrieved passages (`results`)."""
    if not answer.contexts_returned:
        return Scored(None, NO_CONTEXTS)
    return faithfulness(
        [
            verdicts.support("faithfulness", i, s.text, None, context, [c.number for c in s.citations], result)
            for i, (s, result) in enumerate(zip(answer.statements, results, strict=True))
        ]
    )


def _citation_precision(verdicts: _Verdicts, answer: GroundedAnswer) -> Scored:
    """Citation precision: each citation's verdict against the passage it cites alone (a
    statement's citations, then the prose's own)."""
    if not answer.contexts_returned:
        return Scored(None, NO_CONTEXTS)
    return citation_precision(
        [
            verdicts.support(
                "citation_precision", i, statement.text, citation.number, citation.quote, [citation.number]
            )
            for i, statement in enumerate(answer.statements)
            for citation in statement.citations
        ]
        + [
            verdicts.support("citation_precision", -1, answer.prose, citation.number, citation.quote, [citation.number])
            for citation in answer.answer_citations
        ]
    )


def _answer_relevancy(
    verdicts: _Verdicts, answer: GroundedAnswer, embed: Callable[[str], np.ndarray]
) -> tuple[Scored, str | None]:
    """Answer relevancy from the question the judge reads the answer as answering, and that
    question (None when its output was unreadable)."""
    implied = verdicts.judge.implied_question(" ".join(s.text for s in answer.statements))
    verdicts.asked.append(implied)
    if implied.value is None:
        return answer_relevancy(None, None), None
    similarity = float(embed(answer.question_in_context) @ embed(implied.value.question))
    return answer_relevancy(similarity, implied.value.noncommittal), implied.value.question


def _answer_correctness(verdicts: _Verdicts, answer: GroundedAnswer, reference_answer: str | None) -> Scored:
    """Answer correctness: the judge's P(correct) of the answer's prose against the reference."""
    if not reference_answer or not reference_answer.strip():
        return Scored(None, "no reference answer")
    grade = verdicts.judge.correctness(answer.question_in_context, reference_answer, answer.prose)
    verdicts.asked.append(grade)
    p_correct = grade.value.p_correct if grade.value else None
    correct = answer_correctness(p_correct, CORRECT_THRESHOLD)
    word = "unreadable" if correct.value is None else ("correct" if correct.value else "incorrect")
    verdicts.rows.append(
        VerdictRow(
            metric="answer_correctness",
            statement_index=-1,
            statement=answer.prose,
            source_number=None,
            verdict=word,
            p_supported=p_correct,
            error=grade.error,
            context=reference_answer,
            cited_sources=[],
            seconds=grade.usage.seconds,
        )
    )
    return correct
