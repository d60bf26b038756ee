"""Golden-set operations on the workspace: add, import, list, delete (quick, no flow needed)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from pydantic import BaseModel

from ragassay.errors import ConfigError, RagassayError
from ragassay.golden.dialogues import DialogueCandidate, turn_id, validate_dialogues
from ragassay.golden.entries import GoldenCandidate, GoldenProblem, validate_candidates
from ragassay.golden.files import GoldenFile, read_candidate_file
from ragassay.store.schemas import DIALOGUES, GOLDEN, QRELS, QUERIES
from ragassay.store.tables import read_table, read_table_or_empty, write_table
from ragassay.store.workspace import CollectionPaths, collection_paths, load_documents


class GoldenChange(BaseModel):
    """What an add or import stored and refused: entries (`added`) and dialogues."""

    collection: str
    added: list[str] = []
    dialogues_added: list[str] = []
    problems: list[dict] = []
    size: int = 0
    dialogues: int = 0  # golden dialogues in all, after the change
    # False for a collection that holds only a golden set: expected ids could not be checked.
    ids_checked: bool = True


def load_golden(paths: CollectionPaths) -> pl.DataFrame:
    return read_table_or_empty(paths.golden, GOLDEN)


def load_dialogues(paths: CollectionPaths) -> pl.DataFrame:
    """The collection's golden dialogues, a row per turn, in dialogue and turn order."""
    return read_table_or_empty(paths.dialogues, DIALOGUES).sort("dialogue_id", "turn", maintain_order=True)


def dialogue_turn_ids(dialogues: pl.DataFrame) -> set[str]:
    return {turn_id(dialogue, turn) for dialogue, turn in dialogues.select("dialogue_id", "turn").iter_rows()}


def load_golden_with_staleness(paths: CollectionPaths) -> pl.DataFrame:
    """The golden set with `stale`: true for a generated entry whose source document has changed
    (or is gone) since the question was written."""
    documents = load_documents(paths).select("doc_id", pl.col("sha256").alias("current_sha256"))
    golden = load_golden(paths).with_columns(pl.col("expected_document_ids").list.first().alias("source_doc_id"))
    joined = golden.join(documents, left_on="source_doc_id", right_on="doc_id", how="left", maintain_order="left")
    stale = pl.col("source_document_sha256").is_not_null() & (
        pl.col("current_sha256").is_null() | (pl.col("current_sha256") != pl.col("source_document_sha256"))
    )
    return joined.with_columns(stale.alias("stale")).drop("source_doc_id", "current_sha256")


def add_candidates(
    home: Path,
    collection: str,
    candidates: list[GoldenCandidate],
    problems: list[GoldenProblem],
    dialogues: list[DialogueCandidate] = (),
) -> GoldenChange:
    """Validate entries and dialogues against what is stored and the collection, store the good
    ones. A name that is no collection yet becomes one that holds only this golden data: its
    expected ids are then not checked (nothing to check them against), and the change says so."""
    paths = collection_paths(home, collection, must_exist=False)
    if not paths.documents.exists() and not paths.golden_only:
        if paths.root.is_dir() and any(paths.root.iterdir()):
            collection_paths(home, collection)  # a lost documents table: its own error says so
        paths.root.mkdir(parents=True, exist_ok=True)
    # Validated against, and added to, what is stored when the lock is held: a concurrent add
    # waits, then sees these entries (store/locks.py).
    with paths.write_lock():
        stored, stored_dialogues = load_golden(paths), load_dialogues(paths)
        known = set(load_documents(paths)["doc_id"].to_list()) if paths.documents.exists() else None
        now = datetime.now(UTC)
        accepted, refused = validate_candidates(candidates, stored, known, now, dialogue_turn_ids(stored_dialogues))
        golden_ids = set(stored["entry_id"].to_list()) | set(accepted["entry_id"].to_list())
        new_dialogues, refused_dialogues = validate_dialogues(list(dialogues), stored_dialogues, golden_ids, known, now)
        if accepted.height:
            write_table(pl.concat([stored, accepted]), paths.golden, GOLDEN)
        if new_dialogues.height:
            write_table(pl.concat([stored_dialogues, new_dialogues]), paths.dialogues, DIALOGUES)
    if not paths.golden.exists() and not paths.dialogues.exists() and not paths.documents.exists():
        paths.root.rmdir()  # nothing was added: no empty collection is left behind
    every = pl.concat([stored_dialogues, new_dialogues])
    return GoldenChange(
        collection=collection,
        added=accepted["entry_id"].to_list(),
        dialogues_added=new_dialogues["dialogue_id"].unique(maintain_order=True).to_list(),
        # In file order, entries' and dialogues' problems together.
        problems=[p.__dict__ for p in sorted(problems + refused + refused_dialogues, key=_file_order)],
        size=stored.height + accepted.height,
        dialogues=every["dialogue_id"].n_unique(),
        ids_checked=known is not None,
    )


