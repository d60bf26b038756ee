"""Grounded answers: numbered sources, the answer prompt, and turning model output into either a
cited answer or a refusal. Pure: no model is called here.

Exactly two outcomes:
- answered: statements, each citing [n] sources that were provided (with doc id, chunk id, span
  and the quoted span text);
- refused: the corpus does not support an answer. This is the outcome when retrieval found
  nothing relevant (the model is not called), when the model gives no statement, when its output
  cannot be read, or (strict groundedness) when no statement keeps a valid citation.

Citations to sources that were not provided are dropped and counted. With groundedness "strict"
a statement left without a valid citation is dropped too (and counted); with "off" (a plain RAG
baseline) statements stand without citations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel, Field

from ragassay.llm.messages import defuse, few_shot_messages, one_line
from ragassay.llm.structured import Usage
from ragassay.search.rerank import RerankStats

ANSWER_PROMPT_VERSION = "grounded-answer/2"
# A follow-up's prompt: grounded-answer/2 with the conversation so far before the sources.
CONVERSATION_PROMPT_VERSION = "grounded-answer-in-conversation/1"
# Earlier turns a follow-up's prompt shows: the last few hold what it points back to.
CONVERSATION_TURNS = 4
Groundedness = Literal["strict", "off"]

REFUSAL_TEXT = "The documents do not support an answer to this question."


class Statement(BaseModel):
    text: str = Field(min_length=1, max_length=400)
    citations: list[int] = Field(max_length=4)


class AnswerOutput(BaseModel):
    """What the model returns: statements, each with the numbers of the sources it rests on.
    An empty list means the sources do not answer the question. The length limits are part of
    the schema, so a constrained model cannot ramble past max_tokens into unreadable JSON."""

    statements: list[Statement] = Field(max_length=6)


@dataclass(frozen=True)
class Source:
    """A numbered source given to the model: one chunk and where it lies."""

    number: int
    collection: str
    doc_id: str
    chunk_id: str
    char_start: int
    char_end: int
    page: int | None
    text: str


@dataclass
class Citation:
    number: int
    doc_id: str
    chunk_id: str
    char_start: int
    char_end: int
    quote: str


@dataclass
class AnsweredStatement:
    text: str
    citations: list[Citation]


@dataclass
class GroundedAnswer:
    """The outcome of one question, with everything needed to check it."""

    question: str
    outcome: Literal["answered", "refused"]
    reason: str
    statements: list[AnsweredStatement] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    dropped_citations: int = 0
    dropped_statements: int = 0
    unparseable: bool = False
    relevance: float | None = None
    raw_output: str | None = None
    usage: Usage = Usage()
    # A system under test's answer: the documents it cites for the answer as a whole (judged
    # against the whole answer), whether it returned any context text (without, the metrics that
    # need one are not applicable), and who said it refused ("system", or "detected" from its text).
    answer_citations: list[Citation] = field(default_factory=list)
    contexts_returned: bool = True
    refusal_source: str | None = None
    # A follow-up of a conversation: what it searched (search/followups.py: the question with the
    # conversation's earlier ones, or rewritten to stand alone; None for a question asked alone),
    # and what it means in its conversation, as the judge reads it (None: the question itself).
    search_query: str | None = None
    in_context: str | None = None
    # A follow-up's earlier turns left out of its prompt, the oldest first, to fit the model's context.
    history_cut: int = 0
    # What reranking its search did (none without it): a fallback to the fused order is a warning
    # of its configuration's answer evaluation, as of its retrieval evaluation.
    rerank: RerankStats = RerankStats()

    @property
    def question_in_context(self) -> str:
        """The question as the judge reads it: a follow-up with its conversation, else the question."""
        return self.in_context or self.question

    @property
    def prose(self) -> str:
        """The answer's words without citation markers (what content checks read)."""
        if self.outcome == "refused":
            return REFUSAL_TEXT
        return " ".join(statement.text for statement in self.statements)

    @property
    def text(self) -> str:
        if self.outcome == "refused":
            return REFUSAL_TEXT
        return " ".join(
            statement.text + "".join(f" [{c.number}]" for c in statement.citations) for statement in self.statements
        )


# The tokens of a source's line around its text: `[1] (doc guides/setup.md) `.
SOURCE_HEADER_TOKENS = 12


def assemble_sources(candidates: list[Source], budget_tokens: int, count_tokens: Callable[[str], int]) -> list[Source]:
    """Sources in rank order while they fit the token budget (a source never is cut in half)."""
    chosen: list[Source] = []
    used = 0
    for candidate in candidates:
        cost = count_tokens(candidate.text) + SOURCE_HEADER_TOKENS
        if chosen and used + cost > budget_tokens:
            break
        chosen.append(replace(candidate, number=len(chosen) + 1))
        used += cost
    return chosen


