"""Turning extracted documents into document and chunk rows, merging them into a collection, and
removing them. Each part of the documents is staged as rows on disk (stage_part); store_staged then
copies the stored tables and the parts a row group at a time into new tables, so memory holds one
batch, not the collection. Tables keep documents in the order they were stored (new and replaced
ones after the rest), chunks grouped by document in the same order; nothing depends on the order
but the index digest, and search breaks ties by doc_id. Rules of the merge (merge_outcomes):
- a document whose sha256 and chunker match the stored one is `unchanged` and left as it is;
- a stored document with the same id but other content (or chunker), or without any chunks (its
  chunks lost with a damaged or deleted chunks table), is `replaced`: its old chunks are dropped
  and the new ones added, so no orphan chunk survives and no document is left without chunks;
- any other document is `ingested` (new).
"""

from __future__ import annotations

import hashlib
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from ragassay.errors import CollectionDeleted, DocumentNotFound, InconsistentCollection
from ragassay.fields import document_id, shown
from ragassay.ingest.chunking import chunk_document
from ragassay.ingest.extraction import ExtractedText
from ragassay.store.schemas import CHUNKS, DOCUMENTS, TableSpec
from ragassay.store.tables import read_row_groups, read_table, write_table, write_table_in_groups
from ragassay.store.workspace import CollectionPaths, load_documents, remove_leftovers


@dataclass(frozen=True)
class IncomingDocument:
    """A document ready to be stored: identity, provenance and extracted text."""

    doc_id: str
    source_path: str
    raw_bytes: int
    sha256: str
    # None: the collection already holds this content with these chunk settings (not extracted again).
    extracted: ExtractedText | None


@dataclass(frozen=True)
class Chunker:
    """Chunking settings and the label recorded on each document they produced."""

    chunk_size: int
    overlap: int

    @property
    def label(self) -> str:
        return f"spans:{self.chunk_size}/{self.overlap}"

    @classmethod
    def from_label(cls, label: str) -> Chunker:
        """The settings a document's recorded label names (`spans:1200/150`)."""
        size, overlap = label.removeprefix("spans:").split("/")
        return cls(int(size), int(overlap))


# What a part lists about each accepted document of its batch: the text waits on disk. staged is
# False where the document was not extracted, as the collection holds these bytes with these
# chunk settings. A table, not objects: Prefect walks every object a task is given.
STAGED_DOCUMENTS = pl.Schema(
    {"doc_id": pl.String, "source_path": pl.String, "sha256": pl.String, "staged": pl.Boolean, "truncated": pl.Boolean}
)


@dataclass(frozen=True)
class StagedPart:
    """A part of the incoming documents whose rows wait in two Parquet files until store_staged
    merges them in. Only the documents listed are taken from the files (combine_extractions drops
    an id an earlier batch has)."""

    documents_path: Path
    chunks_path: Path
    documents: pl.DataFrame  # STAGED_DOCUMENTS, in the batch's order


@dataclass(frozen=True)
class IngestStaging:
    """Where one ingest's parts wait (a hidden folder in the collection's, on the workspace every
    worker shares), and the time recorded as each of its documents' ingested_at."""

    folder: Path
    started_at: datetime

    @classmethod
    def new(cls, paths: CollectionPaths, now: datetime) -> IngestStaging:
        """The staging folder, made now: a part is only ever written into this folder, never into
        a new one of the same name, so a collection deleted while the ingest runs takes the folder
        with it and the ingest can tell (stage_part, store_staged)."""
        folder = paths.root / f".ingest-{uuid.uuid4().hex}"
        folder.mkdir(parents=True)
        return cls(folder, now)

    def deleted(self) -> CollectionDeleted:
        """What an ingest whose collection (the staging folder's parent) was deleted raises."""
        return CollectionDeleted(
            f"collection {self.folder.parent.name!r} was deleted while this ingest ran (its staged documents went with it): "
            "nothing was stored; run the ingest again to create the collection anew"
        )


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def chunk_id_for(doc_id: str, ordinal: int) -> str:
    return f"{doc_id}#{ordinal}"


