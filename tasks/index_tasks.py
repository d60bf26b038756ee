"""Prefect tasks of indexing: embed chunks (through the cache), build BM25, publish the index."""

from __future__ import annotations

import hashlib
import shutil
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from ragassay.workspace import INDEX_FORMAT_VERSION, CollectionPaths
from tasks.dense import EmbeddingModelSpec, embed_texts
from tasks.lexical import STEMMER_LANGUAGE, STOPWORDS, LexicalIndex
from tasks.progress import ProgressReporter
from tasks.schemas import embeddings_spec
from tasks.tables import read_table, write_json, write_table


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


@task(name="embed-chunks", cache_policy=NO_CACHE)
def embed_chunks(paths: CollectionPaths, chunks: pl.DataFrame, spec: EmbeddingModelSpec, batch_size: int) -> tuple[int, int, int]:
    """Embed the chunk texts the cache lacks for this model, and prune the cache to current texts.

    The cache holds one vector width: rows of a model with another width are dropped.
    Returns (texts embedded now, texts taken from the cache, vector width).
    """
    texts = chunks.select("text_sha256", "text").unique("text_sha256", keep="first", maintain_order=True)
    cache = _read_cache(paths)
    cached = cache.filter(pl.col("model_id") == spec.model_id) if cache is not None else None
    missing = texts.join(cached.select("text_sha256"), on="text_sha256", how="anti") if cached is not None else texts
    with ProgressReporter(f"embedding {missing.height} chunks") as progress:
        vectors = embed_texts(spec, missing["text"].to_list(), batch_size, progress)
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
        write_table(pl.concat([kept, new_rows]), paths.embeddings, embeddings_spec(dimension))
    return missing.height, texts.height - missing.height, dimension


def _read_cache(paths: CollectionPaths) -> pl.DataFrame | None:
    if not paths.embeddings.exists():
        return None
    dimension = pl.read_parquet_schema(paths.embeddings)["vector"].size
    return read_table(paths.embeddings, embeddings_spec(dimension))


@task(name="build-bm25-indexes", cache_policy=NO_CACHE)
def build_bm25_indexes(documents: pl.DataFrame, chunks: pl.DataFrame, chunk_folder: Path, document_folder: Path) -> None:
    """BM25 over the chunk texts and over whole document texts, each in table order."""
    LexicalIndex.build(chunks["text"].to_list()).save(chunk_folder)
    LexicalIndex.build(documents["text"].to_list()).save(document_folder)


def index_digest(input_digest: str, model_id: str) -> str:
    """Identity of an index: its input documents and chunks, embedding model and lexical settings."""
    key = f"{INDEX_FORMAT_VERSION}|{input_digest}|{model_id}|bm25s:{STOPWORDS}:{STEMMER_LANGUAGE}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


@task(name="publish-index", cache_policy=NO_CACHE)
def publish_index(paths: CollectionPaths, staging: Path, manifest: dict) -> None:
    """Write the manifest into the staging folder, then swap the staging folder in whole."""
    write_json(staging / "manifest.json", {"format_version": INDEX_FORMAT_VERSION, **manifest})
    _swap_in(staging, paths.index_dir)


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
