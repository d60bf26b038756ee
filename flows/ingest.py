"""The ingest flow: files (or a BEIR dataset) into a collection's documents and chunks."""

from __future__ import annotations

from prefect import flow

from flows.runners import task_runner
from ragassay.batches import in_batches
from ragassay.config import IngestConfig
from ragassay.ingest.files import IngestReport
from tasks.ingest import (
    combine_extractions,
    discover_files,
    extract_file_batch,
    read_beir_dataset,
    report_ingest,
    store_beir_queries,
    store_documents,
    stored_digests,
)


@flow(name="ingest", validate_parameters=True)
def ingest_flow(config: IngestConfig) -> IngestReport:
    """Ingest files or folders (or one BEIR dataset) into a collection, creating it if needed."""
    if config.format == "beir":
        incoming, queries, qrels = read_beir_dataset(config.paths[0])
        outcomes = store_documents(config, incoming)
        store_beir_queries(config, queries, qrels)
        return report_ingest(config, outcomes, incoming, [], queries, qrels)
    found, stored = discover_files(config.paths), stored_digests(config)
    # Batches of files are extracted where config.task_runner says (threads here, or Dask workers).
    with task_runner(config.task_runner) as runner:
        futures = [
            runner.submit(extract_file_batch, {"config": config, "found": batch, "stored": stored})
            for batch in in_batches(found, config.files_per_task)
        ]
        extracted = [future.result() for future in futures]
    incoming, rejections = combine_extractions(extracted)
    return report_ingest(config, store_documents(config, incoming), incoming, rejections)
