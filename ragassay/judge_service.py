"""The judge model at work: the judgements of tasks/judging.py through the one model interface,
with their cost, and the judging of one answer for every answer metric."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ragassay.errors import ConfigError
from tasks.answer_metrics import (
    AnswerJudgement,
    Scored,
    Verdict,
    agreement,
    answer_relevancy,
    citation_precision,
    context_recall,
    faithfulness,
    split_statements,
)
from tasks.answering import GroundedAnswer, Source
from tasks.judging import (
    CRITERIA_MAX_TOKENS,
    IMPLIED_QUESTION_MAX_TOKENS,
    PREFERENCE_MAX_TOKENS,
    SUPPORT_MAX_TOKENS,
    SUPPORT_PROMPT_VERSION,
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
from tasks.models import ChatModelConfig, Structured, Usage, generate_structured, load_chat_model, one_line
from tasks.progress import ProgressReporter

# Tokens the chat template adds around each message (role markers); used to check a prompt fits.
TEMPLATE_TOKENS_PER_MESSAGE = 8


class Judge:
    """The judge model: each judgement asked at temperature 0 under its schema, counted in usage,
    and remembered by the digest of its prompt, so an identical judgement (the same statement and
    context in two configurations) costs one call."""

    def __init__(self, config: ChatModelConfig):
        self.model = load_chat_model(config)
        self.model_id = self.model.model_id
        self.usage = Usage()
        self.cache_hits = 0
        self._cache: dict[str, Structured] = {}

    def _ask(self, messages: list[dict], output: type, max_tokens: int, schema: dict | None = None) -> Structured:
        key = hashlib.sha256(json.dumps([output.__name__, messages, schema], sort_keys=True).encode()).hexdigest()
        if key in self._cache:
            self.cache_hits += 1
            return self._cache[key]
        prompt_tokens = sum(self.model.count_tokens(m["content"]) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)
        if prompt_tokens + max_tokens > self.model.context_size:
            # Cutting the context would turn supported statements into unsupported ones; say so instead.
            result = Structured(None, "", f"prompt of about {prompt_tokens} tokens does not fit the judge's context of {self.model.context_size}")
            self.usage.unparseable += 1
        else:
            result = generate_structured(self.model, messages, output, max_tokens=max_tokens, usage=self.usage, schema=schema)
        self._cache[key] = result
        return result

    def support(self, context: str, statement: str) -> Structured[SupportVerdict]:
        return self._ask(support_messages(context, statement), SupportVerdict, SUPPORT_MAX_TOKENS)

    def implied_question(self, answer: str) -> Structured[ImpliedQuestion]:
        return self._ask(implied_question_messages(answer), ImpliedQuestion, IMPLIED_QUESTION_MAX_TOKENS)

    def preference(self, question: str, reference: str | None, first: str, second: str) -> Structured[Preference]:
        return self._ask(preference_messages(question, reference, first, second), Preference, PREFERENCE_MAX_TOKENS)

    def criteria(self, question: str, answer: str, criteria: str) -> Structured[CriteriaScore]:
        return self._ask(criteria_messages(question, answer, criteria), CriteriaScore, CRITERIA_MAX_TOKENS, criteria_schema())


def verdict_of(result: Structured[SupportVerdict]) -> Verdict:
    return None if result.value is None else result.value.verdict == "supported"


def context_text(sources: list[Source]) -> str:
    """The retrieved context as the answer model saw it: numbered sources."""
    return "\n".join(f"[{source.number}] {one_line(source.text)}" for source in sources)


REFUSED = "refused"


def judge_answer(judge: Judge, answer: GroundedAnswer, reference_answer: str | None, embed: Callable[[str], np.ndarray]) -> AnswerJudgement:
    """Faithfulness, context recall, answer relevancy and citation precision of one answer.

    embed: the question collection's embedding model (normalized vectors), for answer relevancy.
    """
    verdicts: list[dict] = []

    def judged(metric: str, index: int, statement: str, source: int | None, context: str) -> Verdict:
        result = judge.support(context, statement)
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
        return AnswerJudgement(not_scored, recall, not_scored, not_scored, None, verdicts)
    faithful = faithfulness([judged("faithfulness", i, s.text, None, context) for i, s in enumerate(answer.statements)])
    cited = citation_precision(
        [
            judged("citation_precision", i, statement.text, citation.number, citation.quote)
            for i, statement in enumerate(answer.statements)
            for citation in statement.citations
        ]
    )
    implied = judge.implied_question(" ".join(s.text for s in answer.statements))
    if implied.value is None:
        relevancy = answer_relevancy(None, None)
    else:
        similarity = float(embed(answer.question) @ embed(implied.value.question))
        relevancy = answer_relevancy(similarity, implied.value.noncommittal)
    return AnswerJudgement(faithful, recall, relevancy, cited, implied.value.question if implied.value else None, verdicts)


@dataclass(frozen=True)
class LabelledStatement:
    """A (context, statement) pair labelled supported or not by a person."""

    source: str  # file:line
    context: str
    statement: str
    supported: bool


def read_labelled_statements(path: Path) -> list[LabelledStatement]:
    """Rows of a calibration file (JSONL: context, statement, label "supported"/"unsupported").

    The whole file is refused (ConfigError naming each bad file:line) when any row is bad: a
    calibration over a silently shortened label set would report a figure for other data.
    """
    if not path.is_file():
        raise ConfigError(f"labels file {path} does not exist")
    rows, problems = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{where}: invalid JSON: {error.msg}")
            continue
        if not isinstance(record, dict):
            problems.append(f"{where}: each row must be an object with context, statement and label")
            continue
        bad = [name for name in ("context", "statement") if not isinstance(record.get(name), str) or not record[name].strip()]
        if bad:
            problems.append(f"{where}: field {' and '.join(repr(b) for b in bad)} must be a non-empty string")
        elif record.get("label") not in ("supported", "unsupported"):
            problems.append(f"{where}: field 'label' must be 'supported' or 'unsupported', not {record.get('label')!r}")
        else:
            rows.append(LabelledStatement(where, record["context"], record["statement"], record["label"] == "supported"))
    if problems:
        raise ConfigError(f"{path} has {len(problems)} bad rows: " + "; ".join(problems))
    if not rows:
        raise ConfigError(f"{path} holds no labelled statements")
    return rows


def calibrate_judge(config: ChatModelConfig, path: Path) -> dict:
    """The judge's support verdicts against people's labels: accuracy, Cohen's kappa, confusion
    matrix, unreadable rate, and every row with its verdict."""
    labelled = read_labelled_statements(path)
    judge = Judge(config)
    verdicts, rows = [], []
    with ProgressReporter(f"judging {len(labelled)} labelled statements") as progress:
        for done, item in enumerate(labelled, start=1):
            result = judge.support(item.context, item.statement)
            verdict = verdict_of(result)
            verdicts.append(verdict)
            rows.append(
                {"source": item.source, "statement": item.statement, "label": "supported" if item.supported else "unsupported",
                 "verdict": "unreadable" if verdict is None else ("supported" if verdict else "unsupported"), "error": result.error}
            )
            progress(done, len(labelled))
    return {
        "labels_file": str(path),
        "judge_model": judge.model_id,
        "prompt_version": SUPPORT_PROMPT_VERSION,
        **asdict(agreement([item.supported for item in labelled], verdicts)),
        "usage": judge.usage.as_metrics("judge"),
        "rows": rows,
    }
