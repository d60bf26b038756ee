"""Each typed row and the Polars schema of the table it is read from name the same fields in the
same order, so a column renamed in one is a failure here, not a KeyError in one report."""

from __future__ import annotations

import pytest

from ragassay.gates.regression import REGRESSION_SCHEMA, DropRow
from ragassay.metrics.averaging import INTERVAL_SCHEMA, IntervalRow, interval_table
from ragassay.metrics.corrected_rows import (
    ANSWER_COMPARISON_SCHEMA,
    ANSWER_INTERVAL_SCHEMA,
    AnswerComparisonRow,
    AnswerIntervalRow,
)
from ragassay.metrics.significance import COMPARISON_SCHEMA, ComparisonRow, compare_all_pairs, comparison_rows


@pytest.mark.parametrize(
    ("row", "schema"),
    [
        (IntervalRow, INTERVAL_SCHEMA),
        (ComparisonRow, COMPARISON_SCHEMA),
        (AnswerIntervalRow, ANSWER_INTERVAL_SCHEMA),
        (AnswerComparisonRow, ANSWER_COMPARISON_SCHEMA),
        (DropRow, REGRESSION_SCHEMA),
    ],
)
def test_a_typed_row_names_its_tables_columns(row, schema):
    assert sorted(row.model_fields) == sorted(schema), row.__name__


def test_rows_read_from_real_tables_keep_every_value():
    import polars as pl

    per_question = {
        label: pl.DataFrame(
            {"query_collection": ["c"] * 4, "query_id": ["1", "2", "3", "4"], "mrr": scores},
        )
        for label, scores in (("a", [1.0, 0.5, 0.0, 1.0]), ("b", [1.0, 1.0, 0.5, 1.0]))
    }
    intervals = interval_table(per_question, ["mrr"], seed=1)
    assert [row.model_dump() for row in map(IntervalRow.model_validate, intervals.to_dicts())] == intervals.to_dicts()
    comparisons = compare_all_pairs(per_question, ["mrr"], seed=1)
    [row] = comparison_rows(comparisons)
    assert row.model_dump() == comparisons.row(0, named=True) and row.mean_difference == pytest.approx(0.25)
