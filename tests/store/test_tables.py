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


def test_a_flipped_byte_anywhere_in_a_table_is_refused_naming_the_file_never_read_as_stored(tmp_path):
    """The faults of a disk or a copy: one byte changed. Every flip, in the data pages, the page
    headers or the footer, is a TableDamaged naming the file (or, where the byte is one no reader
    uses, the very rows that were stored)."""
    import pyarrow.parquet as pq

    from ragassay.errors import TableDamaged
    from ragassay.store.schemas import GOLDEN

    stored = pl.DataFrame(
        {"query_id": [f"q{i}" for i in range(40)], "text": [f"What happened to hive {i} in spring?" for i in range(40)]}
    )
    clean = write_table(stored, tmp_path / "queries.parquet", QUERIES).read_bytes()
    data_start = pq.ParquetFile(tmp_path / "queries.parquet").metadata.row_group(0).column(0).data_page_offset
    damaged, unchanged = 0, 0
    for position in range(data_start, len(clean) - 8, 7):
        flipped = bytearray(clean)
        flipped[position] ^= 0x5A
        path = tmp_path / f"flip-{position}.parquet"
        path.write_bytes(bytes(flipped))
        try:
            read = read_table(path, QUERIES)
        except TableSchemaError as error:
            assert str(path) in str(error), error
            damaged += 1
        else:
            assert read.equals(stored), f"a flip at byte {position} changed what was read"
            unchanged += 1
    assert damaged > unchanged, (damaged, unchanged)  # 128 against 41 when written
    # A damaged table says how it is made again.
    path = tmp_path / "golden.parquet"
    write_table(GOLDEN.empty(), path, GOLDEN)
    path.write_bytes(path.read_bytes()[:-20] + b"\x00" * 20)
    with pytest.raises(TableDamaged, match="golden add"):
        read_table(path, GOLDEN)


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
