"""The ingest flow: files (or a BEIR dataset) into a collection's documents and chunks."""

from __future__ import annotations

from prefect import flow

from flows.finished import finished
from flows.run_names import run_name
from flows.runners import FannedOut, task_runner
from ragassay.config import IngestConfig
from ragassay.ingest.files import IngestReport
from ragassay.work_parts import in_parts
from tasks.ingest import (
    combine_extractions,
    discover_files,
    extract_file_part,
    open_staging,
    read_beir_queries,
    report_ingest,
    stage_beir_corpus,
    store_beir_queries,
    store_documents,
    stored_digests,
)


@flow(name="ingest", flow_run_name=run_name, validate_parameters=True)
def ingest_flow(config: IngestConfig) -> IngestReport:
    """Ingest files or folders (or one BEIR dataset) into a collection, creating it if needed.
    Parts of the documents are staged on disk as they are extracted, then merged in one pass."""
    stored, staging = stored_digests(config), open_staging(config)
    if config.format == "beir":
        queries, qrels = read_beir_queries(config.paths[0])
        parts, rejections = combine_extractions(stage_beir_corpus(config, stored, staging))
        outcomes = store_documents(config, staging, parts)
        store_beir_queries(config, queries, qrels)
        return finished(report_ingest(config, outcomes, parts, rejections, queries, qrels))
    found = discover_files(config.paths)
    # Parts of the files are extracted where config.task_runner says (threads here, or Dask workers).
    with task_runner(config.task_runner) as runner:
        extracting = FannedOut(runner)
        for part in in_parts(found, config.files_per_task):
            extracting.submit("files", extract_file_part, config=config, found=part, stored=stored, staging=staging)
        extracted = extracting.all()
    parts, rejections = combine_extractions(extracted)
    return finished(report_ingest(config, store_documents(config, staging, parts), parts, rejections))