_INSTRUCTION = (
    "You answer questions using only the numbered sources. Write short statements. After each "
    "statement list the numbers of the sources that support it. If the sources do not answer the "
    "question, return an empty list of statements. Never use knowledge that is not in the sources."
)
_EXAMPLE_USER = (
    "Sources:\n[1] (doc guide.md) The hive tool is a flat steel lever used to pry boxes apart.\n"
    "[2] (doc wax.md) Beeswax melts between 62 and 64 degrees Celsius.\n\nQuestion: At what temperature does beeswax melt?"
)
_EXAMPLE_ANSWER = '{"statements": [{"text": "Beeswax melts between 62 and 64 degrees Celsius.", "citations": [2]}]}'
_EXAMPLE_REFUSAL_USER = (
    "Sources:\n[1] (doc guide.md) The hive tool is a flat steel lever.\n\nQuestion: Who invented the hive tool?"
)
_EXAMPLE_REFUSAL = '{"statements": []}'

# A source's own "[n]" markers: in its text, "[2] (doc manual.md) ..." would read as another source.
_SOURCE_MARKER = re.compile(r"\[(\d+)\]")


def source_line(source: Source) -> str:
    """One source as the answer model reads it: `[n] (doc ID) text`, on one line. The text is
    delimited by the line itself (a source never holds a line break), and it cannot imitate
    another source: its own `[n]` markers become `(n)`, and our prompt tags are defused.

    The other prompts quote untrusted text between tags their instruction calls data. Here that
    cost SmolLM2 (the default answer model) 7 to 9 of the 23 sample questions whose expected
    document it cited, and a sentence calling sources data 3 of them, while neither lowered how
    often Qwen followed instructions planted in a source (RELIABILITY.md); so the words of this
    prompt stay those of grounded-answer/1."""
    return f"[{source.number}] (doc {defuse(source.doc_id)}) {_inert(source.text)}"


def _inert(text: str) -> str:
    """Text on one line that can imitate neither a source marker nor a prompt tag."""
    return _SOURCE_MARKER.sub(r"(\1)", defuse(one_line(text)))


def answer_messages(
    question: str, sources: list[Source], conversation: Sequence[tuple[str, str | None]] = ()
) -> list[dict]:
    """The chat messages of the grounded-answer prompt (version ANSWER_PROMPT_VERSION); with a
    conversation (earlier (question, answer) turns; None: no answer was given), its last
    CONVERSATION_TURNS turns before the sources (CONVERSATION_PROMPT_VERSION), so a follow-up's
    "it" can be read, while only the sources may support the answer."""
    listing = "\n".join(source_line(s) for s in sources)
    earlier = ""
    if conversation:
        lines = [
            f"User: {_inert(asked)}" + (f"\nAssistant: {_inert(answered)}" if answered else "")
            for asked, answered in conversation[-CONVERSATION_TURNS:]
        ]
        earlier = "Conversation so far (context for the question, not a source):\n" + "\n".join(lines) + "\n\n"
    return few_shot_messages(
        _INSTRUCTION,
        [(_EXAMPLE_USER, _EXAMPLE_ANSWER), (_EXAMPLE_REFUSAL_USER, _EXAMPLE_REFUSAL)],
        f"{earlier}Sources:\n{listing}\n\nQuestion: {_inert(question)}",
    )


def answer_schema(source_count: int) -> dict:
    """AnswerOutput's schema with citations limited to the provided source numbers, so a
    grammar-constrained model cannot cite a source it was not given."""
    schema = AnswerOutput.model_json_schema()
    statement = schema["$defs"]["Statement"]
    statement["properties"]["citations"]["items"] = {"type": "integer", "enum": list(range(1, source_count + 1)) or [1]}
    return schema


def resolve_answer(
    question: str,
    output: AnswerOutput | None,
    sources: list[Source],
    groundedness: Groundedness,
    raw: str | None = None,
) -> GroundedAnswer:
    """Map the model's statements onto the provided sources and decide the outcome."""
    if output is None:
        return GroundedAnswer(
            question,
            "refused",
            "the model's output could not be read",
            sources=sources,
            unparseable=True,
            raw_output=raw,
        )
    by_number = {source.number: source for source in sources}
    kept: list[AnsweredStatement] = []
    dropped_citations = dropped_statements = 0
    for statement in output.statements:
        valid = list(dict.fromkeys(n for n in statement.citations if n in by_number))
        dropped_citations += len(statement.citations) - len([n for n in statement.citations if n in by_number])
        if groundedness == "strict" and not valid:
            dropped_statements += 1
            continue
        kept.append(AnsweredStatement(statement.text.strip(), [_citation(by_number[n]) for n in valid]))
    if not kept:
        reason = (
            "no statement cites a provided source" if output.statements else "the model found no answer in the sources"
        )
        return GroundedAnswer(
            question,
            "refused",
            reason,
            sources=sources,
            dropped_citations=dropped_citations,
            dropped_statements=dropped_statements,
            raw_output=raw,
        )
    return GroundedAnswer(
        question, "answered", "", kept, sources, dropped_citations, dropped_statements, raw_output=raw
    )


def _citation(source: Source) -> Citation:
    return Citation(source.number, source.doc_id, source.chunk_id, source.char_start, source.char_end, source.text)


def declined(
    question: str, reason: str, sources: list[Source], relevance: float | None, usage: Usage = Usage()
) -> GroundedAnswer:
    """A refusal decided before the answer model was called (usage: what retrieval's reranker cost)."""
    return GroundedAnswer(question, "refused", reason, sources=sources, relevance=relevance, usage=usage)
