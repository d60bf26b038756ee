"""Answer metrics from judge verdicts: one small pure function per metric, per-question values out.

A verdict is True (supported), False (unsupported) or None (the judge's output could not be read).
Conventions, in writing:
- a per-question metric is a `Scored`: a value in [0, 1], or no value and the reason it was left
  out. A question with any unreadable verdict for a metric is left out of that metric only (never
  scored 0, never NaN); a question with nothing to judge (no statements, no citations, no
  reference answer) is left out too. Means are over the questions a metric scored, and every mean
  is reported with that count (`mean_scored`).
- refused answers are not scored for faithfulness, answer relevancy, citation precision or answer
  correctness; they count in the refusal metrics. Context recall is a property of retrieval and is scored whatever
  the answer was.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Literal

from ragassay.llm.messages import one_line

Verdict = bool | None

# Exclusion reasons (what a warning says about a question left out of a metric).
UNREADABLE = "unreadable judge output"
NOTHING_TO_JUDGE = "nothing to judge"
NO_CONTEXTS = "not applicable: the system under test returned no context text"
NOT_ASKED_REASON = "not asked for in this evaluation (its `metrics:` leave it out)"


@dataclass(frozen=True)
class Scored:
    """One question's value of one metric, or why it has none."""

    value: float | None
    excluded: str | None = None
    judged: int = 0

    @property
    def counted(self) -> bool:
        return self.value is not None


NOT_ASKED = Scored(None, NOT_ASKED_REASON)


def supported_fraction(verdicts: Sequence[Verdict], nothing_reason: str = NOTHING_TO_JUDGE) -> Scored:
    """supported / judged, left out when any verdict is unreadable or there is nothing to judge."""
    if not verdicts:
        return Scored(None, nothing_reason)
    unreadable = sum(1 for v in verdicts if v is None)
    if unreadable:
        return Scored(None, f"{UNREADABLE} ({unreadable} of {len(verdicts)} verdicts)", len(verdicts))
    return Scored(sum(1 for v in verdicts if v) / len(verdicts), None, len(verdicts))


def faithfulness(statement_verdicts: Sequence[Verdict]) -> Scored:
    """faithfulness = answer statements supported by the retrieved context / answer statements.

    The hallucination measure: 1 - faithfulness is the share of claims the sources do not back.
    """
    return supported_fraction(statement_verdicts, "the answer has no statements")


def context_recall(reference_verdicts: Sequence[Verdict]) -> Scored:
    """context recall = reference-answer statements found in the retrieved context / reference statements.

    Low context recall with high faithfulness means retrieval, not generation, is the bottleneck.
    """
    return supported_fraction(reference_verdicts, "no reference answer")


def citation_precision(citation_verdicts: Sequence[Verdict]) -> Scored:
    """citation precision = citations whose cited span supports their statement / citations made."""
    return supported_fraction(citation_verdicts, "the answer makes no citations")


def answer_relevancy(similarity: float | None, noncommittal: bool | None) -> Scored:
    """answer relevancy = max(0, cos(e(question), e(q'))), and 0 when the answer is noncommittal.

    q' is the question the judge says the answer responds to; e is the collection's embedding
    model (normalized vectors). This is ragas' method with one implied question instead of three:
    at temperature 0 the judge writes the same question each time.
    """
    if similarity is None or noncommittal is None:
        return Scored(None, UNREADABLE, 1)
    return Scored(0.0 if noncommittal else max(0.0, min(1.0, similarity)), None, 1)


# Mean support below which an answer is listed among the least faithful: the bound of the best
# balanced accuracy over MEMERAG's answers and WiCE's claims as one-sentence answers, each
# collection and class weighed the same (benchmarks/fit_learned_verdict.py, `answer_level`; the
# shipped learned_verdict.json names it as answer_level.threshold).
MEAN_SUPPORT_FAITHFUL_AT = 0.424


def mean_support(statement_ps: Sequence[float | None]) -> Scored:
    """mean support = (1/n) Σ_i P_i: the mean of the answer's n statements' P(supported) over
    the retrieved passages (the verdicts faithfulness counts, read as probabilities).

    The answer-level number: where people rate whole answers faithful or not (MEMERAG's answers,
    WiCE's claims as one-sentence answers), it ranks them as people do better than the share of
    supported statements, and its worst collection better than the answer's MiniLM K-precision
    or its lowest P (benchmarks/fit_learned_verdict.py, `answer_level`; BENCHMARKS.md). Left out
    when any statement's verdict is unreadable, as faithfulness is.
    """
    if not statement_ps:
        return Scored(None, "the answer has no statements")
    unreadable = sum(1 for p in statement_ps if p is None)
    if unreadable:
        return Scored(None, f"{UNREADABLE} ({unreadable} of {len(statement_ps)} verdicts)", len(statement_ps))
    return Scored(sum(statement_ps) / len(statement_ps), None, len(statement_ps))


