"""The judge model at work: the judgements of judge/prompts.py through the one model interface,
with their cost, and the judging of one answer for every answer metric."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ragassay.answer.grounding import GroundedAnswer, Source
from ragassay.judge.prompts import (
    CRITERIA_MAX_TOKENS,
    IMPLIED_QUESTION_MAX_TOKENS,
    PREFERENCE_MAX_TOKENS,
    SUPPORT_MAX_TOKENS,
    CriteriaScore,
    ImpliedQuestion,
    Preference,
    SupportVerdict,
    criteria_messages,
    criteria_schema,
    implied_question_messages,
    preference_messages,
    support_messages,
)
from ragassay.llm.models import ChatModel
from ragassay.llm.prompts import one_line
from ragassay.llm.structured import Structured, Usage, generate_structured, unreadable
from ragassay.metrics.answers import (
    AnswerJudgement,
    Scored,
    Verdict,
    answer_relevancy,
    citation_precision,
    context_recall,
    faithfulness,
    split_statements,
)

# Tokens the chat template adds around each message (role markers); used to check a prompt fits.
TEMPLATE_TOKENS_PER_MESSAGE = 8


class Judge:
    """The judge model: each judgement asked at temperature 0 under its schema, and remembered by
    the digest of its prompt for the judge's lifetime (one evaluation), so an identical judgement
    (the same statement and context in two configurations) costs one call. A remembered result
    comes back marked `reused`, with zero cost; each result carries its own cost."""

    def __init__(self, model: ChatModel):
        self.model = model
        self.model_id = model.model_id
        self._remembered: dict[str, Structured] = {}

    def _ask(self, messages: list[dict], output: type, max_tokens: int, schema: dict | None = None) -> Structured:
        key = hashlib.sha256(json.dumps([output.__name__, messages, schema], sort_keys=True).encode()).hexdigest()
        if key in self._remembered:
            return replace(self._remembered[key], usage=Usage(), completions=[], reused=True)
        prompt_tokens = sum(self.model.count_tokens(m["content"]) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)
        if prompt_tokens + max_tokens > self.model.context_size:
            # Cutting the context would turn supported statements into unsupported ones; say so instead.
            result = unreadable(f"prompt of about {prompt_tokens} tokens does not fit the judge's context of {self.model.context_size}")
        else:
            result = generate_structured(self.model, messages, output, max_tokens=max_tokens, schema=schema)
        self._remembered[key] = result
        return result

    def support(self, context: str, statement: str) -> Structured[SupportVerdict]:
        return self._ask(support_messages(context, statement), SupportVerdict, SUPPORT_MAX_TOKENS)

    def implied_question(self, answer: str) -> Structured[ImpliedQuestion]:
        return self._ask(implied_question_messages(answer), ImpliedQuestion, IMPLIED_QUESTION_MAX_TOKENS)

    def preference(self, question: str, reference: str | None, first: str, second: str) -> Structured[Preference]:
        return self._ask(preference_messages(question, reference, first, second), Preference, PREFERENCE_MAX_TOKENS)

    def criteria(self, question: str, answer: str, criteria: str) -> Structured[CriteriaScore]:
        return self._ask(criteria_messages(question, answer, criteria), CriteriaScore, CRITERIA_MAX_TOKENS, criteria_schema())


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


def judge_answer(judge: Judge, answer: GroundedAnswer, reference_answer: str | None, embed: Callable[[str], np.ndarray]) -> JudgedAnswer:
    """Faithfulness, context recall, answer relevancy and citation precision of one answer.

    embed: the question collection's embedding model (normalized vectors), for answer relevancy.
    """
    verdicts: list[dict] = []
    asked: list[Structured] = []

    def judged(metric: str, index: int, statement: str, source: int | None, context: str) -> Verdict:
        result = judge.support(context, statement)
        asked.append(result)
        verdict = verdict_of(result)
        verdicts.append(
            {
                "metric": metric,
                "statement_index": index,
                "statement": statement,
                "source_number": source,
                "verdict": "unreadable" if verdict is None else ("supported" if verdict else "unsupported"),
                "error": result.error,
            }
        )
        return verdict

    context = context_text(answer.sources)
    reference_statements = split_statements(reference_answer)
    if reference_statements and not answer.sources:
        # Nothing was retrieved, so no reference statement can be in the context: 0, no judge call.
        recall = context_recall([False] * len(reference_statements))
    else:
        recall = context_recall([judged("context_recall", i, s, None, context) for i, s in enumerate(reference_statements)])
    if answer.outcome == "refused":
        not_scored = Scored(None, REFUSED)
        return JudgedAnswer(AnswerJudgement(not_scored, recall, not_scored, not_scored, None, verdicts), *judging_cost(asked))
    faithful = faithfulness([judged("faithfulness", i, s.text, None, context) for i, s in enumerate(answer.statements)])
    cited = citation_precision(
        [
            judged("citation_precision", i, statement.text, citation.number, citation.quote)
            for i, statement in enumerate(answer.statements)
            for citation in statement.citations
        ]
    )
    implied = judge.implied_question(" ".join(s.text for s in answer.statements))
    asked.append(implied)
    if implied.value is None:
        relevancy = answer_relevancy(None, None)
    else:
        similarity = float(embed(answer.question) @ embed(implied.value.question))
        relevancy = answer_relevancy(similarity, implied.value.noncommittal)
    judgement = AnswerJudgement(faithful, recall, relevancy, cited, implied.value.question if implied.value else None, verdicts)
    return JudgedAnswer(judgement, *judging_cost(asked))
