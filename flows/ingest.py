"""The ingest flow: files (or a BEIR dataset) into a collection's documents and chunks."""

from __future__ import annotations

from prefect import flow

from ragassay.config import IngestConfig
from ragassay.ingest.files import IngestReport
from tasks.ingest import (
    discover_files,
    extract_documents,
    read_beir_dataset,
    report_ingest,
    store_beir_queries,
    store_documents,
)


@flow(name="ingest", validate_parameters=True)
def ingest_flow(config: IngestConfig) -> IngestReport:
    """Ingest files or folders (or one BEIR dataset) into a collection, creating it if needed."""
    if config.format == "beir":
        incoming, queries, qrels = read_beir_dataset(config.paths[0])
        outcomes = store_documents(config, incoming)
        store_beir_queries(config, queries, qrels)
        return report_ingest(config, outcomes, incoming, [], queries, qrels)
    incoming, rejections = extract_documents(config, discover_files(config.paths))
    return report_ingest(config, store_documents(config, incoming), incoming, rejections)
