"""The workspace on disk: where each collection's tables and indexes live, and loading them.

Layout under the workspace root ($RAGASSAY_HOME):
    models/<name>/                         embedding models assembled from installed packages
    collections/<name>/documents.parquet   one row per document (text included)
    collections/<name>/chunks.parquet      one row per chunk, spans into the document text
    collections/<name>/embeddings.parquet  embedding cache: (text_sha256, model_id) -> vector
    collections/<name>/beir/               queries.parquet and qrels.parquet of an imported BEIR set
    collections/<name>/golden.parquet      the collection's golden set
    collections/<name>/generation/         every generated candidate, accepted or discarded
    collections/<name>/index/              manifest.json, bm25/ (chunks) and bm25_documents/
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ragassay.config import COLLECTION_NAME
from ragassay.errors import CollectionNotFound, ConfigError, DocumentNotFound, IndexMissing
from tasks.dense import embed_query, resolve_model
from tasks.ingestion import index_input_digest, remove_documents
from tasks.lexical import LexicalIndex
from tasks.retrieval import SearchableCollection
from tasks.schemas import CHUNKS, DOCUMENTS, embeddings_spec
from tasks.tables import read_table, read_table_or_empty, write_table

INDEX_FORMAT_VERSION = 2


@dataclass(frozen=True)
class CollectionPaths:
    """Every file of one collection."""

    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def documents(self) -> Path:
        return self.root / "documents.parquet"

    @property
    def chunks(self) -> Path:
        return self.root / "chunks.parquet"

    @property
    def embeddings(self) -> Path:
        return self.root / "embeddings.parquet"

    @property
    def beir_queries(self) -> Path:
        return self.root / "beir" / "queries.parquet"

    @property
    def beir_qrels(self) -> Path:
        return self.root / "beir" / "qrels.parquet"

    @property
    def golden(self) -> Path:
        return self.root / "golden.parquet"

    @property
    def generation_log(self) -> Path:
        return self.root / "generation" / "candidates.parquet"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def index_manifest(self) -> Path:
        return self.index_dir / "manifest.json"

    @property
    def bm25_dir(self) -> Path:
        return self.index_dir / "bm25"

    @property
    def bm25_documents_dir(self) -> Path:
        return self.index_dir / "bm25_documents"


def models_dir(home: Path) -> Path:
    return home / "models"


def collection_paths(home: Path, name: str, must_exist: bool = True) -> CollectionPaths:
    """The paths of a collection; CollectionNotFound (listing those that exist) when it is missing."""
    if not COLLECTION_NAME.match(name):
        raise ConfigError(f"collection name {name!r} must be 1-64 letters, digits, '_', '.' or '-'")
    paths = CollectionPaths(home / "collections" / name)
    if must_exist and not paths.documents.exists():
        known = ", ".join(list_collections(home)) or "none"
        raise CollectionNotFound(f"no collection {name!r} in {home} (collections: {known})")
    return paths


def list_collections(home: Path) -> list[str]:
    root = home / "collections"
    if not root.exists():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "documents.parquet").exists())


def delete_collection(home: Path, name: str) -> None:
    """Remove a collection and everything in it."""
    shutil.rmtree(collection_paths(home, name).root)


def load_documents(paths: CollectionPaths, with_text: bool = False) -> pl.DataFrame:
    columns = [c for c in DOCUMENTS.schema if with_text or c != "text"]
    return read_table(paths.documents, DOCUMENTS, columns=columns) if paths.documents.exists() else DOCUMENTS.empty().select(columns)


def load_chunks(paths: CollectionPaths) -> pl.DataFrame:
    return read_table_or_empty(paths.chunks, CHUNKS)


def read_manifest(paths: CollectionPaths) -> dict | None:
    if not paths.index_manifest.exists():
        return None
    return json.loads(paths.index_manifest.read_text())


def load_searchable(home: Path, name: str, need_dense: bool) -> SearchableCollection:
    """Load a collection for search, refusing an index that is missing or older than the chunks."""
    paths = collection_paths(home, name)
    manifest = read_manifest(paths)
    if manifest is None or manifest.get("format_version") != INDEX_FORMAT_VERSION:
        raise IndexMissing(f"collection {name!r} is not indexed; run `ragassay index --collection {name}`")
    chunks = load_chunks(paths)
    documents = load_documents(paths)
    if index_input_digest(documents, chunks) != manifest["input_digest"]:
        raise IndexMissing(
            f"collection {name!r} changed since it was indexed; run `ragassay index --collection {name}`"
        )
    doc_position = {doc_id: i for i, doc_id in enumerate(documents["doc_id"].to_list())}
    dense, query_embedder = None, None
    if need_dense:
        spec = resolve_model(manifest["embedding_model"], models_dir(home))
        dense = _dense_matrix(paths, chunks, manifest["embedding_model_id"], manifest["dimension"])
        query_embedder = lambda query: embed_query(spec, query)  # noqa: E731
    return SearchableCollection(
        name=name,
        chunk_ids=chunks["chunk_id"].to_list(),
        chunk_doc=np.array([doc_position[d] for d in chunks["doc_id"].to_list()], dtype=np.int64),
        chunk_start=chunks["char_start"].to_numpy(),
        chunk_end=chunks["char_end"].to_numpy(),
        chunk_page=chunks["page"].to_list(),
        chunk_text=chunks["text"].to_list(),
        doc_ids=documents["doc_id"].to_list(),
        doc_titles=documents["title"].to_list(),
        doc_content_types=documents["content_type"].to_list(),
        doc_source_paths=documents["source_path"].to_list(),
        lexical=LexicalIndex.load(paths.bm25_dir, size=chunks.height),
        document_lexical=LexicalIndex.load(paths.bm25_documents_dir, size=documents.height),
        dense=dense,
        embed_query=query_embedder,
        embedding_model_id=manifest["embedding_model_id"],
    )


def _dense_matrix(paths: CollectionPaths, chunks: pl.DataFrame, model_id: str, dimension: int) -> np.ndarray:
    """The chunk embeddings in chunk order, taken from the embedding cache."""
    cache = read_table(paths.embeddings, embeddings_spec(dimension)).filter(pl.col("model_id") == model_id)
    aligned = chunks.select("text_sha256").join(cache, on="text_sha256", how="left", maintain_order="left")
    if aligned["vector"].null_count():
        raise IndexMissing(f"collection {paths.name!r} lacks embeddings; run `ragassay index --collection {paths.name}`")
    return aligned["vector"].to_numpy().astype(np.float32, copy=False).reshape(chunks.height, dimension)


def delete_documents(paths: CollectionPaths, doc_ids: list[str]) -> list[str]:
    """Remove documents and their chunks; nothing is removed when any id is unknown."""
    documents = load_documents(paths, with_text=True)
    unknown = sorted(set(doc_ids) - set(documents["doc_id"].to_list()))
    if unknown:
        raise DocumentNotFound(f"collection {paths.name!r} has no documents {', '.join(unknown)}")
    kept_documents, kept_chunks = remove_documents(documents, load_chunks(paths), doc_ids)
    write_table(kept_chunks, paths.chunks, CHUNKS)
    write_table(kept_documents, paths.documents, DOCUMENTS)
    return sorted(set(doc_ids))