def build_rows(document: IncomingDocument, chunker: Chunker, now: datetime) -> tuple[dict, list[dict]]:
    """The document row and chunk rows of one incoming document."""
    text = document.extracted.text
    spans = chunk_document(text, chunker.chunk_size, chunker.overlap, document.extracted.page_starts)
    chunk_rows = [
        {
            "chunk_id": chunk_id_for(document.doc_id, span.ordinal),
            "doc_id": document.doc_id,
            "ordinal": span.ordinal,
            "page": span.page,
            "char_start": span.start,
            "char_end": span.end,
            "text": text[span.start : span.end],
            "text_sha256": sha256_hex(text[span.start : span.end].encode()),
        }
        for span in spans
    ]
    document_row = {
        "doc_id": document.doc_id,
        "source_path": document.source_path,
        "content_type": document.extracted.content_type,
        "bytes": document.raw_bytes,
        "characters": len(text),
        "sha256": document.sha256,
        "title": document.extracted.title,
        "ingested_at": now,
        "chunk_count": len(chunk_rows),
        "truncated": document.extracted.truncated,
        "chunker": chunker.label,
        "text": text,
    }
    return document_row, chunk_rows


# Documents whose rows are built as dicts before they become columns (stage_part).
ROW_BATCH = 1024


def stage_part(staging: IngestStaging, incoming: list[IncomingDocument], chunker: Chunker) -> StagedPart:
    """Write the rows of a batch's extracted documents into the staging folder, in the batch's
    order (chunks by document, then ordinal). Documents not extracted are listed but have no rows."""
    # Rows are gathered as dicts a part of the documents at a time and then kept as columns: a dict
    # per chunk costs several times its text.
    document_frames, chunk_frames = [DOCUMENTS.empty()], [CHUNKS.empty()]
    extracted = [document for document in incoming if document.extracted is not None]
    for first in range(0, len(extracted), ROW_BATCH):
        rows = [build_rows(document, chunker, staging.started_at) for document in extracted[first : first + ROW_BATCH]]
        document_frames.append(pl.DataFrame([document_row for document_row, _ in rows], schema=DOCUMENTS.schema))
        chunk_frames.append(
            pl.DataFrame([chunk for _, chunk_rows in rows for chunk in chunk_rows], schema=CHUNKS.schema)
        )
    if not staging.folder.is_dir():
        raise staging.deleted()
    name = uuid.uuid4().hex
    part = StagedPart(
        documents_path=staging.folder / f"{name}.documents.parquet",
        chunks_path=staging.folder / f"{name}.chunks.parquet",
        documents=pl.DataFrame(
            [
                (
                    d.doc_id,
                    d.source_path,
                    d.sha256,
                    d.extracted is not None,
                    d.extracted is not None and d.extracted.truncated,
                )
                for d in incoming
            ],
            schema=STAGED_DOCUMENTS,
            orient="row",
        ),
    )
    try:
        write_table(pl.concat(chunk_frames), part.chunks_path, CHUNKS)
        write_table(pl.concat(document_frames), part.documents_path, DOCUMENTS)
    except FileNotFoundError:
        if staging.folder.is_dir():
            raise
        raise staging.deleted() from None
    return part


def merge_outcomes(
    stored: pl.DataFrame, parts: list[StagedPart], chunker: Chunker, chunked: pl.Series | None = None
) -> pl.DataFrame:
    """Each listed document's outcome (doc_id, outcome) against the stored documents (doc_id,
    sha256, chunker; see the module docstring), in the parts' order. chunked: the ids of the
    stored documents that have chunks (all when None); one without is replaced, never unchanged."""
    listed = pl.concat([STAGED_DOCUMENTS.to_frame(), *[part.documents for part in parts]])
    before = stored.select("doc_id", stored_sha256="sha256", stored_chunker="chunker")
    has_chunks = pl.lit(True) if chunked is None else pl.col("doc_id").is_in(chunked.implode())
    judged = listed.join(before, on="doc_id", how="left", maintain_order="left").with_columns(
        outcome=pl.when(
            (pl.col("stored_sha256") == pl.col("sha256")) & (pl.col("stored_chunker") == chunker.label) & has_chunks
        )
        .then(pl.lit("unchanged"))
        .when(pl.col("stored_sha256").is_null())
        .then(pl.lit("ingested"))
        .otherwise(pl.lit("replaced"))
    )
    lost = judged.filter((pl.col("outcome") != "unchanged") & ~pl.col("staged"))
    if lost.height:
        raise ValueError(f"document {lost['doc_id'][0]} was not extracted but is not stored unchanged")
    return judged.select("doc_id", "outcome")


