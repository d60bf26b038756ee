"""What every answer metric shares: a question's score (`Scored`, a value or why it has none),
the fraction of supported verdicts most of them are, the statements an answer or a reference is
cut into, the refusal metrics (counted from outcomes, no judge) and pairwise outcomes. Each
answer metric's own formula is in its module (metrics/answer_metrics/<name>.py).

A verdict is True (supported), False (unsupported) or None (the judge's output could not be read).
Conventions, in writing:
- a per-question metric is a `Scored`: a value in [0, 1], or no value and the reason it was left
  out. A question with any unreadable verdict for a metric is left out of that metric only (never
  scored 0, never NaN); a question with nothing to judge (no statements, no citations, no
  reference answer) is left out too. Means are over the questions a metric scored, and every mean
  is reported with that count (`mean_scored`).
- a refused answer is scored only by the metrics declared `scored_when_refused` (a property of
  retrieval, such as context recall); it counts in the refusal metrics.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
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
    # What the judge read to give the value, shown beside it where the metric declares a
    # detail_column (answer relevancy: the question the answer responds to).
    detail: str | None = None

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


def refusal_recall(declined_unanswerable: Sequence[bool]) -> float | None:
    """refusal recall = unanswerable questions declined / unanswerable questions (None without any)."""
    return sum(declined_unanswerable) / len(declined_unanswerable) if declined_unanswerable else None


def false_refusal_rate(declined_answerable: Sequence[bool]) -> float | None:
    """false-refusal rate = answerable questions declined / answerable questions (None without any).

    Always reported beside refusal recall: a pipeline that declines everything has recall 1 and
    a false-refusal rate of 1.
    """
    return sum(declined_answerable) / len(declined_answerable) if declined_answerable else None


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
