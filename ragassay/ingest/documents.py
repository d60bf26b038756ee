"""Turning extracted documents into document and chunk rows, merging them into a collection, and
removing them. The merge itself is pure (tables in, tables out); store_documents and
delete_documents write the result. Rules of the merge:
- a document whose sha256 and chunker match the stored one is `unchanged` and left as it is;
- a stored document with the same id but other content (or chunker) is `replaced`: its old chunks
  are dropped and the new ones added, so no orphan chunk survives;
- any other document is `ingested` (new).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import polars as pl

from ragassay.errors import DocumentNotFound
from ragassay.ingest.chunking import chunk_document
from ragassay.ingest.extraction import ExtractedText
from ragassay.store.schemas import CHUNKS, DOCUMENTS
from ragassay.store.tables import write_table
from ragassay.store.workspace import CollectionPaths, load_chunks, load_documents, remove_leftovers

Outcome = Literal["ingested", "replaced", "unchanged"]


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


@dataclass
class MergeResult:
    documents: pl.DataFrame
    chunks: pl.DataFrame
    outcomes: dict[str, Outcome] = field(default_factory=dict)


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


# Documents whose rows are built as dicts before they become columns (merge_documents).
ROW_BATCH = 1024


def merge_documents(
    documents: pl.DataFrame,
    chunks: pl.DataFrame,
    incoming: list[IncomingDocument],
    chunker: Chunker,
    now: datetime,
) -> MergeResult:
    """Merge incoming documents into a collection's tables (see the module docstring)."""
    stored = {
        row["doc_id"]: (row["sha256"], row["chunker"])
        for row in documents.select("doc_id", "sha256", "chunker").iter_rows(named=True)
    }
    outcomes: dict[str, Outcome] = {}
    # Rows are gathered as dicts a batch of documents at a time and then kept as columns: a dict
    # per chunk costs several times its text, and a large ingest holds every chunk until written.
    document_frames: list[pl.DataFrame] = []
    chunk_frames: list[pl.DataFrame] = []
    new_documents: list[dict] = []
    new_chunks: list[dict] = []
    for position, document in enumerate(incoming, start=1):
        previous = stored.get(document.doc_id)
        if previous == (document.sha256, chunker.label):
            outcomes[document.doc_id] = "unchanged"
        else:
            if document.extracted is None:
                raise ValueError(f"document {document.doc_id} was not extracted but is not stored unchanged")
            outcomes[document.doc_id] = "replaced" if previous is not None else "ingested"
            document_row, chunk_rows = build_rows(document, chunker, now)
            new_documents.append(document_row)
            new_chunks.extend(chunk_rows)
        if len(new_documents) == ROW_BATCH or position == len(incoming):
            document_frames.append(pl.DataFrame(new_documents, schema=DOCUMENTS.schema))
            chunk_frames.append(pl.DataFrame(new_chunks, schema=CHUNKS.schema))
            new_documents, new_chunks = [], []
    changed = [doc_id for doc_id, outcome in outcomes.items() if outcome != "unchanged"]
    merged_documents = pl.concat([documents.filter(~pl.col("doc_id").is_in(changed)), *document_frames]).sort("doc_id")
    merged_chunks = pl.concat([chunks.filter(~pl.col("doc_id").is_in(changed)), *chunk_frames]).sort("doc_id", "ordinal")
    return MergeResult(merged_documents, merged_chunks, outcomes)


def remove_documents(
    documents: pl.DataFrame, chunks: pl.DataFrame, doc_ids: list[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The tables without the given documents and their chunks."""
    return (
        documents.filter(~pl.col("doc_id").is_in(doc_ids)),
        chunks.filter(~pl.col("doc_id").is_in(doc_ids)),
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
    return dict(zip(documents["doc_id"].to_list(), documents["sha256"].to_list()))


def store_documents(paths: CollectionPaths, incoming: list[IncomingDocument], chunker: Chunker, now: datetime) -> dict[str, str]:
    """Merge documents into the collection and write chunks, then documents, atomically. A
    collection is created by its first accepted document, never by rejections alone."""
    if not incoming and not paths.documents.exists():
        return {}
    # Read, merge and write under the collection's lock: a concurrent ingest waits, then merges
    # into what this one wrote (store/locks.py).
    with paths.write_lock():
        remove_leftovers(paths.root)
        documents = load_documents(paths, with_text=True)
        # Chunks of no document (an ingest killed between its two writes) are dropped: repaired here.
        chunks = load_chunks(paths).filter(pl.col("doc_id").is_in(documents["doc_id"].implode()))
        merged = merge_documents(documents, chunks, incoming, chunker, now)
        write_table(merged.chunks, paths.chunks, CHUNKS)
        write_table(merged.documents, paths.documents, DOCUMENTS)
    return dict(merged.outcomes)


def delete_documents(paths: CollectionPaths, doc_ids: list[str]) -> list[str]:
    """Remove documents and their chunks; nothing is removed when any id is unknown."""
    with paths.write_lock():
        documents = load_documents(paths, with_text=True)
        unknown = sorted(set(doc_ids) - set(documents["doc_id"].to_list()))
        if unknown:
            raise DocumentNotFound(f"collection {paths.name!r} has no documents {', '.join(unknown)}")
        kept_documents, kept_chunks = remove_documents(documents, load_chunks(paths), doc_ids)
        write_table(kept_chunks, paths.chunks, CHUNKS)
        write_table(kept_documents, paths.documents, DOCUMENTS)
    return sorted(set(doc_ids))