def store_staged(
    paths: CollectionPaths, staging: IngestStaging, parts: list[StagedPart], chunker: Chunker
) -> pl.DataFrame:
    """Merge staged parts into the collection, then remove the staging folder. Chunks are written,
    then documents, each a row group at a time from the stored table and the parts into a new file
    renamed over the old one, so memory holds a few thousand rows, not the collection. Stored
    documents keep their place; new and replaced ones follow, in the order of their parts. A
    collection is created by its first accepted document, never by rejections alone. Returns each
    listed document's outcome (doc_id, outcome)."""
    try:
        # Read, merge and write under the collection's lock: a concurrent ingest waits, then merges
        # into what this one wrote (store/locks.py).
        with paths.write_lock():
            # A part missing from the staging folder went with a collection deleted since it was
            # written (delete_collection takes this lock): merging what is left would report
            # documents as stored that are not.
            if not all(path.exists() for part in parts for path in (part.documents_path, part.chunks_path)):
                raise staging.deleted()
            remove_leftovers(paths.root, keep=staging.folder)
            stored = load_documents(paths)
            outcomes = merge_outcomes(stored, parts, chunker, chunked_documents(paths))
            stored_ids = stored["doc_id"]
            changed = outcomes.filter(pl.col("outcome") != "unchanged")["doc_id"]
            if changed.len() or _has_orphan_chunks(paths, stored_ids):
                # A part's rows of the documents it lists as changed; it may hold rows of an id an
                # earlier part has (combine_extractions), which are not taken.
                new_rows = [(part, pl.col("doc_id").is_in(_taken_from(part, changed).implode())) for part in parts]
                kept_documents = ~pl.col("doc_id").is_in(changed.implode())
                # Chunks of no document (an ingest killed between its two writes) are dropped: repaired here.
                kept_chunks = kept_documents & pl.col("doc_id").is_in(stored_ids.implode())
                write_table_in_groups(
                    _rows(
                        CHUNKS, [(paths.chunks, kept_chunks), *[(part.chunks_path, taken) for part, taken in new_rows]]
                    ),
                    paths.chunks,
                    CHUNKS,
                )
                write_table_in_groups(
                    _rows(
                        DOCUMENTS,
                        [
                            (paths.documents, kept_documents),
                            *[(part.documents_path, taken) for part, taken in new_rows],
                        ],
                    ),
                    paths.documents,
                    DOCUMENTS,
                )
    finally:
        shutil.rmtree(staging.folder, ignore_errors=True)
    return outcomes


def _taken_from(part: StagedPart, changed: pl.Series) -> pl.Series:
    """The ids of a part's documents whose staged rows go into the collection."""
    return part.documents.filter(pl.col("staged") & pl.col("doc_id").is_in(changed.implode()))["doc_id"]


# Rows in a row group of a collection's documents and chunks tables as ingest writes them: a
# merge holds about one group at a time.
GROUP_ROWS = 2048


def _rows(spec: TableSpec, sources: list[tuple[Path, pl.Expr]]) -> Iterator[pl.DataFrame]:
    """The rows of each source table (those that exist) that pass its filter, in order, read a row
    group at a time and yielded in frames of about GROUP_ROWS rows."""
    pending: list[pl.DataFrame] = []
    rows = 0
    for path, keep in sources:
        if not path.exists():
            continue
        for group in read_row_groups(path, spec):
            pending.append(group.filter(keep))
            rows += pending[-1].height
            if rows >= GROUP_ROWS:
                yield pl.concat(pending)
                pending, rows = [], 0
    if pending:
        yield pl.concat(pending)


