"""Prefect tasks of indexing: read the collection, embed chunks (through the cache), build BM25,
publish the index."""

from __future__ import annotations

from datetime import datetime, timezone

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay.config import IndexConfig
from ragassay.index import build
from ragassay.index.build import Embedded, IndexInputs, IndexReport, Staged
from tasks.resources import worker_resources


@task(name="read-index-inputs", cache_policy=NO_CACHE)
def read_index_inputs(config: IndexConfig) -> IndexInputs:
    """The collection's documents and chunks, and the embedding model resolved offline."""
    return build.read_index_inputs(config.home, config.collection, config.embedding_model)


@task(name="embed-chunks", cache_policy=NO_CACHE)
def embed_chunks(inputs: IndexInputs, batch_size: int) -> Embedded:
    """Embed the chunk texts the embedding cache lacks, and prune the cache to current texts."""
    return build.embed_chunks(inputs.paths, inputs.chunks, worker_resources().embedders.get(inputs.spec), batch_size)


@task(name="build-bm25-indexes", cache_policy=NO_CACHE)
def build_bm25_indexes(inputs: IndexInputs) -> Staged:
    """BM25 over chunks and over whole documents, in a staging folder."""
    return build.build_bm25_indexes(inputs)


@task(name="publish-index", cache_policy=NO_CACHE)
def publish_index(config: IndexConfig, inputs: IndexInputs, embedded: Embedded, staged: Staged) -> IndexReport:
    """Write the manifest and swap the staged index in whole; the report of the build."""
    manifest = build.index_manifest(inputs, embedded.dimension, datetime.now(timezone.utc))
    build.publish_index(inputs.paths, staged.folder, manifest)
    return IndexReport(
        collection=config.collection,
        chunks=inputs.chunks.height,
        embedding_model_id=inputs.spec.model_id,
        embedded=embedded.embedded,
        reused_embeddings=embedded.reused,
        index_digest=manifest["index_digest"],
        seconds_embedding=round(embedded.seconds, 3),
        seconds_bm25=round(staged.seconds, 3),
    )
