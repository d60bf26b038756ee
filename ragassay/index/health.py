"""A collection's tables and index checked against each other (`ragassay collections check`), and
the repairs that can be made from what is stored (`--repair`).

Every table is read in full, so each page checksum is verified; then the chunks are checked
against the documents (both directions) and the index against the chunks (its input digest, its
BM25 files, an embedding for every chunk). What can be rebuilt is: chunks from the documents'
stored text and recorded chunk settings (the text is what an ingest chunked; a PDF's page
boundaries are not stored, so its chunks come from a new ingest of its source), the embedding
cache and the index from the chunks. A damaged documents or golden table cannot be rebuilt from
the others: the finding names what restores it (a damaged golden table is moved aside by the
repair, so that `golden add` can write a new one). A damaged file is moved aside into the
collection's `damaged/` folder, never deleted, before anything replaces it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from pydantic import BaseModel

from ragassay.errors import InconsistentCollection, IndexMissing, TableSchemaError
from ragassay.index.build import build_index
from ragassay.ingest.chunking import chunk_document
from ragassay.ingest.documents import Chunker, chunk_id_for, sha256_hex
from ragassay.search.collections import check_index
from ragassay.search.dense import Embedder, EmbeddingModelSpec
from ragassay.store.schemas import CHUNKS, DIALOGUES, DOCUMENTS, GOLDEN, embeddings_spec
from ragassay.store.tables import read_row_groups, read_table, write_table
from ragassay.store.workspace import CollectionPaths, collection_paths, read_manifest


class Finding(BaseModel):
    """One problem: the table (documents, chunks, embeddings, golden or index), what is wrong, and
    how it is repaired (by `--repair` when `repairable`, else by the command named)."""

    table: str
    problem: str
    repair: str
    repairable: bool


class CollectionHealth(BaseModel):
    """What `collections check` reports: the counts it could read and every finding."""

    collection: str
    documents: int | None
    chunks: int | None
    golden_entries: int | None
    golden_dialogues: int | None = None
    index: str  # current, not built, or a finding's table is "index"
    findings: list[Finding]

    @property
    def healthy(self) -> bool:
        return not self.findings


class RepairReport(BaseModel):
    """What `--repair` did, and the collection's health afterwards."""

    actions: list[str]
    moved_aside: list[str]
    after: CollectionHealth


def check_collection(home: Path, name: str) -> CollectionHealth:
    """Every table read and verified, then the tables and the index checked against each other."""
    paths = collection_paths(home, name)
    findings: list[Finding] = []
    documents = _read(paths.documents, DOCUMENTS, "documents", findings)
    chunks = _read(paths.chunks, CHUNKS, "chunks", findings, missing_is_finding=documents is not None)
    golden = _read(paths.golden, GOLDEN, "golden", findings, missing_is_finding=False)
    dialogues = _read(paths.dialogues, DIALOGUES, "dialogues", findings, missing_is_finding=False)
    manifest = read_manifest(paths)
    if manifest is not None and paths.embeddings.exists():
        try:
            for _ in read_row_groups(paths.embeddings, embeddings_spec(manifest["dimension"])):
                pass
        except TableSchemaError as error:
            findings.append(Finding(table="embeddings", problem=str(error), repair=_REBUILD_INDEX, repairable=True))
    if documents is not None and chunks is not None:
        findings.extend(_consistency(documents, chunks))
    index = "not built" if manifest is None else "current"
    if manifest is None:
        if documents is not None and documents.height:
            findings.append(
                Finding(table="index", problem="the collection is not indexed", repair=_REBUILD_INDEX, repairable=True)
            )
    elif documents is not None and chunks is not None and not findings:
        try:
            check_index(home, name)
        except (IndexMissing, InconsistentCollection, TableSchemaError) as error:
            index = "out of date or damaged"
            findings.append(Finding(table="index", problem=str(error), repair=_REBUILD_INDEX, repairable=True))
        except Exception as error:  # bm25s and numpy raise their own types for damaged index files
            index = "damaged"
            findings.append(
                Finding(
                    table="index",
                    problem=f"{paths.index_dir} is damaged ({type(error).__name__}: {error})",
                    repair=_REBUILD_INDEX,
                    repairable=True,
                )
            )
    elif manifest is not None:
        index = "not checked (its inputs have findings)"
    return CollectionHealth(
        collection=name,
        documents=None if documents is None else documents.height,
        chunks=None if chunks is None else chunks.height,
        golden_entries=None if golden is None else golden.height,
        golden_dialogues=None if dialogues is None else dialogues["dialogue_id"].n_unique(),
        index=index,
        findings=findings,
    )