def _has_orphan_chunks(paths: CollectionPaths, stored_ids: pl.Series) -> bool:
    """Whether the chunks table holds chunks of no stored document."""
    if not paths.chunks.exists():
        return False
    chunk_documents = read_table(paths.chunks, CHUNKS, columns=["doc_id"])["doc_id"]
    return bool((~chunk_documents.is_in(stored_ids.implode())).any())


def check_consistent(collection: str, documents: pl.DataFrame, chunks: pl.DataFrame) -> None:
    """InconsistentCollection when chunks belong to no document (an ingest killed between its two
    writes): an index built on them would fail every search; or when documents have no chunks (the
    chunks table lost or damaged): an index built without them would find nothing, and every
    metric over it would read 0. The next ingest of the sources repairs both."""
    chunked = set(chunks["doc_id"].unique().to_list())
    stored = set(documents["doc_id"].to_list())
    orphans = chunked - stored
    if orphans:
        raise InconsistentCollection(
            f"collection {collection!r} has chunks of {len(orphans)} documents it does not hold (e.g. {sorted(orphans)[0]!r}); "
            "an ingest was interrupted: run `ragassay ingest` on the collection again, which repairs it"
        )
    unchunked = stored - chunked
    if unchunked:
        raise InconsistentCollection(
            f"collection {collection!r} holds {len(unchunked)} of its {len(stored)} documents without any chunks "
            f"(e.g. {sorted(unchunked)[0]!r}): its chunks table was lost or damaged; run `ragassay ingest` on the "
            "collection's sources again, which chunks them again, then `ragassay index`"
        )


def index_input_digest(documents: pl.DataFrame, chunks: pl.DataFrame) -> str:
    """Digest of what an index is built from, in order: documents (id, content digest, chunker)
    and chunks (id, text digest). Equal digests mean the same index input."""
    digest = hashlib.sha256()
    for doc_id, sha, chunker in documents.select("doc_id", "sha256", "chunker").iter_rows():
        digest.update(f"d\t{doc_id}\t{sha}\t{chunker}\n".encode())
    for chunk_id, text_sha in chunks.select("chunk_id", "text_sha256").iter_rows():
        digest.update(f"c\t{chunk_id}\t{text_sha}\n".encode())
    return digest.hexdigest()


def stored_digests(paths: CollectionPaths, chunker: Chunker) -> dict[str, str]:
    """{doc_id: sha256} of the documents stored with this chunker's settings: the files an ingest
    need not extract again when their bytes still have that digest (files.extract_documents)."""
    if not paths.documents.exists():
        return {}
    documents = load_documents(paths).filter(pl.col("chunker") == chunker.label)
    # A stored document always has chunks (a file without text is rejected): one without any lost
    # them (chunks.parquet deleted or rebuilt from a damaged copy), so it is extracted again.
    documents = documents.filter(pl.col("doc_id").is_in(chunked_documents(paths).implode()))
    return dict(zip(documents["doc_id"].to_list(), documents["sha256"].to_list()))


def chunked_documents(paths: CollectionPaths) -> pl.Series:
    """The ids of the documents that have chunks in the collection's chunks table."""
    chunks = read_table(paths.chunks, CHUNKS, columns=["doc_id"]) if paths.chunks.exists() else CHUNKS.empty()
    return chunks["doc_id"].unique()


def delete_documents(paths: CollectionPaths, doc_ids: list[str]) -> list[str]:
    """Remove documents and their chunks; nothing is removed when any id is unknown. Ids are
    compared in NFC, the form ingest stores them in."""
    doc_ids = [document_id(doc_id) for doc_id in doc_ids]
    with paths.write_lock():
        stored = load_documents(paths)["doc_id"]
        unknown = sorted(set(doc_ids) - set(stored.to_list()))
        if unknown:
            raise DocumentNotFound(f"collection {paths.name!r} has no documents {', '.join(map(shown, unknown))}")
        kept = ~pl.col("doc_id").is_in(pl.Series(doc_ids, dtype=pl.String).implode())
        write_table_in_groups(_rows(CHUNKS, [(paths.chunks, kept)]), paths.chunks, CHUNKS)
        write_table_in_groups(_rows(DOCUMENTS, [(paths.documents, kept)]), paths.documents, DOCUMENTS)
    return sorted(set(doc_ids))
