"""Opening an indexed collection for search, and the explicit cache of opened collections.

A collection is opened only when its index is current: the manifest's input digest must match
the documents and chunks on disk, so a search never reads an index older than its chunks."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from ragassay.environment import models_dir
from ragassay.errors import IndexMissing
from ragassay.ingest.documents import check_consistent, index_input_digest
from ragassay.search.dense import Embedders
from ragassay.search.lexical import LexicalIndex
from ragassay.search.ranking import SearchableCollection
from ragassay.store.schemas import CHUNKS, embeddings_spec
from ragassay.store.tables import read_row_groups, read_table
from ragassay.store.workspace import (
    INDEX_FORMAT_VERSION,
    CollectionPaths,
    collection_paths,
    load_chunks,
    load_documents,
    read_manifest,
)


def check_index(home: Path, name: str) -> None:
    """Raise what opening the collection for search would (IndexMissing, InconsistentCollection,
    TableDamaged, or the BM25 files' own error), with an embedding for every chunk, without
    loading the embedding model."""
    load_searchable(home, name, need_dense=False, embedders=None)
    paths = collection_paths(home, name)
    manifest = read_manifest(paths)
    _dense_matrix(paths, load_chunks(paths, with_text=False), manifest["embedding_model_id"], manifest["dimension"])


def load_searchable(home: Path, name: str, need_dense: bool, embedders: Embedders | None) -> SearchableCollection:
    """Load a collection for search, refusing an index that is missing or older than the chunks."""
    paths = collection_paths(home, name)
    manifest = read_manifest(paths)
    if manifest is None or manifest.get("format_version") != INDEX_FORMAT_VERSION:
        raise IndexMissing(f"collection {name!r} is not indexed; run `ragassay index --collection {name}`")
    # Texts stay on disk until a snippet, an answer or the reranker asks for one (ChunkTexts):
    # evaluation ranks by index alone, and a large collection's texts are most of its memory.
    chunks = load_chunks(paths, with_text=False)
    documents = load_documents(paths)
    if index_input_digest(documents, chunks) != manifest["input_digest"]:
        raise IndexMissing(
            f"collection {name!r} changed since it was indexed; run `ragassay index --collection {name}`"
        )
    # An index over fewer chunks than documents (the chunks table lost, then indexed by an older
    # ragassay) finds nothing for the documents without chunks: every metric over it would be a
    # false 0, so it is refused (check_consistent says how to repair it).
    check_consistent(name, documents, chunks)
    doc_position = {doc_id: i for i, doc_id in enumerate(documents["doc_id"].to_list())}
    dense, embed_queries = None, None
    if need_dense:
        embedder = embedders.indexed(manifest, models_dir(), name)
        dense = _dense_matrix(paths, chunks, manifest["embedding_model_id"], manifest["dimension"])
        embed_queries = embedder.embed
    return SearchableCollection(
        name=name,
        chunk_ids=chunks["chunk_id"].to_list(),
        chunk_doc=np.array([doc_position[d] for d in chunks["doc_id"].to_list()], dtype=np.int64),
        chunk_start=chunks["char_start"].to_numpy(),
        chunk_end=chunks["char_end"].to_numpy(),
        chunk_page=chunks["page"].to_list(),
        chunk_text=ChunkTexts(paths, chunks["chunk_id"]),
        doc_ids=documents["doc_id"].to_list(),
        doc_id_rank=documents["doc_id"].rank("ordinal").to_numpy() - 1,
        doc_titles=documents["title"].to_list(),
        doc_content_types=documents["content_type"].to_list(),
        doc_source_paths=documents["source_path"].to_list(),
        lexical=LexicalIndex.load(paths.bm25_dir, size=chunks.height),
        document_lexical=LexicalIndex.load(paths.bm25_documents_dir, size=documents.height),
        dense=dense,
        embed_queries=embed_queries,
        embedding_model_id=manifest["embedding_model_id"],
    )


class ChunkTexts(Sequence[str]):
    """A collection's chunk texts in index order, read from its chunks table on first use and then
    kept as one Arrow column (a Python string per chunk would cost several times the text).
    Reading checks that the table still holds the chunks the index was opened with, in the same
    order, so a re-ingest between opening and reading cannot pair a hit with another text."""

    def __init__(self, paths: CollectionPaths, chunk_ids: pl.Series):
        self._paths, self._chunk_ids = paths, chunk_ids
        self._texts: pl.Series | None = None

    def _loaded(self) -> pl.Series:
        if self._texts is None:
            chunks = read_table(self._paths.chunks, CHUNKS, columns=["chunk_id", "text"])
            if not chunks["chunk_id"].equals(self._chunk_ids):
                raise IndexMissing(
                    f"collection {self._paths.name!r} changed since it was opened for search; search again"
                )
            self._texts = chunks["text"]
        return self._texts

    def __getitem__(self, position):
        return self._loaded()[int(position)]

    def __iter__(self):
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._chunk_ids)


def _dense_matrix(paths: CollectionPaths, chunks: pl.DataFrame, model_id: str, dimension: int) -> np.ndarray:
    """The chunk embeddings in chunk order, taken from the embedding cache a row group at a time
    into the matrix: the cache is as large as the matrix, and joining it whole held both and more
    (+300 MB for a 214 MB matrix, 16x SciFact)."""
    matrix = np.empty((chunks.height, dimension), dtype=np.float32)
    filled = np.zeros(chunks.height, dtype=bool)
    wanted = chunks.select("text_sha256").with_row_index("row")
    if paths.embeddings.exists():
        for group in read_row_groups(paths.embeddings, embeddings_spec(dimension)):
            group = group.filter(pl.col("model_id") == model_id).with_row_index("at")
            # Several chunks may share a text, and so one vector.
            matches = wanted.join(group.select("text_sha256", "at"), on="text_sha256", how="inner")
            if matches.height:
                vectors = group["vector"].to_numpy().reshape(group.height, dimension)
                rows = matches["row"].to_numpy()
                matrix[rows] = vectors[matches["at"].to_numpy()]
                filled[rows] = True
    if not filled.all():
        raise IndexMissing(
            f"collection {paths.name!r} lacks embeddings; run `ragassay index --collection {paths.name}`"
        )
    return matrix


class OpenCollections:
    """Collections opened for search by one owner (a command, a worker process), each kept while
    it is unchanged on disk. The key is what a collection was loaded from (index digest, the
    tables' sizes and times): an evaluation that searches many times loads each index once, and a
    re-ingested or re-indexed collection is loaded (and checked) again. One version of a
    collection is kept: opened with its dense vectors, it serves lexical searches too, and opening
    it for dense search after a lexical one loads it again, with vectors, in its place."""

    def __init__(self, embedders: Embedders):
        self.embedders = embedders
        self._opened: dict[tuple, SearchableCollection] = {}
        # Threads of one process (a thread runner of several workers) open a collection once.
        self._lock = threading.Lock()

    def open(self, home: Path, name: str, need_dense: bool) -> SearchableCollection:
        paths = collection_paths(home, name)
        manifest = read_manifest(paths) or {}
        tables = tuple(
            (p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None for p in (paths.documents, paths.chunks)
        )
        key = (home, name, str(manifest.get("index_digest")), tables)
        with self._lock:
            opened = self._opened.get(key)
            if opened is None or (need_dense and opened.dense is None):
                # An older version of the same collection, or this one without vectors, is dropped:
                # an evaluation of lexical and dense configurations holds its indexes once.
                for stale in [k for k in self._opened if k[:2] == (home, name)]:
                    del self._opened[stale]
                opened = self._opened[key] = load_searchable(home, name, need_dense, self.embedders)
        return opened