def repair_collection(
    home: Path,
    name: str,
    embedder_for: Callable[[EmbeddingModelSpec], Embedder],
    default_embedding_model: str,
    progress: Callable[[str], None] = lambda step: None,
) -> RepairReport:
    """Repair what check_collection finds repairable: damaged files moved aside, chunks rebuilt
    from the documents' text, then the index rebuilt (with the embedding model it was built with,
    else the default). What cannot be repaired stays a finding of the report's `after`."""
    paths = collection_paths(home, name)
    before = check_collection(home, name)
    actions: list[str] = []
    moved: list[str] = []
    tables = {finding.table for finding in before.findings if finding.repairable}
    if "chunks" in tables and "documents" not in {f.table for f in before.findings}:
        progress("rebuilding chunks from the documents' text")
        with paths.write_lock():
            rebuilt, skipped = _rebuild_chunks(paths, moved)
        actions.append(f"rebuilt the chunks of {rebuilt} documents from their stored text")
        if skipped:
            actions.append(f"left {len(skipped)} PDF documents for `ragassay ingest` (e.g. {skipped[0]})")
    for table, path in (("golden", paths.golden), ("dialogues", paths.dialogues)):
        if table in tables:
            with paths.write_lock():
                moved.append(str(_move_aside(paths, path)))
            actions.append(
                f"moved the damaged {_TABLE_WORDS[table]} aside (into damaged/): add the golden file again with "
                "`ragassay golden add`, or restore the table from a copy"
            )
    if "embeddings" in tables:
        with paths.write_lock():
            moved.append(str(_move_aside(paths, paths.embeddings)))
        actions.append("moved the damaged embedding cache aside")
    middle = check_collection(home, name) if actions else before
    if any(f.table == "index" for f in middle.findings):
        manifest = read_manifest(paths) or {}
        model = manifest.get("embedding_model") or default_embedding_model
        progress(f"rebuilding the index with {model}")
        report = build_index(home, name, embedder_for, model)
        actions.append(f"rebuilt the index over {report.chunks} chunks ({report.embedded} embedded)")
    return RepairReport(actions=actions, moved_aside=moved, after=check_collection(home, name))


_REBUILD_INDEX = "rebuilt from the chunks (`--repair`, or `ragassay index`)"
_REBUILD_CHUNKS = "rebuilt from the documents' stored text (`--repair`); PDFs by `ragassay ingest` on their sources"


def _read(
    path: Path, spec, table: str, findings: list[Finding], missing_is_finding: bool = True
) -> pl.DataFrame | None:
    """The whole table (every page checksum verified), or None with a finding."""
    if not path.exists():
        if missing_is_finding:
            findings.append(
                Finding(table=table, problem=f"{path} is missing", repair=_REPAIRS[table], repairable=table == "chunks")
            )
        return None
    try:
        return read_table(path, spec)
    except TableSchemaError as error:
        findings.append(
            Finding(
                table=table,
                problem=str(error),
                repair=_REPAIRS[table],
                repairable=table in ("chunks", "golden", "dialogues"),
            )
        )
        return None