def answer_correctness(p_correct: float | None, threshold: float) -> Scored:
    """answer correctness = 1 when the judge's P(correct | question, reference answer, answer) >=
    threshold, else 0; its mean is the share of answers the judge grades correct.

    The one answer metric that needs no retrieved context, so a system under test that returns
    none still has it. p_correct None: the grade was unreadable, and the question is left out.
    """
    if p_correct is None:
        return Scored(None, UNREADABLE, 1)
    return Scored(1.0 if p_correct >= threshold else 0.0, None, 1)


def refusal_recall(declined_unanswerable: Sequence[bool]) -> float | None:
    """refusal recall = unanswerable questions declined / unanswerable questions (None without any)."""
    return sum(declined_unanswerable) / len(declined_unanswerable) if declined_unanswerable else None


def false_refusal_rate(declined_answerable: Sequence[bool]) -> float | None:
    """false-refusal rate = answerable questions declined / answerable questions (None without any).

    Always reported beside refusal recall: a pipeline that declines everything has recall 1 and
    a false-refusal rate of 1.
    """
    return sum(declined_answerable) / len(declined_answerable) if declined_answerable else None


@dataclass
class AnswerJudgement:
    """Every answer metric of one question, and the verdicts behind them (rows of judgments.parquet)."""

    faithfulness: Scored
    context_recall: Scored
    answer_relevancy: Scored
    citation_precision: Scored
    answer_correctness: Scored = Scored(None, NOTHING_TO_JUDGE)
    mean_support: Scored = Scored(None, NOTHING_TO_JUDGE)
    implied_question: str | None = None
    verdicts: list[dict] = field(default_factory=list)
    # The metrics added by declaration (metrics/declared.ADDED_METRICS), by name.
    added: dict[str, Scored] = field(default_factory=dict)

    def scores(self) -> dict[str, Scored]:
        """Every metric's score by name: the built-in ones (this class's Scored fields), then the
        added ones."""
        built_in = {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), Scored)}
        return built_in | self.added


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
# Words that answer a question without stating anything a passage could hold: a sentence of these
# alone ("Yes.", "No, not really.") is no statement. Counted, "Yes." halved the context recall of
# "Yes. The drug reduces X." although the passage held the fact.
BARE_ANSWER_WORDS = frozenset({
    "yes", "no", "yeah", "nope", "not", "really", "correct", "incorrect", "true", "false", "right", "wrong",
    "indeed", "exactly", "sure", "ok", "okay", "maybe", "partly", "partially", "ja", "nein", "oui", "non", "si", "sí",
})  # fmt: skip


def has_content(sentence: str) -> bool:
    """Whether a sentence states something: a word that is not a bare answer (BARE_ANSWER_WORDS)."""
    return any(word not in BARE_ANSWER_WORDS for word in re.findall(r"\w+", sentence.lower()))


def split_statements(text: str | None) -> list[str]:
    """A reference answer (or a system's answer) cut into sentences, the statements context recall
    (or faithfulness) judges: split after `.`, `!` or `?` followed by space and a capital, a digit,
    a quote or a bracket; a sentence without content (only bare answers such as "Yes." or "No,
    not really.") is not a statement and is left out.

    Deterministic on purpose: reference answers are short, written by people, one fact a
    sentence; a model-made split would add a source of error to every context-recall score.
    Decimal points and abbreviations without a following capital do not split.
    """
    if not text or not text.strip():
        return []
    return [part.strip() for part in _SENTENCE_END.split(one_line(text)) if part.strip() and has_content(part)]


PairOutcome = Literal["a", "b", "tie", "inconsistent", "unreadable"]


def pair_outcome(a_first: str | None, b_first: str | None) -> PairOutcome:
    """One question of a pairwise comparison, asked in both orders to cancel position bias.

    a_first: the judge's preference ("first", "second", "tie") with answer a shown first;
    b_first: the same with b shown first. The two agree when they name the same answer (or both
    say tie); then that is the outcome. Otherwise the verdict is inconsistent (the judge followed
    position, not content). None (unreadable) in either order makes the question unreadable.
    """
    if a_first is None or b_first is None:
        return "unreadable"
    as_a = {"first": "a", "second": "b", "tie": "tie"}[a_first]
    as_b = {"first": "b", "second": "a", "tie": "tie"}[b_first]
    return as_a if as_a == as_b else "inconsistent"


def tally_pairs(outcomes: Sequence[PairOutcome]) -> dict[str, float]:
    """Wins of a, ties, wins of b, inconsistent and unreadable counts, and the share inconsistent
    (inconsistent / questions judged in both orders)."""
    counts = {name: sum(1 for o in outcomes if o == name) for name in ("a", "tie", "b", "inconsistent", "unreadable")}
    readable = len(outcomes) - counts["unreadable"]
    return {
        "wins_a": counts["a"],
        "ties": counts["tie"],
        "wins_b": counts["b"],
        "inconsistent": counts["inconsistent"],
        "unreadable": counts["unreadable"],
        "questions": len(outcomes),
        "inconsistent_share": counts["inconsistent"] / readable if readable else 0.0,
    }
