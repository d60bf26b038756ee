"""Prefect tasks of ingestion: find files, extract them, merge them into a collection, import BEIR,
report what happened."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay.config import IngestConfig
from ragassay.ingest import beir, documents, files
from ragassay.ingest.documents import Chunker, IncomingDocument
from ragassay.ingest.files import IngestReport, Rejection
from ragassay.store.workspace import collection_paths


@task(name="discover-files", cache_policy=NO_CACHE)
def discover_files(paths: tuple[Path, ...]) -> list[tuple[Path, Path]]:
    """(root, file) pairs: every file under each folder (hidden ones skipped), or the file itself."""
    return files.discover_files(paths)


@task(name="stored-digests", cache_policy=NO_CACHE)
def stored_digests(config: IngestConfig) -> dict[str, str]:
    """{doc_id: sha256} of the documents the collection holds with this ingest's chunk settings."""
    chunker = Chunker(config.chunking.chunk_size, config.chunking.chunk_overlap)
    return documents.stored_digests(collection_paths(config.home, config.collection, must_exist=False), chunker)


@task(name="extract-file-batch", cache_policy=NO_CACHE)
def extract_file_batch(
    config: IngestConfig, found: list[tuple[Path, Path]], stored: dict[str, str]
) -> tuple[list[IncomingDocument], list[Rejection]]:
    """Extract one batch of files (in an extraction worker process of its own), except files whose
    digest the collection already holds; a file that fails becomes a rejection and the others go on."""
    return files.extract_documents(found, config.doc_id, stored)


@task(name="combine-extractions", cache_policy=NO_CACHE)
def combine_extractions(
    batches: list[tuple[list[IncomingDocument], list[Rejection]]],
) -> tuple[list[IncomingDocument], list[Rejection]]:
    """The batches' documents and rejections in order, a document id seen twice rejected."""
    return files.combine_extractions(batches)


@task(name="store-documents", cache_policy=NO_CACHE)
def store_documents(config: IngestConfig, incoming: list[IncomingDocument]) -> dict[str, str]:
    """Merge the documents into the collection (creating it with its first document)."""
    chunker = Chunker(config.chunking.chunk_size, config.chunking.chunk_overlap)
    paths = collection_paths(config.home, config.collection, must_exist=False)
    return documents.store_documents(paths, incoming, chunker, datetime.now(timezone.utc))


@task(name="read-beir-dataset", cache_policy=NO_CACHE)
def read_beir_dataset(folder: Path) -> tuple[list[IncomingDocument], pl.DataFrame, pl.DataFrame]:
    """Documents, test queries and qrels of a BEIR folder."""
    return beir.read_beir_dataset(folder)


@task(name="store-beir-queries", cache_policy=NO_CACHE)
def store_beir_queries(config: IngestConfig, queries: pl.DataFrame, qrels: pl.DataFrame) -> None:
    beir.store_beir_queries(collection_paths(config.home, config.collection), queries, qrels)


@task(name="report-ingest", cache_policy=NO_CACHE)
def report_ingest(
    config: IngestConfig,
    outcomes: dict[str, str],
    incoming: list[IncomingDocument],
    rejections: list[Rejection],
    queries: pl.DataFrame | None = None,
    qrels: pl.DataFrame | None = None,
) -> IngestReport:
    """What the ingest did: documents by outcome, rejections, and the BEIR queries it stored."""
    counts = {"queries": queries.height, "qrels": qrels.height} if queries is not None and qrels is not None else {}
    return files.report_from(config.collection, outcomes, incoming, rejections, **counts)
