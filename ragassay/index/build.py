"""Building a collection's index: chunk embeddings through the embedding cache, BM25 over chunks and
over whole documents, all written into a staging folder that is swapped in whole with its
manifest, so readers see the old index or the new one, never a mix."""

from __future__ import annotations

import hashlib
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
from pydantic import BaseModel

from ragassay.errors import InconsistentCollection
from ragassay.ingest.documents import index_input_digest
from ragassay.progress import ProgressReporter
from ragassay.search.dense import Embedder, EmbeddingModelSpec, resolve_model
from ragassay.search.lexical import STEMMER_LANGUAGE, STOPWORDS, LexicalIndex
from ragassay.store.schemas import embeddings_spec
from ragassay.store.tables import read_table, write_json, write_table
from ragassay.store.workspace import (
    remove_leftovers,
    INDEX_FORMAT_VERSION,
    CollectionPaths,
    collection_paths,
    load_chunks,
    load_documents,
    models_dir,
)


class IndexReport(BaseModel):
    """What one index build did and cost."""

    collection: str
    chunks: int
    embedding_model_id: str
    embedded: int
    reused_embeddings: int
    index_digest: str
    seconds_embedding: float
    seconds_bm25: float


@dataclass(frozen=True)
class IndexInputs:
    """What an index is built from: the collection's tables and the embedding model."""

    paths: CollectionPaths
    documents: pl.DataFrame
    chunks: pl.DataFrame
    embedding_model: str
    spec: EmbeddingModelSpec


def read_index_inputs(home: Path, collection: str, embedding_model: str) -> IndexInputs:
    """The collection's documents (with text) and chunks, and the embedding model resolved offline."""
    paths = collection_paths(home, collection)
    spec = resolve_model(embedding_model, models_dir(home))
    # Under the write lock: never the chunks of one ingest beside the documents of another.
    with paths.write_lock():
        documents, chunks = load_documents(paths, with_text=True), load_chunks(paths)
    check_consistent(paths.name, documents, chunks)
    return IndexInputs(paths, documents, chunks, embedding_model, spec)


def check_consistent(collection: str, documents: pl.DataFrame, chunks: pl.DataFrame) -> None:
    """InconsistentCollection when chunks belong to no document (an ingest killed between its two
    writes): an index built on them would fail every search. The next ingest repairs it."""
    orphans = set(chunks["doc_id"].unique().to_list()) - set(documents["doc_id"].to_list())
    if orphans:
        raise InconsistentCollection(
            f"collection {collection!r} has chunks of {len(orphans)} documents it does not hold (e.g. {sorted(orphans)[0]!r}); "
            "an ingest was interrupted: run `ragassay ingest` on the collection again, which repairs it"
        )


@dataclass(frozen=True)
class Embedded:
    """Texts embedded now, texts taken from the cache, the vector width, and the seconds it took."""

    embedded: int
    reused: int
    dimension: int
    seconds: float


def embed_chunks(paths: CollectionPaths, chunks: pl.DataFrame, embedder: Embedder, batch_size: int) -> Embedded:
    """Embed the chunk texts the cache lacks for this model, and prune the cache to current texts.

    The cache holds one vector width: rows of a model with another width are dropped.
    """
    started = time.perf_counter()
    spec = embedder.spec
    texts = chunks.select("text_sha256", "text").unique("text_sha256", keep="first", maintain_order=True)
    cache = _read_cache(paths)
    cached = cache.filter(pl.col("model_id") == spec.model_id) if cache is not None else None
    missing = texts.join(cached.select("text_sha256"), on="text_sha256", how="anti") if cached is not None else texts
    with ProgressReporter(f"embedding {missing.height} chunks", total=missing.height) as progress:
        vectors = embedder.embed(missing["text"].to_list(), batch_size, progress)
    if missing.height:
        dimension = vectors.shape[1]
    elif cached is not None:
        dimension = cached.schema["vector"].size
    else:
        dimension = spec.dimension or 0
    new_rows = pl.DataFrame(
        {
            "text_sha256": missing["text_sha256"],
            "model_id": [spec.model_id] * missing.height,
            "vector": pl.Series("vector", vectors.reshape(missing.height, dimension), dtype=pl.Array(pl.Float32, dimension)),
        }
    )
    kept = (
        cache.filter(pl.col("text_sha256").is_in(texts["text_sha256"].implode()))
        if cache is not None and cache.schema["vector"].size == dimension
        else new_rows.clear()
    )
    if missing.height or cache is None or kept.height != cache.height:
        with paths.write_lock():
            write_table(pl.concat([kept, new_rows]), paths.embeddings, embeddings_spec(dimension))
    return Embedded(missing.height, texts.height - missing.height, dimension, time.perf_counter() - started)


def _read_cache(paths: CollectionPaths) -> pl.DataFrame | None:
    if not paths.embeddings.exists():
        return None
    dimension = pl.read_parquet_schema(paths.embeddings)["vector"].size
    return read_table(paths.embeddings, embeddings_spec(dimension))


@dataclass(frozen=True)
class Staged:
    """A staging folder holding the new BM25 indexes, and the seconds building them took."""

    folder: Path
    seconds: float


def build_bm25_indexes(inputs: IndexInputs) -> Staged:
    """BM25 over the chunk texts and over whole document texts, each in table order, written into
    a new staging folder."""
    started = time.perf_counter()
    staging = staging_folder(inputs.paths)
    LexicalIndex.build(inputs.chunks["text"].to_list()).save(staging / "bm25")
    LexicalIndex.build(inputs.documents["text"].to_list()).save(staging / "bm25_documents")
    return Staged(staging, time.perf_counter() - started)


def index_digest(input_digest: str, model_id: str) -> str:
    """Identity of an index: its input documents and chunks, embedding model and lexical settings."""
    key = f"{INDEX_FORMAT_VERSION}|{input_digest}|{model_id}|bm25s:{STOPWORDS}:{STEMMER_LANGUAGE}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def index_manifest(inputs: IndexInputs, dimension: int, built_at: datetime) -> dict:
    """What the manifest records: sizes, the digests that identify the index, the models used."""
    input_digest = index_input_digest(inputs.documents, inputs.chunks)
    return {
        "built_at": built_at.isoformat(),
        "chunks": inputs.chunks.height,
        "documents": inputs.documents.height,
        "input_digest": input_digest,
        "index_digest": index_digest(input_digest, inputs.spec.model_id),
        "embedding_model": inputs.embedding_model,
        "embedding_model_id": inputs.spec.model_id,
        "dimension": dimension,
        "lexical": {"stopwords": STOPWORDS, "stemmer": STEMMER_LANGUAGE},
    }


def publish_index(paths: CollectionPaths, staging: Path, manifest: dict) -> None:
    """Write the manifest into the staging folder, then swap the staging folder in whole."""
    write_json(staging / "manifest.json", {"format_version": INDEX_FORMAT_VERSION, **manifest})
    with paths.write_lock():
        _swap_in(staging, paths.index_dir)
        remove_leftovers(paths.root, keep=staging)


def staging_folder(paths: CollectionPaths) -> Path:
    return paths.root / f".index-{datetime.now(timezone.utc):%Y%m%dT%H%M%S%f}"


def _swap_in(staging: Path, target: Path) -> None:
    """Replace target by staging; readers see the old or the new index, never a mix of files."""
    retired = target.with_name(f".{target.name}-retired")
    shutil.rmtree(retired, ignore_errors=True)
    if target.exists():
        target.rename(retired)
    staging.rename(target)
    shutil.rmtree(retired, ignore_errors=True)