# A damaged golden table cannot be rebuilt from the others, but it can be moved out of the way, so
# that `golden add` writes a new one (it refuses to write over a table it cannot read).
_DAMAGED_GOLDEN = (
    "moved aside into damaged/ (`--repair`); then add the golden file again (`ragassay golden add`), "
    "or restore the table from a copy"
)

_REPAIRS = {
    "documents": "run `ragassay ingest` on the collection's sources again (its golden set is kept)",
    "chunks": _REBUILD_CHUNKS,
    "golden": _DAMAGED_GOLDEN,
    "dialogues": _DAMAGED_GOLDEN,
}
_TABLE_WORDS = {"golden": "golden set", "dialogues": "golden dialogues"}


def _consistency(documents: pl.DataFrame, chunks: pl.DataFrame) -> list[Finding]:
    stored = set(documents["doc_id"].to_list())
    chunked = set(chunks["doc_id"].unique().to_list())
    findings = []
    if orphans := chunked - stored:
        findings.append(
            Finding(
                table="chunks",
                problem=f"chunks of {len(orphans)} documents the collection does not hold (e.g. {sorted(orphans)[0]!r})",
                repair="dropped (`--repair`), or by `ragassay ingest` on the sources",
                repairable=True,
            )
        )
    if unchunked := stored - chunked:
        findings.append(
            Finding(
                table="chunks",
                problem=f"{len(unchunked)} of {len(stored)} documents have no chunks (e.g. {sorted(unchunked)[0]!r})",
                repair=_REBUILD_CHUNKS,
                repairable=True,
            )
        )
    return findings


def _rebuild_chunks(paths: CollectionPaths, moved: list[str]) -> tuple[int, list[str]]:
    """The chunks table again: the readable chunks of stored documents kept, the documents without
    any chunked again from their text with the settings recorded on them (not PDFs: their page
    boundaries are not stored). A damaged chunks file is moved aside first."""
    documents = read_table(paths.documents, DOCUMENTS)
    try:
        kept = read_table(paths.chunks, CHUNKS) if paths.chunks.exists() else CHUNKS.empty()
    except TableSchemaError:
        moved.append(str(_move_aside(paths, paths.chunks)))
        kept = CHUNKS.empty()
    kept = kept.filter(pl.col("doc_id").is_in(documents["doc_id"].implode()))
    chunked = set(kept["doc_id"].unique().to_list())
    rows, skipped, rebuilt = [], [], 0
    for document in documents.filter(~pl.col("doc_id").is_in(list(chunked))).iter_rows(named=True):
        if document["content_type"] == "application/pdf":
            skipped.append(document["doc_id"])
            continue
        chunker = Chunker.from_label(document["chunker"])
        text = document["text"]
        for span in chunk_document(text, chunker.chunk_size, chunker.overlap):
            piece = text[span.start : span.end]
            rows.append(
                {
                    "chunk_id": chunk_id_for(document["doc_id"], span.ordinal),
                    "doc_id": document["doc_id"],
                    "ordinal": span.ordinal,
                    "page": span.page,
                    "char_start": span.start,
                    "char_end": span.end,
                    "text": piece,
                    "text_sha256": sha256_hex(piece.encode()),
                }
            )
        rebuilt += 1
    order = documents.select("doc_id").with_row_index("document_order")
    chunks = (
        pl.concat([kept, pl.DataFrame(rows, schema=CHUNKS.schema)])
        .join(order, on="doc_id")
        .sort("document_order", "ordinal")
        .drop("document_order")
    )
    write_table(chunks, paths.chunks, CHUNKS)
    return rebuilt, skipped


def _move_aside(paths: CollectionPaths, path: Path) -> Path:
    """A damaged file kept under the collection's damaged/ folder, stamped with the time."""
    folder = paths.root / "damaged"
    folder.mkdir(exist_ok=True)
    target = folder / f"{path.stem}-{datetime.now(UTC):%Y%m%dT%H%M%S%f}{path.suffix}"
    path.rename(target)
    return target
