"""The ingest flow: files (or a BEIR dataset) into a collection's documents and chunks."""

from __future__ import annotations

from prefect import flow

from ragassay.config import IngestConfig
from ragassay.workspace import collection_paths
from tasks.ingest_tasks import (
    IngestReport,
    discover_files,
    extract_documents,
    read_beir_dataset,
    report_from,
    store_beir_queries,
    store_documents,
)
from tasks.ingestion import Chunker


@flow(name="ingest", validate_parameters=True)
def ingest_flow(config: IngestConfig) -> IngestReport:
    """Ingest files or folders (or one BEIR dataset) into a collection, creating it if needed."""
    paths = collection_paths(config.home, config.collection, must_exist=False)
    chunker = Chunker(config.chunking.chunk_size, config.chunking.chunk_overlap)
    if config.format == "beir":
        incoming, queries, qrels = read_beir_dataset(config.paths[0])
        outcomes = store_documents(paths, incoming, chunker)
        store_beir_queries(paths, queries, qrels)
        report = report_from(config.collection, outcomes, incoming, [])
        report.queries, report.qrels = queries.height, qrels.height
        return report
    files = discover_files(config.paths)
    incoming, rejections = extract_documents(files, config.doc_id)
    # A collection is created by its first accepted document, never by rejections alone.
    outcomes = store_documents(paths, incoming, chunker) if incoming or paths.documents.exists() else {}
    return report_from(config.collection, outcomes, incoming, rejections)