def _file_order(problem: GoldenProblem) -> tuple[str, int]:
    where, _, line = problem.source.rpartition(":")
    return (where, int(line)) if line.isdigit() else (problem.source, 0)


def read_question_file(path: Path, what: str) -> GoldenFile:
    """Rows of a .jsonl/.csv question file; a missing or unreadable file is a ConfigError."""
    if not path.is_file():
        raise ConfigError(f"{what} file {path} does not exist")
    try:
        return read_candidate_file(path)
    except (ValueError, UnicodeDecodeError) as error:
        raise ConfigError(str(error)) from error


def add_from_file(home: Path, collection: str, path: Path) -> GoldenChange:
    read = read_question_file(path, "golden set")
    return add_candidates(home, collection, read.candidates, read.problems, read.dialogues)


def import_beir(home: Path, collection: str) -> GoldenChange:
    """Golden entries from the collection's imported BEIR test queries and graded qrels."""
    paths = collection_paths(home, collection)
    if not paths.beir_qrels.exists():
        raise RagassayError(f"collection {collection!r} has no BEIR queries; ingest it with --format beir first")
    queries = read_table(paths.beir_queries, QUERIES)
    qrels = read_table(paths.beir_qrels, QRELS).filter(pl.col("relevance") > 0)
    grouped = qrels.group_by("query_id", maintain_order=True).agg("doc_id", "relevance")
    joined = queries.join(grouped, on="query_id", how="inner", maintain_order="left")
    candidates = [
        GoldenCandidate(
            question=row["text"],
            expected_document_ids=tuple(row["doc_id"]),
            relevance=tuple(row["relevance"]),
            source=f"{paths.beir_queries}#{row['query_id']}",
            entry_id=row["query_id"],
            origin="imported",
        )
        for row in joined.iter_rows(named=True)
    ]
    return add_candidates(home, collection, candidates, [])


def delete_entries(home: Path, collection: str, entry_ids: list[str]) -> list[str]:
    """Remove entries and dialogues (by a dialogue's id: all its turns); nothing is removed when
    any id is unknown."""
    paths = collection_paths(home, collection)
    with paths.write_lock():
        stored, dialogues = load_golden(paths), load_dialogues(paths)
        known = set(stored["entry_id"].to_list()) | set(dialogues["dialogue_id"].to_list())
        unknown = sorted(set(entry_ids) - known)
        if unknown:
            raise RagassayError(f"golden set of {collection!r} has no entries or dialogues {', '.join(unknown)}")
        if stored.filter(pl.col("entry_id").is_in(entry_ids)).height:
            write_table(stored.filter(~pl.col("entry_id").is_in(entry_ids)), paths.golden, GOLDEN)
        if dialogues.filter(pl.col("dialogue_id").is_in(entry_ids)).height:
            write_table(dialogues.filter(~pl.col("dialogue_id").is_in(entry_ids)), paths.dialogues, DIALOGUES)
    return sorted(set(entry_ids))
