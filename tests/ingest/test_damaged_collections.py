"""A collection whose tables were damaged, then repaired the obvious way: never evaluated as if
its index were a measurement, and made whole by the next ingest."""

from __future__ import annotations

import re

import pytest

from ragassay.errors import InconsistentCollection, IndexMissing, TableDamaged
from ragassay.store.workspace import collection_paths, load_chunks, load_documents
from tests.helpers import build_collection, index, ingest, search_hits


def _corpus(root):
    root.mkdir()
    for number in range(4):
        (root / f"note-{number}.txt").write_text(f"Hive {number} was inspected on day {number}.", encoding="utf-8")
    return root


def test_a_deleted_chunks_table_is_refused_by_index_and_search_and_rebuilt_by_ingest(tmp_path):
    home, corpus = tmp_path / "workspace", _corpus(tmp_path / "corpus")
    build_collection(home, "notes", (corpus,))
    paths = collection_paths(home, "notes")
    paths.chunks.unlink()

    with pytest.raises(InconsistentCollection, match=r"4 of its 4 documents without any chunks.*ragassay ingest"):
        index(home, "notes")
    with pytest.raises(IndexMissing):
        search_hits(home, ["notes"], "hive inspected")

    report = ingest(home, "notes", (corpus,))
    assert report.counts["unchanged"] == 0, "documents without chunks are extracted and chunked again"
    assert set(load_chunks(paths)["doc_id"]) == set(load_documents(paths)["doc_id"])
    index(home, "notes")
    assert search_hits(home, ["notes"], "hive inspected")


def test_a_damaged_chunks_table_names_the_file_and_its_repair(tmp_path):
    home, corpus = tmp_path / "workspace", _corpus(tmp_path / "corpus")
    build_collection(home, "notes", (corpus,))
    paths = collection_paths(home, "notes")
    data = bytearray(paths.chunks.read_bytes())
    data[len(data) // 3] ^= 0xFF
    paths.chunks.write_bytes(bytes(data))
    with pytest.raises(TableDamaged, match=rf"{re.escape(str(paths.chunks))}.*ragassay ingest"):
        index(home, "notes")
