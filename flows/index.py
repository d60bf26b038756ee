"""The index flow: embeddings (cached) and BM25 for one collection, published as one folder."""

from __future__ import annotations

import time
from datetime import datetime, timezone

from prefect import flow

from ragassay.config import IndexConfig
from ragassay.workspace import collection_paths, load_chunks, load_documents, models_dir
from tasks.dense import resolve_model
from tasks.index_tasks import (
    IndexReport,
    build_bm25_indexes,
    embed_chunks,
    index_digest,
    publish_index,
    staging_folder,
)
from tasks.ingestion import index_input_digest
from tasks.lexical import STEMMER_LANGUAGE, STOPWORDS


@flow(name="index", validate_parameters=True)
def index_flow(config: IndexConfig) -> IndexReport:
    """Index one collection: embed chunks the cache lacks, build BM25 over chunks and over whole
    documents, and swap the new index in."""
    paths = collection_paths(config.home, config.collection)
    documents = load_documents(paths, with_text=True)
    chunks = load_chunks(paths)
    spec = resolve_model(config.embedding_model, models_dir(config.home))

    started = time.perf_counter()
    embedded, reused, dimension = embed_chunks(paths, chunks, spec, config.batch_size)
    seconds_embedding = time.perf_counter() - started

    staging = staging_folder(paths)
    started = time.perf_counter()
    build_bm25_indexes(documents, chunks, staging / "bm25", staging / "bm25_documents")
    seconds_bm25 = time.perf_counter() - started

    input_digest = index_input_digest(documents, chunks)
    digest = index_digest(input_digest, spec.model_id)
    publish_index(
        paths,
        staging,
        {
            "built_at": datetime.now(timezone.utc).isoformat(),
            "chunks": chunks.height,
            "documents": documents.height,
            "input_digest": input_digest,
            "index_digest": digest,
            "embedding_model": config.embedding_model,
            "embedding_model_id": spec.model_id,
            "dimension": dimension,
            "lexical": {"stopwords": STOPWORDS, "stemmer": STEMMER_LANGUAGE},
        },
    )
    return IndexReport(
        collection=config.collection,
        chunks=chunks.height,
        embedding_model_id=spec.model_id,
        embedded=embedded,
        reused_embeddings=reused,
        index_digest=digest,
        seconds_embedding=round(seconds_embedding, 3),
        seconds_bm25=round(seconds_bm25, 3),
    )
