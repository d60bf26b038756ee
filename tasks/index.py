"""Prefect tasks of indexing: read the collection, embed chunks (through the cache), build BM25,
swap the index in."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay.config import IndexConfig
from ragassay.index import build, embedding
from ragassay.index import inputs as inputs_of_index
from ragassay.index.build import IndexReport, Staged
from ragassay.index.embedding import Embedded, EmbeddingWork
from ragassay.index.inputs import IndexInputs
from ragassay.progress import ProgressReporter
from ragassay.search.dense import EmbeddingModelSpec
from ragassay.store.workspace import CollectionPaths, collection_paths
from tasks.resources import worker_resources


def one_build_at_a_time(config: IndexConfig):
    """The collection's index-build lock, for the flow to hold while it builds (not a task: a lock
    is held by the flow's process, however its groups are spread)."""
    return collection_paths(config.home, config.collection).index_build_lock()


@task(name="read-index-inputs", cache_policy=NO_CACHE)
def read_index_inputs(config: IndexConfig) -> IndexInputs:
    """The collection's documents and chunks (a snapshot of its tables), and the embedding model
    resolved offline."""
    return inputs_of_index.read_index_inputs(config.home, config.collection, config.embedding_model)


@task(name="release-index-inputs", cache_policy=NO_CACHE)
def release_index_inputs(inputs: IndexInputs) -> None:
    """Remove the build's snapshot of the tables, whether the build was swapped in or failed."""
    inputs_of_index.release_index_inputs(inputs.snapshot)


@task(name="plan-embedding", cache_policy=NO_CACHE)
def plan_embedding(inputs: IndexInputs, chunks_per_task: int) -> EmbeddingWork:
    """The chunk texts the embedding cache lacks for the model, in groups of chunks_per_task."""
    return embedding.plan_embedding(inputs.paths, inputs.chunks, inputs.spec, chunks_per_task)


@task(name="embed-text-group", cache_policy=NO_CACHE)
def embed_text_group(
    spec: EmbeddingModelSpec, snapshot: CollectionPaths, group: pl.DataFrame, batch_size: int, part: Path, label: str
) -> Path:
    """Embed one group of texts (read from the build's snapshot) with this worker process's model;
    its rows go to part (in the collection's folder, which every worker sees, as it sees the
    snapshot), so only digests travel out and a path back."""
    with ProgressReporter(f"embedding {label}", total=group.height) as progress:
        rows = embedding.embed_group(worker_resources().embedders.get(spec), snapshot, group, batch_size, progress)
    return embedding.write_embedded_part(rows, part)


@task(name="store-embeddings", cache_policy=NO_CACHE)
def store_embeddings(inputs: IndexInputs, work: EmbeddingWork, parts: list[Path]) -> Embedded:
    """The new embedding cache: kept vectors and the groups' parts, read one at a time; then the
    parts are removed."""
    embedded = embedding.store_embeddings(
        inputs.paths, work, embedding.read_embedded_parts(parts), inputs.spec.dimension
    )
    shutil.rmtree(work.parts_folder, ignore_errors=True)
    return embedded


@task(name="build-bm25-indexes", cache_policy=NO_CACHE)
def build_bm25_indexes(inputs: IndexInputs) -> Staged:
    """BM25 over chunks and over whole documents, in a staging folder."""
    return build.build_bm25_indexes(inputs)


@task(name="swap-in-index", cache_policy=NO_CACHE)
def swap_in_index(config: IndexConfig, inputs: IndexInputs, embedded: Embedded, staged: Staged) -> IndexReport:
    """Write the manifest and swap the staged index in whole; the report of the build."""
    manifest = build.index_manifest(inputs, embedded.dimension, datetime.now(UTC))
    build.swap_in_index(inputs.paths, staged.folder, manifest)
    return build.index_report(inputs, embedded, staged, manifest)
