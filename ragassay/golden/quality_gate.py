"""The quality gate of golden-set generation: pure functions that keep a model-written
(question, answer) or discard it with a reason: `gate_candidate` applies the rules, then
`gate_judged_support` reads the judge's support verdict of the answer against its page (the judge
is asked only when the rules pass, as it costs a model call).

The gate deliberately does NOT check whether retrieval finds the source document: keeping only
questions the engine already answers would make every later measurement self-fulfilling.

Discard reasons, checked in this order (the first that applies is recorded):
- `unparseable`: the model's output could not be read as {question, answer};
- `not_a_question`: no question mark at the end;
- `too_short` / `too_long`: fewer than MIN_QUESTION_WORDS words or MIN_QUESTION_CHARS characters,
  or more than MAX_QUESTION_CHARS characters; an answer over MAX_ANSWER_CHARS is `too_long` too
  (a reference answer is a sentence or two; longer ones are rambling or repeating themselves);
- `empty_answer`: the reference answer is blank;
- `passage_dependent`: it only makes sense beside the passage ("according to the text", "in this
  section", "what does the document say", or a pronoun/demonstrative with no content word before
  it in the question to refer back to: "What does it eat?", "Why are these cells capped?");
- `copies_passage`: the question is a passage sentence with a question mark (rapidfuzz
  partial_ratio >= COPY_SIMILARITY against the passage);
- `answer_not_in_page`: under ANSWER_SUPPORT of the answer's content tokens (stemmed, stopwords
  removed) occur in the passage;
- `near_duplicate`: rapidfuzz token_sort_ratio >= FUZZY_DUPLICATE with a stored or earlier new
  question (normalized text), or embedding cosine >= EMBEDDING_DUPLICATE with one;
- `answer_unsupported`: the judge's support verdict says the page does not support the answer
  to the question (the answer names the wrong person, number or thing, which word overlap misses);
- `judge_unreadable`: the judge gave no readable verdict, so the answer is not known to be right.

A generated dialogue (golden/dialogue_generation.py) passes the same rules on its first turn; each
follow-up passes them too (shorter: MIN_FOLLOWUP_WORDS, MIN_FOLLOWUP_CHARS; and it may, it must,
point back) and two more:
- `standalone_followup`: the follow-up does not point back to the conversation (no pronoun or
  demonstrative, no "and ...", "what about ..."), so it reads as a question of its own and would
  measure nothing a single question does not;
- `repeated_turn`: it asks what an earlier turn asked (token_sort_ratio >= FUZZY_DUPLICATE);
then every turn's answer is judged against the page with the turn's question in its conversation
(the earlier questions before it): a follow-up must be answerable with its history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from ragassay.golden.entries import normalize_question
from ragassay.judge.prompts import question_answer_claim
from ragassay.search.lexical import tokenize

MIN_QUESTION_WORDS = 4
MIN_QUESTION_CHARS = 15
MAX_QUESTION_CHARS = 250
MAX_ANSWER_CHARS = 300
COPY_SIMILARITY = 95
ANSWER_SUPPORT = 0.5
FUZZY_DUPLICATE = 90
EMBEDDING_DUPLICATE = 0.92
# A follow-up may be as short as "And the autumn one?".
MIN_FOLLOWUP_WORDS = 2
MIN_FOLLOWUP_CHARS = 8

DISCARD_REASONS = (
    "unparseable",
    "not_a_question",
    "too_short",
    "too_long",
    "empty_answer",
    "passage_dependent",
    "copies_passage",
    "answer_not_in_page",
    "near_duplicate",
    "answer_unsupported",
    "judge_unreadable",
    "standalone_followup",
    "repeated_turn",
)


class GeneratedPair(BaseModel):
    """What the model writes for one page."""

    question: str = Field(max_length=400)
    answer: str = Field(max_length=600)


_PASSAGE_REFERENCE = re.compile(
    r"\b(according to|based on|in|from|within|per|under)\s+(the|this|that|these)\s+"
    r"(passage|text|document|article|section|excerpt|paragraph|author|table|figure|page|source)s?\b"
    r"|\bwhat\s+(does|do|did)\s+(the|this)\s+(passage|text|document|article|section|excerpt|author|paragraph)\b"
    r"|\b(this|the)\s+(passage|excerpt|paragraph)\b",
    re.IGNORECASE,
)


_REFERRING_WORDS = {"it", "its", "they", "them", "their", "he", "she", "his", "her", "this", "these", "those"}


# Words that cannot be an antecedent: question words and auxiliaries.
_FUNCTION_WORDS = {
    "what",
    "which",
    "who",
    "whom",
    "whose",
    "why",
    "how",
    "when",
    "where",
    "does",
    "do",
    "did",
    "is",
    "are",
    "was",
    "were",
    "has",
    "have",
    "had",
    "can",
    "could",
    "will",
    "would",
    "should",
    "may",
    "might",
    "must",
    "shall",
    "the",
    "a",
    "an",
    "of",
    "to",
    "in",
    "on",
    "for",
    "and",
    "or",
    "long",
    "many",
    "much",
}


def is_passage_dependent(question: str) -> bool:
    """True when the question refers to the passage, or uses a pronoun or demonstrative with no
    content word before it in the question that it could refer back to."""
    if _PASSAGE_REFERENCE.search(question):
        return True
    words = [re.sub(r"n't$|'s$|'t$", "", word.lower()) for word in re.findall(r"[A-Za-z']+", question)]
    for position, word in enumerate(words):
        if word in _REFERRING_WORDS:
            return not any(
                w not in _FUNCTION_WORDS and w not in _REFERRING_WORDS and len(w) >= 3 for w in words[:position]
            )
    return False


@dataclass(frozen=True)
class GateDecision:
    accepted: bool
    reason: str | None = None
    detail: str = ""


def gate_candidate(
    pair: GeneratedPair | None,
    passage: str,
    known_questions: list[str],
    question_vector: np.ndarray | None = None,
    known_vectors: np.ndarray | None = None,
) -> GateDecision:
    """Accept a generated pair or name the first discard reason that applies (module docstring)."""
    from rapidfuzz import fuzz, process

    if pair is None:
        return GateDecision(False, "unparseable")
    question, answer = pair.question.strip(), pair.answer.strip()
    if not question.endswith("?"):
        return GateDecision(False, "not_a_question")
    if len(question.split()) < MIN_QUESTION_WORDS or len(question) < MIN_QUESTION_CHARS:
        return GateDecision(False, "too_short", f"{len(question.split())} words")
    if len(question) > MAX_QUESTION_CHARS:
        return GateDecision(False, "too_long", f"{len(question)} characters")
    if not answer:
        return GateDecision(False, "empty_answer")
    if len(answer) > MAX_ANSWER_CHARS:
        return GateDecision(False, "too_long", f"answer of {len(answer)} characters")
    if is_passage_dependent(question):
        return GateDecision(False, "passage_dependent")
    similarity = fuzz.partial_ratio(normalize_question(question), normalize_question(passage))
    if similarity >= COPY_SIMILARITY and len(question.split()) >= 6:
        return GateDecision(False, "copies_passage", f"partial_ratio {similarity:.0f}")
    not_in_page = _answer_not_in_page(answer, passage)
    if not_in_page is not None:
        return not_in_page
    if known_questions:
        match = process.extractOne(
            normalize_question(question), [normalize_question(q) for q in known_questions], scorer=fuzz.token_sort_ratio
        )
        if match is not None and match[1] >= FUZZY_DUPLICATE:
            return GateDecision(
                False, "near_duplicate", f"like {known_questions[match[2]]!r} (token_sort_ratio {match[1]:.0f})"
            )
    if question_vector is not None and known_vectors is not None and len(known_vectors):
        cosines = known_vectors @ question_vector
        best = int(np.argmax(cosines))
        if cosines[best] >= EMBEDDING_DUPLICATE:
            return GateDecision(False, "near_duplicate", f"like {known_questions[best]!r} (cosine {cosines[best]:.3f})")
    return GateDecision(True)


# What makes a follow-up point back: a pronoun or demonstrative, or an elliptical opening.
_POINTING_WORDS = _REFERRING_WORDS | {"that", "those", "one", "ones", "there", "then", "same", "other", "both"}
_ELLIPTICAL_START = re.compile(r"^\s*(and|but|so|also|what about|how about|what else|then)\b", re.IGNORECASE)


def points_back(question: str) -> bool:
    """Whether a follow-up needs the conversation before it: it holds a pronoun or demonstrative,
    or opens elliptically ("And the autumn one?", "What about drones?")."""
    words = {re.sub(r"'s$", "", word.lower()) for word in re.findall(r"[A-Za-z']+", question)}
    return bool(words & _POINTING_WORDS) or bool(_ELLIPTICAL_START.match(question))


def gate_followup(pair: GeneratedPair | None, passage: str, earlier: list[str]) -> GateDecision:
    """Accept a dialogue's follow-up or name the first discard reason that applies (module
    docstring); `earlier`: the questions of the turns before it."""
    from rapidfuzz import fuzz

    if pair is None:
        return GateDecision(False, "unparseable")
    question, answer = pair.question.strip(), pair.answer.strip()
    if not question.endswith("?"):
        return GateDecision(False, "not_a_question")
    if len(question.split()) < MIN_FOLLOWUP_WORDS or len(question) < MIN_FOLLOWUP_CHARS:
        return GateDecision(False, "too_short", f"{len(question.split())} words")
    if len(question) > MAX_QUESTION_CHARS or len(answer) > MAX_ANSWER_CHARS:
        return GateDecision(False, "too_long", f"{len(question)} + {len(answer)} characters")
    if not answer:
        return GateDecision(False, "empty_answer")
    if _PASSAGE_REFERENCE.search(question):
        return GateDecision(False, "passage_dependent")
    if not points_back(question):
        return GateDecision(False, "standalone_followup", "it does not point back to the conversation")
    for before in earlier:
        similarity = fuzz.token_sort_ratio(normalize_question(question), normalize_question(before))
        if similarity >= FUZZY_DUPLICATE:
            return GateDecision(False, "repeated_turn", f"like {before!r} (token_sort_ratio {similarity:.0f})")
    not_in_page = _answer_not_in_page(answer, passage)
    if not_in_page is not None:
        return not_in_page
    return GateDecision(True)


def _answer_not_in_page(answer: str, passage: str) -> GateDecision | None:
    """`answer_not_in_page` when under ANSWER_SUPPORT of the answer's content tokens are in the page."""
    answer_tokens = set(tokenize([answer])[0])
    if not answer_tokens:
        return None
    support = len(answer_tokens & set(tokenize([passage])[0])) / len(answer_tokens)
    if support < ANSWER_SUPPORT:
        return GateDecision(False, "answer_not_in_page", f"{support:.0%} of the answer's words are in the page")
    return None


def answer_claim(pair: GeneratedPair) -> str:
    """The reference answer as one statement the judge can check against the page."""
    return question_answer_claim(pair.question, pair.answer)


def gate_judged_support(
    verdict: str | None, p_supported: float | None, threshold: float, error: str | None = None
) -> GateDecision:
    """Keep a pair whose answer the judge found supported by its page (verdict from
    Judge.support on `answer_claim`); verdict None means the judge's output was unreadable."""
    if verdict is None:
        return GateDecision(False, "judge_unreadable", error or "")
    if verdict != "supported":
        return GateDecision(False, "answer_unsupported", f"P(supported) {p_supported:.2f} < {threshold:.2f}")
    return GateDecision(True)
