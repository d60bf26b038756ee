"""A collection whose tables were damaged, then repaired the obvious way: never evaluated as if
its index were a measurement, and made whole by the next ingest."""

from __future__ import annotations

import re
from pathlib import Path

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


def test_a_collection_without_its_documents_table_is_named_as_such_and_rebuilt_by_ingest(tmp_path):
    from ragassay.errors import CollectionNotFound
    from ragassay.golden.store import add_from_file, load_golden

    home, corpus = tmp_path / "workspace", _corpus(tmp_path / "corpus")
    build_collection(home, "notes", (corpus,))
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"question": "When was hive 1 inspected?", "expected_document_ids": ["note-1.txt"]}\n')
    assert add_from_file(home, "notes", golden).added
    collection_paths(home, "notes").documents.unlink()
    with pytest.raises(CollectionNotFound, match=r"has no documents table .*ragassay ingest -c notes"):
        collection_paths(home, "notes")
    ingest(home, "notes", (corpus,))
    assert load_golden(collection_paths(home, "notes")).height == 1, "the golden set was kept"


def test_names_in_nfc_and_nfd_are_one_document_id(tmp_path):
    from ragassay.ingest.documents import delete_documents

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "cafe\u0301.txt").write_text(
        "Decomposed: the hive by the cafe.", encoding="utf-8"
    )  # NFD, as macOS writes
    (corpus / "caf\u00e9.txt").write_text("Composed: the hive by the cafe.", encoding="utf-8")  # NFC
    home = tmp_path / "workspace"
    report = ingest(home, "notes", (corpus,))
    assert report.counts["ingested"] == 1 and [r.reason for r in report.rejected] == ["duplicate_id"]
    paths = collection_paths(home, "notes")
    assert load_documents(paths)["doc_id"].to_list() == ["caf\u00e9.txt"]
    assert delete_documents(paths, ["cafe\u0301.txt"]) == ["caf\u00e9.txt"], "either spelling names it"


def _check(*args: str):
    from typer.testing import CliRunner

    from ragassay.cli.main import app

    return CliRunner().invoke(app, ["collections", "check", *args, "--json"])


def _flip_a_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))


def test_collections_check_passes_a_whole_collection(home, tmp_path):
    import json

    build_collection(home, "notes", (_corpus(tmp_path / "corpus"),))
    result = _check("notes")
    assert result.exit_code == 0, result.output
    health = json.loads(result.stdout)
    assert (health["documents"], health["chunks"], health["index"], health["findings"]) == (4, 4, "current", [])


def test_collections_check_repair_rebuilds_damaged_chunks_as_they_were_and_keeps_the_damaged_file(home, tmp_path):
    import json

    build_collection(home, "notes", (_corpus(tmp_path / "corpus"),))
    paths = collection_paths(home, "notes")
    chunks_before, hits_before = load_chunks(paths), search_hits(home, ["notes"], "hive 2 inspected")
    _flip_a_byte(paths.chunks)
    damaged = paths.chunks.read_bytes()

    found = _check("notes")
    assert found.exit_code == 1
    [finding] = json.loads(found.stdout)["findings"]
    assert finding["table"] == "chunks" and str(paths.chunks) in finding["problem"] and finding["repairable"]

    repaired = _check("notes", "--repair")
    assert repaired.exit_code == 0, repaired.output
    report = json.loads(repaired.stdout)
    assert report["after"]["findings"] == [] and report["after"]["index"] == "current"
    [kept] = report["moved_aside"]
    assert Path(kept).read_bytes() == damaged, "the damaged file is kept, not deleted"
    assert load_chunks(paths).equals(chunks_before), "chunks rebuilt from the documents' text are the ones ingest made"
    assert search_hits(home, ["notes"], "hive 2 inspected") == hits_before


def test_collections_check_repair_rebuilds_a_damaged_index(home, tmp_path):
    import json

    build_collection(home, "notes", (_corpus(tmp_path / "corpus"),))
    paths = collection_paths(home, "notes")
    hits_before = search_hits(home, ["notes"], "hive 2 inspected")
    for file in paths.bm25_dir.iterdir():
        file.write_bytes(b"not an index")
    found = _check("notes")
    assert found.exit_code == 1
    assert [f["table"] for f in json.loads(found.stdout)["findings"]] == ["index"]
    repaired = _check("notes", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert search_hits(home, ["notes"], "hive 2 inspected") == hits_before


@pytest.mark.parametrize("damage", ["a flipped byte", "0 bytes"])
def test_collections_check_repair_moves_a_damaged_golden_set_aside_so_golden_add_writes_a_new_one(
    home, tmp_path, damage
):
    """A golden table cannot be rebuilt from the others; `--repair` moves it into damaged/ (its
    bytes kept) and says so, and `golden add` then writes a new one (issue 37 case 6: a 0-byte
    golden.parquet was a dead end, repair saying "nothing to repair")."""
    import json

    from ragassay.golden.store import add_from_file, load_golden

    build_collection(home, "notes", (_corpus(tmp_path / "corpus"),))
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"question": "When was hive 1 inspected?", "expected_document_ids": ["note-1.txt"]}\n')
    add_from_file(home, "notes", golden)
    paths = collection_paths(home, "notes")
    if damage == "0 bytes":
        paths.golden.write_bytes(b"")
    else:
        _flip_a_byte(paths.golden)
    damaged = paths.golden.read_bytes()
    found = _check("notes")
    assert found.exit_code == 1
    [finding] = json.loads(found.stdout)["findings"]
    assert finding["table"] == "golden" and finding["repairable"] and "golden add" in finding["repair"]
    result = _check("notes", "--repair")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["after"]["findings"] == []
    assert any("golden set aside" in action and "golden add" in action for action in report["actions"])
    [kept] = report["moved_aside"]
    assert Path(kept).read_bytes() == damaged and "damaged" in Path(kept).parts
    add_from_file(home, "notes", golden)
    assert load_golden(paths).height == 1
