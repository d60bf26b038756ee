"""The judge's prompts and output models. Pure: no model is called here (judge/judge.py calls the
model; metrics/answers.py turns verdicts into scores).

Four judgements, each a small prompt with its instruction and worked examples kept together, each
answered under a JSON schema:
- support: does this context support this statement? Used for faithfulness (answer statements
  against the retrieved sources), context recall (reference statements against the retrieved
  sources), citation precision (a statement against the one source it cites), the `grounded`
  check of evaluation cases, and judge calibration, which measures exactly this prompt.
- implied question: the question an answer responds to, for answer relevancy.
- preference: which of two answers to a question is better, for pairwise comparison.
- criteria: a 0..1 score with a reason against free-text criteria, for evaluation cases.

The context comes before the statement in the support prompt, so consecutive judgements of one
answer share a long prompt prefix that llama.cpp evaluates once.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ragassay.llm.prompts import few_shot_messages, one_line

SUPPORT_PROMPT_VERSION = "support-verdict/1"
IMPLIED_QUESTION_PROMPT_VERSION = "implied-question/1"
PREFERENCE_PROMPT_VERSION = "pairwise-preference/1"
CRITERIA_PROMPT_VERSION = "case-criteria/1"

PROMPT_VERSIONS = {
    "support": SUPPORT_PROMPT_VERSION,
    "implied_question": IMPLIED_QUESTION_PROMPT_VERSION,
    "preference": PREFERENCE_PROMPT_VERSION,
    "criteria": CRITERIA_PROMPT_VERSION,
}

# Output budgets: each schema is short, so these only stop a model that never closes the JSON.
SUPPORT_MAX_TOKENS = 16
IMPLIED_QUESTION_MAX_TOKENS = 96
PREFERENCE_MAX_TOKENS = 16
CRITERIA_MAX_TOKENS = 160


class SupportVerdict(BaseModel):
    """Whether the context states or directly implies the statement."""

    verdict: Literal["supported", "unsupported"]


class ImpliedQuestion(BaseModel):
    """The question an answer responds to; noncommittal when the answer evades or declines."""

    question: str = Field(min_length=3, max_length=300)
    noncommittal: bool


class Preference(BaseModel):
    """Which of two answers answers the question better."""

    preferred: Literal["first", "second", "tie"]


class CriteriaScore(BaseModel):
    """How well an answer meets the criteria, 0 (not at all) to 1 (fully), and why."""

    score: float = Field(ge=0.0, le=1.0)
    reason: str = Field(min_length=1, max_length=200)


def criteria_schema() -> dict:
    """CriteriaScore's schema with the score limited to steps of 0.1: a grammar-constrained model
    cannot write a number outside 0..1 (JSON-schema bounds alone are not enforced by llama.cpp)."""
    schema = CriteriaScore.model_json_schema()
    schema["properties"]["score"] = {"enum": [round(step / 10, 1) for step in range(11)]}
    return schema


_SUPPORT_INSTRUCTION = (
    "You check facts. Given a context and a statement, reply supported if the context states the "
    "statement or directly implies it, and unsupported if the context does not say it or says "
    'otherwise. Use only the context. Reply as JSON: {"verdict": "supported"} or {"verdict": "unsupported"}.'
)
_SUPPORT_CONTEXT = "Context: Beeswax melts between 62 and 64 degrees Celsius. Bees make wax from glands under the abdomen."


def support_messages(context: str, statement: str) -> list[dict]:
    """The support prompt (version SUPPORT_PROMPT_VERSION)."""
    examples = [
        ("Beeswax melts at 90 degrees Celsius.", "unsupported"),
        ("Bees make wax from glands under the abdomen.", "supported"),
        ("Beeswax is used to make candles.", "unsupported"),
        ("Beeswax melts at about 63 degrees Celsius.", "supported"),
    ]
    return few_shot_messages(
        _SUPPORT_INSTRUCTION,
        [(f"{_SUPPORT_CONTEXT}\n\nStatement: {example}", f'{{"verdict": "{verdict}"}}') for example, verdict in examples],
        f"Context: {one_line(context)}\n\nStatement: {one_line(statement)}",
    )


def implied_question_messages(answer: str) -> list[dict]:
    """The implied-question prompt (version IMPLIED_QUESTION_PROMPT_VERSION)."""
    return few_shot_messages(
        "Write the question that the given answer responds to. Set noncommittal to true when the "
        "answer is evasive, vague or says it does not know. Reply as JSON: "
        '{"question": "...", "noncommittal": false}.',
        [
            ("Answer: I am not sure; it depends on many things.", '{"question": "How long do bees live?", "noncommittal": true}'),
            (
                "Answer: A queen bee can lay up to 2,000 eggs a day in summer.",
                '{"question": "How many eggs can a queen bee lay in a day?", "noncommittal": false}',
            ),
        ],
        f"Answer: {one_line(answer)}",
    )


def preference_messages(question: str, reference: str | None, first: str, second: str) -> list[dict]:
    """The pairwise prompt (version PREFERENCE_PROMPT_VERSION); the caller asks in both orders."""
    reference_line = f"Reference answer: {one_line(reference)}\n" if reference else ""
    return few_shot_messages(
        "Compare two answers to a question. Prefer the answer that is correct (agrees with the "
        "reference answer when one is given), answers the question, and adds nothing false. Reply tie when "
        'they are equally good or equally bad. Reply as JSON: {"preferred": "first"}, {"preferred": "second"} '
        'or {"preferred": "tie"}.',
        [
            (
                "Question: At what temperature does beeswax melt?\nReference answer: Between 62 and 64 degrees Celsius.\n"
                "First answer: Beeswax is made by worker bees.\nSecond answer: Beeswax melts between 62 and 64 degrees Celsius.",
                '{"preferred": "second"}',
            )
        ],
        f"Question: {one_line(question)}\n{reference_line}First answer: {one_line(first)}\nSecond answer: {one_line(second)}",
    )


def criteria_messages(question: str, answer: str, criteria: str) -> list[dict]:
    """The case-criteria prompt (version CRITERIA_PROMPT_VERSION)."""
    return few_shot_messages(
        "Score how well the answer meets the criteria, from 0.0 (not at all) to 1.0 (fully), and give "
        'a one-sentence reason. Reply as JSON: {"score": 0.0-1.0, "reason": "..."}.',
        [
            (
                "Criteria: names the melting range in degrees Celsius\nQuestion: When does beeswax melt?\n"
                "Answer: Beeswax melts between 62 and 64 degrees Celsius.",
                '{"score": 1.0, "reason": "It gives the range 62 to 64 degrees Celsius."}',
            )
        ],
        f"Criteria: {one_line(criteria)}\nQuestion: {one_line(question)}\nAnswer: {one_line(answer)}",
    )
