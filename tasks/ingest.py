"""Prefect tasks of ingestion: find files, extract them, merge them into a collection, import BEIR,
report what happened."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay.config import IngestConfig
from ragassay.ingest import beir, documents, files
from ragassay.ingest.documents import Chunker, IngestStaging, StagedPart
from ragassay.ingest.files import IngestReport, Rejection
from ragassay.store.workspace import collection_paths


@task(name="discover-files", cache_policy=NO_CACHE)
def discover_files(paths: tuple[Path, ...]) -> list[tuple[Path, Path]]:
    """(root, file) pairs: every file under each folder (hidden ones skipped), or the file itself."""
    return files.discover_files(paths)


@task(name="stored-digests", cache_policy=NO_CACHE)
def stored_digests(config: IngestConfig) -> dict[str, str]:
    """{doc_id: sha256} of the documents the collection holds with this ingest's chunk settings."""
    return documents.stored_digests(
        collection_paths(config.home, config.collection, must_exist=False), _chunker(config)
    )


@task(name="open-staging", cache_policy=NO_CACHE)
def open_staging(config: IngestConfig) -> IngestStaging:
    """Where this ingest's staged parts wait until they are merged, and its documents' ingested_at."""
    return IngestStaging.new(collection_paths(config.home, config.collection, must_exist=False), datetime.now(UTC))


@task(name="extract-file-part", cache_policy=NO_CACHE)
def extract_file_part(
    config: IngestConfig, found: list[tuple[Path, Path]], stored: dict[str, str], staging: IngestStaging
) -> tuple[StagedPart, list[Rejection]]:
    """Extract one part of the files (in an extraction worker process of its own), except files whose
    digest the collection already holds, and stage their rows; a file that fails becomes a
    rejection and the others go on."""
    incoming, rejections = files.extract_documents(found, config.doc_id, stored)
    return documents.stage_part(staging, incoming, _chunker(config)), rejections


@task(name="stage-beir-corpus", cache_policy=NO_CACHE)
def stage_beir_corpus(
    config: IngestConfig, stored: dict[str, str], staging: IngestStaging
) -> list[tuple[StagedPart, list[Rejection]]]:
    """Stage a BEIR corpus.jsonl's documents, files_per_task documents to a part, read as staged."""
    folder, chunker = config.paths[0], _chunker(config)
    return [
        (documents.stage_part(staging, part, chunker), [])
        for part in beir.corpus_parts(folder, config.files_per_task, stored)
    ]


@task(name="combine-extractions", cache_policy=NO_CACHE)
def combine_extractions(
    extracted: list[tuple[StagedPart, list[Rejection]]],
) -> tuple[list[StagedPart], list[Rejection]]:
    """The extracted parts and their rejections in order, a document id seen twice rejected."""
    return files.combine_extractions(extracted)


@task(name="store-documents", cache_policy=NO_CACHE)
def store_documents(config: IngestConfig, staging: IngestStaging, parts: list[StagedPart]) -> pl.DataFrame:
    """Merge the staged parts into the collection (creating it with its first document); each
    document's outcome (doc_id, outcome)."""
    paths = collection_paths(config.home, config.collection, must_exist=False)
    return documents.store_staged(paths, staging, parts, _chunker(config))


def _chunker(config: IngestConfig) -> Chunker:
    return Chunker(config.chunking.chunk_size, config.chunking.chunk_overlap)


@task(name="read-beir-queries", cache_policy=NO_CACHE)
def read_beir_queries(folder: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Test queries and qrels of a BEIR folder."""
    return beir.read_beir_queries(folder)


@task(name="store-beir-queries", cache_policy=NO_CACHE)
def store_beir_queries(config: IngestConfig, queries: pl.DataFrame, qrels: pl.DataFrame) -> None:
    beir.store_beir_queries(collection_paths(config.home, config.collection), queries, qrels)


@task(name="report-ingest", cache_policy=NO_CACHE)
def report_ingest(
    config: IngestConfig,
    outcomes: pl.DataFrame,
    parts: list[StagedPart],
    rejections: list[Rejection],
    queries: pl.DataFrame | None = None,
    qrels: pl.DataFrame | None = None,
) -> IngestReport:
    """What the ingest did: documents by outcome, rejections, and the BEIR queries it stored."""
    counts = {"queries": queries.height, "qrels": qrels.height} if queries is not None and qrels is not None else {}
    return files.report_from(config.collection, outcomes, parts, rejections, **counts)
