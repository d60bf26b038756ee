"""The index flow: embeddings (cached) and BM25 for one collection, published as one folder."""

from __future__ import annotations

from prefect import flow

from ragassay.config import IndexConfig
from ragassay.index.build import IndexReport
from tasks.index import build_bm25_indexes, embed_chunks, publish_index, read_index_inputs


@flow(name="index", validate_parameters=True)
def index_flow(config: IndexConfig) -> IndexReport:
    """Index one collection: embed chunks the cache lacks, build BM25 over chunks and over whole
    documents, and swap the new index in."""
    inputs = read_index_inputs(config)
    embedded = embed_chunks(inputs, config.batch_size)
    staged = build_bm25_indexes(inputs)
    return publish_index(config, inputs, embedded, staged)
