"""Parquet tables: explicit schema and version checked at load, atomic writes, pure modules stay pure."""

from __future__ import annotations

import polars as pl
import pytest

from ragassay.errors import TableSchemaError
from ragassay.store.schemas import QRELS, QUERIES
from ragassay.store.tables import read_column_batches, read_table, write_table, write_table_in_groups


def test_round_trip_casts_to_the_schema(tmp_path):
    frame = pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [2]})
    path = write_table(frame, tmp_path / "qrels.parquet", QRELS)
    loaded = read_table(path, QRELS)
    assert loaded.schema == QRELS.schema and loaded.to_dicts() == [{"query_id": "q1", "doc_id": "d1", "relevance": 2}]
    assert [p.name for p in tmp_path.iterdir()] == ["qrels.parquet"], "no temporary file is left behind"


def test_reading_another_table_or_version_is_refused(tmp_path):
    path = write_table(pl.DataFrame({"query_id": ["q"], "text": ["t"]}), tmp_path / "queries.parquet", QUERIES)
    with pytest.raises(TableSchemaError, match="holds table 'queries'"):
        read_table(path, QRELS)
    plain = tmp_path / "plain.parquet"
    pl.DataFrame({"query_id": ["q"]}).write_parquet(plain)
    with pytest.raises(TableSchemaError, match="expected 'queries' version 1"):
        read_table(plain, QUERIES)


def test_missing_columns_are_refused_before_writing(tmp_path):
    with pytest.raises(TableSchemaError, match="lacks columns"):
        write_table(pl.DataFrame({"query_id": ["q"]}), tmp_path / "q.parquet", QRELS)
    assert not (tmp_path / "q.parquet").exists()


def test_a_failed_write_keeps_the_previous_file(tmp_path):
    path = write_table(pl.DataFrame({"query_id": ["q"], "text": ["kept"]}), tmp_path / "queries.parquet", QUERIES)
    with pytest.raises(pl.exceptions.ComputeError):
        write_table(pl.DataFrame({"query_id": ["q"], "text": [object()]}, strict=False), path, QUERIES)
    assert read_table(path, QUERIES)["text"].to_list() == ["kept"]
    assert [p.name for p in tmp_path.iterdir()] == ["queries.parquet"]


def test_a_damaged_file_is_a_typed_error(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(TableSchemaError, match="not a readable Parquet file"):
        read_table(path, QUERIES)


def test_a_column_is_read_in_batches_across_row_groups(tmp_path):
    import pyarrow.parquet as pq

    groups = [
        pl.DataFrame(
            {
                "query_id": [f"q{i}" for i in range(start, start + 5)],
                "text": [f"text {i}" for i in range(start, start + 5)],
            }
        )
        for start in (0, 5, 10)
    ]
    path = write_table_in_groups(groups, tmp_path / "queries.parquet", QUERIES)
    assert pq.ParquetFile(path).num_row_groups == 3
    batches = list(read_column_batches(path, QUERIES, "text", 4))
    assert [len(batch) for batch in batches] == [4, 4, 4, 3]
    assert [text for batch in batches for text in batch] == [f"text {i}" for i in range(15)]
    with pytest.raises(TableSchemaError, match="no column 'vector'"):
        next(read_column_batches(path, QUERIES, "vector", 4))
    with pytest.raises(TableSchemaError, match="holds table 'queries'"):
        next(read_column_batches(path, QRELS, "query_id", 4))
