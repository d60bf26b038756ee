"""Conversations: the turns of one golden dialogue are not independent questions (a follow-up
fails when the turn before it went wrong), so every interval over turns resamples whole dialogues,
and first turns and follow-ups are reported apart. Pure numpy.

- Cluster bootstrap: a question's group is its dialogue (a single question is a group of its own);
  a replicate draws as many groups as there are, with replacement, and its mean is the sum of the
  drawn groups' values over their count. With every group of one question this is the plain
  bootstrap over questions, and the same seed gives the same draws.
- Follow-up gap: mean over follow-up turns minus mean over first turns,
      gap = (1/|F|) sum_{t in F} v_t - (1/|S|) sum_{t in S} v_t,
  where S holds the dialogues' first turns and F their later ones (scored turns only); its 95%
  interval resamples dialogues, both means taken over the same drawn dialogues, and is given only
  from MIN_BOOTSTRAP_QUESTIONS dialogues on: over fewer, a percentile bootstrap is narrower than
  the truth (the sample's 12 dialogues, all scored 1.0, printed +0.000 [+0.000, +0.000]), and no
  test of the gap is printed beside it to invert instead.
- Conversation success: the share of dialogues every turn of which was cited or declined as it
  should be: an answerable turn answered with every citation supported, an unanswerable one
  declined (`turn_handled`); over the dialogues whose every turn can be told.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict

from ragassay.metrics.declared import TURN_METRIC
from ragassay.metrics.levels import MIN_BOOTSTRAP_QUESTIONS
from ragassay.metrics.names import FIRST, FOLLOWUP, metric_key

INTERVAL_RESAMPLES = 2_000


def group_index(groups: Sequence[str]) -> tuple[np.ndarray, int]:
    """(each item's group number, numbered in order of first appearance; how many groups)."""
    numbers: dict[str, int] = {}
    index = np.array([numbers.setdefault(group, len(numbers)) for group in groups], dtype=np.int64)
    return index, len(numbers)


def question_groups(table: pl.DataFrame) -> list[str]:
    """Each row's group in a per-question table: its collection and dialogue for a dialogue's turn
    (a `dialogue_id` column, null for single questions), else its collection and question id."""
    if "dialogue_id" not in table.columns:
        return [f"{c}\x1f{q}" for c, q in table.select("query_collection", "query_id").iter_rows()]
    return [
        f"{c}\x1f{q}" if d is None else f"{c}\x1f#{d}"
        for c, q, d in table.select("query_collection", "query_id", "dialogue_id").iter_rows()
    ]


def drawn_ratio(sums: np.ndarray, counts: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """Per row of `picks` (group numbers drawn with replacement): the drawn groups' summed values
    over their summed counts, a mean over the values those groups hold (NaN when they hold none)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[picks].sum(axis=1) / counts[picks].sum(axis=1)


class FollowupGap(BaseModel):
    """One metric on the dialogues' first turns and on their follow-ups, and the gap between them
    (follow-ups minus first turns) with its dialogue-resampled 95% interval (None below
    MIN_BOOTSTRAP_QUESTIONS dialogues: `has_interval`)."""

    model_config = ConfigDict(frozen=True)

    first_mean: float | None
    first_scored: int
    followup_mean: float | None
    followup_scored: int
    dialogues: int
    gap: float | None
    ci_low: float | None
    ci_high: float | None

    @property
    def has_interval(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None


def followup_gap(
    values: Sequence[float | None],
    dialogue_ids: Sequence[str | None],
    turns: Sequence[int | None],
    seed: int = 0,
    resamples: int = INTERVAL_RESAMPLES,
) -> FollowupGap:
    """First-turn and follow-up means of the dialogues' scored turns, and the gap with its
    dialogue-resampled 95% interval (the gap None where either side has nothing scored; the
    interval None too below MIN_BOOTSTRAP_QUESTIONS dialogues: module docstring)."""
    rows = [
        (value, dialogue, turn)
        for value, dialogue, turn in zip(values, dialogue_ids, turns, strict=True)
        if value is not None and dialogue is not None and turn is not None
    ]
    first = [value for value, _, turn in rows if turn == 1]
    later = [value for value, _, turn in rows if turn > 1]
    first_mean = float(np.mean(first)) if first else None
    later_mean = float(np.mean(later)) if later else None
    sides = {
        "first_mean": first_mean,
        "first_scored": len(first),
        "followup_mean": later_mean,
        "followup_scored": len(later),
        "dialogues": len({dialogue for _, dialogue, _ in rows}),
    }
    if first_mean is None or later_mean is None:
        return FollowupGap(**sides, gap=None, ci_low=None, ci_high=None)
    if sides["dialogues"] < MIN_BOOTSTRAP_QUESTIONS:
        return FollowupGap(**sides, gap=later_mean - first_mean, ci_low=None, ci_high=None)
    groups, count = group_index([dialogue for _, dialogue, _ in rows])
    value_array = np.array([value for value, _, _ in rows], dtype=np.float64)
    is_first = np.array([turn == 1 for _, _, turn in rows], dtype=np.float64)
    picks = np.random.default_rng(seed).integers(0, count, size=(resamples, count))
    first_means = drawn_ratio(
        np.bincount(groups, value_array * is_first, count), np.bincount(groups, is_first, count), picks
    )
    later_means = drawn_ratio(
        np.bincount(groups, value_array * (1 - is_first), count), np.bincount(groups, 1 - is_first, count), picks
    )
    differences = later_means - first_means
    low, high = np.percentile(differences[np.isfinite(differences)], [2.5, 97.5])
    return FollowupGap(**sides, gap=later_mean - first_mean, ci_low=float(low), ci_high=float(high))


class FollowupGapRow(FollowupGap):
    """A configuration's FollowupGap of one metric: a row of a report's first-turn and follow-up table."""

    configuration: str
    metric: str


def has_turns(table: pl.DataFrame) -> bool:
    """Whether a per-question table holds golden dialogues' turns."""
    return "turn" in table.columns and table["turn"].is_not_null().any()


def followup_gap_rows(per_question: dict[str, pl.DataFrame], metrics: Sequence[str], seed: int) -> list[FollowupGapRow]:
    """Each configuration's followup_gap of each metric, where its questions hold dialogues' turns."""
    rows = []
    for label, table in per_question.items():
        if not has_turns(table):
            continue
        dialogues = [
            None if d is None else f"{c}\x1f{d}" for c, d in table.select("query_collection", "dialogue_id").iter_rows()
        ]
        for metric in metrics:
            if metric in table.columns:
                gap = followup_gap(table[metric].to_list(), dialogues, table["turn"].to_list(), seed)
                rows.append(FollowupGapRow(configuration=label, metric=metric, **gap.model_dump()))
    return rows


def subset_means(table: pl.DataFrame, metrics: Sequence[str]) -> dict[str, float]:
    """Each metric's mean over the dialogues' first turns and over their follow-ups, keyed
    `first.<metric>` / `followup.<metric>` as metric keys (`followup_recall@5`); a subset with
    nothing scored has no key (an assertion on it fails: nothing scored)."""
    if not has_turns(table):
        return {}
    means = {}
    for subset, turns in ((FIRST, pl.col("turn") == 1), (FOLLOWUP, pl.col("turn") > 1)):
        chosen = table.filter(turns)
        for metric in metrics:
            if metric in chosen.columns and chosen[metric].is_not_null().any():
                means[metric_key(f"{subset}.{metric}")] = float(chosen[metric].drop_nulls().mean())
    return means


def turn_handled(answerable: bool, outcome: str, citations: int, cited_supported: float | None) -> bool | None:
    """One turn cited or declined as it should be: an unanswerable turn declined; an answerable one
    answered with citations, every one supported by its source (TURN_METRIC, citation precision, is 1). None when
    it cannot be told: a system's call failed (outcome `error`), or the judge could not read a
    citation's verdict."""
    if outcome == "error":
        return None
    refused = outcome == "refused"
    if not answerable:
        return refused
    if refused or citations == 0:
        return False
    return None if cited_supported is None else cited_supported == 1.0


def conversation_success(answers: pl.DataFrame) -> tuple[float | None, int]:
    """The share of golden dialogues every turn of which was handled (turn_handled), over the
    dialogues whose every turn can be told, from a configuration's answers table; and how many
    those are. (None, 0) without any."""
    turns: dict[tuple, list[bool | None]] = {}
    columns = ("query_collection", "dialogue_id", "answerable", "outcome", "citations", TURN_METRIC)
    if "dialogue_id" not in answers.columns:
        return None, 0
    for collection, dialogue, answerable, outcome, citations, precision in answers.select(*columns).iter_rows():
        if dialogue is not None:
            turns.setdefault((collection, dialogue), []).append(
                turn_handled(answerable, outcome, citations or 0, precision)
            )
    known = [all(handled) for handled in turns.values() if all(h is not None for h in handled)]
    return (sum(known) / len(known) if known else None, len(known))


FOLLOWUP_GAP_SCHEMA = pl.Schema(
    {
        "configuration": pl.String,
        "metric": pl.String,
        "first_mean": pl.Float64,
        "first_scored": pl.Int64,
        "followup_mean": pl.Float64,
        "followup_scored": pl.Int64,
        "dialogues": pl.Int64,
        "gap": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
    }
)


def gap_table(rows: Sequence[FollowupGapRow]) -> pl.DataFrame:
    """Follow-up gap rows as a table (FOLLOWUP_GAP_SCHEMA: the rows' own field names)."""
    return pl.DataFrame([row.model_dump() for row in rows], schema=FOLLOWUP_GAP_SCHEMA)
