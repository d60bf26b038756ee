"""The rows of an answer batch's intervals and paired differences: the raw columns of
metrics/averaging.interval_table and metrics/significance.compare_all_pairs, and beside them each
judged metric's judge-corrected estimate and its interval (metrics/judge_error.py; null for the
other metrics, or without labels to correct with)."""

from __future__ import annotations

import polars as pl
from pydantic import BaseModel

from ragassay.metrics.averaging import INTERVAL_SCHEMA, IntervalRow
from ragassay.metrics.significance import COMPARISON_SCHEMA, ComparisonRow

CORRECTED_COLUMNS = {"corrected": pl.Float64, "corrected_low": pl.Float64, "corrected_high": pl.Float64}
ANSWER_INTERVAL_SCHEMA = pl.Schema({**INTERVAL_SCHEMA, **CORRECTED_COLUMNS})
ANSWER_COMPARISON_SCHEMA = pl.Schema({**COMPARISON_SCHEMA, **CORRECTED_COLUMNS})


class CorrectedEstimate(BaseModel):
    """A judged number's judge-corrected estimate and its 95% interval over questions and labels
    (metrics/judge_error.py): all None where there are no labels to correct with, the estimate
    alone None where the labels do not show the judge separating the classes."""

    corrected: float | None = None
    corrected_low: float | None = None
    corrected_high: float | None = None


class AnswerIntervalRow(IntervalRow, CorrectedEstimate):
    """An interval row of an answer batch (ANSWER_INTERVAL_SCHEMA): the raw mean and interval, and
    for a judged metric, its judge-corrected estimate."""


class AnswerComparisonRow(ComparisonRow, CorrectedEstimate):
    """A paired difference of an answer batch (ANSWER_COMPARISON_SCHEMA), with the judge-corrected
    difference and its interval where there is one."""


def answer_interval_rows(table: pl.DataFrame) -> list[AnswerIntervalRow]:
    return [AnswerIntervalRow.model_validate(row) for row in table.to_dicts()]


def answer_comparison_rows(table: pl.DataFrame) -> list[AnswerComparisonRow]:
    return [AnswerComparisonRow.model_validate(row) for row in table.to_dicts()]


def has_correction(row: BaseModel) -> bool:
    """Whether a row carries a judge-corrected interval (a judged answer metric with labels to
    correct with); a retrieval row or an unjudged metric's has none."""
    return isinstance(row, CorrectedEstimate) and row.corrected_low is not None
