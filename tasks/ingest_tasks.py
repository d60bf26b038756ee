"""Prefect tasks of ingestion: find files, extract them, merge them into a collection, import BEIR."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from ragassay.errors import ConfigError, RagassayError
from ragassay.workspace import CollectionPaths, load_chunks, load_documents
from tasks.extraction import ExtractedText, ExtractionError, read_and_extract
from tasks.ingestion import Chunker, IncomingDocument, merge_documents, sha256_hex
from tasks.progress import ProgressReporter
from tasks.schemas import CHUNKS, DOCUMENTS, QRELS, QUERIES
from tasks.tables import write_table


class Rejection(BaseModel):
    path: str
    reason: str
    detail: str


class IngestReport(BaseModel):
    """What one ingest did: counts by outcome, the documents touched, and every rejection."""

    collection: str
    ingested: list[str] = []
    replaced: list[str] = []
    unchanged: list[str] = []
    rejected: list[Rejection] = []
    truncated: list[str] = []
    queries: int = 0
    qrels: int = 0

    def counts(self) -> dict[str, int]:
        return {
            "ingested": len(self.ingested),
            "replaced": len(self.replaced),
            "unchanged": len(self.unchanged),
            "rejected": len(self.rejected),
        }


def _is_hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


@task(name="discover-files", cache_policy=NO_CACHE)
def discover_files(paths: tuple[Path, ...]) -> list[tuple[Path, Path]]:
    """(root, file) pairs: every file under each folder (hidden ones skipped), or the file itself."""
    found: list[tuple[Path, Path]] = []
    for given in paths:
        path = given.expanduser().resolve()
        if path.is_dir():
            found.extend(
                (path, file)
                for file in sorted(path.rglob("*"))
                if file.is_file() and not _is_hidden(file, path)
            )
        elif path.is_file():
            found.append((path.parent, path))
        else:
            raise ConfigError(f"ingest path {given} does not exist")
    return found


@task(name="extract-documents", cache_policy=NO_CACHE)
def extract_documents(
    files: list[tuple[Path, Path]], doc_id: str | None
) -> tuple[list[IncomingDocument], list[Rejection]]:
    """Extract every file's text; a file that fails becomes a rejection and the others go on."""
    incoming: list[IncomingDocument] = []
    rejections: list[Rejection] = []
    seen: dict[str, Path] = {}
    with ProgressReporter("extracting files") as progress:
        for done, (root, file) in enumerate(files, start=1):
            identifier = doc_id or file.relative_to(root).as_posix()
            try:
                if identifier in seen:
                    raise ExtractionError("duplicate_id", f"doc_id {identifier!r} is also {seen[identifier]}")
                raw, extracted = read_and_extract(file)
            except ExtractionError as error:
                rejections.append(Rejection(path=str(file), reason=error.reason, detail=error.detail))
            else:
                seen[identifier] = file
                incoming.append(
                    IncomingDocument(identifier, str(file), len(raw), sha256_hex(raw), extracted)
                )
            progress(done, len(files))
    return incoming, rejections


@task(name="store-documents", cache_policy=NO_CACHE)
def store_documents(
    paths: CollectionPaths, incoming: list[IncomingDocument], chunker: Chunker
) -> dict[str, str]:
    """Merge documents into the collection and write chunks, then documents, atomically."""
    merged = merge_documents(
        load_documents(paths, with_text=True), load_chunks(paths), incoming, chunker, datetime.now(timezone.utc)
    )
    write_table(merged.chunks, paths.chunks, CHUNKS)
    write_table(merged.documents, paths.documents, DOCUMENTS)
    return dict(merged.outcomes)


def report_from(collection: str, outcomes: dict[str, str], incoming: list[IncomingDocument], rejections: list[Rejection]) -> IngestReport:
    report = IngestReport(collection=collection, rejected=rejections)
    for doc_id, outcome in sorted(outcomes.items()):
        getattr(report, outcome).append(doc_id)
    report.truncated = sorted(d.doc_id for d in incoming if d.extracted.truncated)
    return report


@task(name="read-beir-dataset", cache_policy=NO_CACHE)
def read_beir_dataset(folder: Path) -> tuple[list[IncomingDocument], pl.DataFrame, pl.DataFrame]:
    """Documents from corpus.jsonl (title and text joined), test queries and qrels of a BEIR folder."""
    corpus_path, queries_path, qrels_path = folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / "test.tsv"
    for needed in (corpus_path, queries_path, qrels_path):
        if not needed.is_file():
            raise ConfigError(f"BEIR dataset {folder} lacks {needed.relative_to(folder)}")
    incoming: list[IncomingDocument] = []
    for line_number, record in _jsonl(corpus_path):
        doc_id, title, body = str(record.get("_id", "")), record.get("title") or "", record.get("text") or ""
        if not doc_id:
            raise RagassayError(f"{corpus_path}:{line_number}: record has no '_id'")
        text = f"{title}\n\n{body}" if title else body
        raw = text.encode()
        extracted = ExtractedText(text=text, title=title or doc_id, content_type="text/plain")
        incoming.append(IncomingDocument(doc_id, f"{corpus_path}#{doc_id}", len(raw), sha256_hex(raw), extracted))
    qrels_rows = []
    for line_number, line in enumerate(qrels_path.read_text(encoding="utf-8").splitlines(), start=1):
        fields = line.strip().split("\t")
        if line_number == 1 and fields[0] == "query-id" or not line.strip():
            continue
        if len(fields) != 3 or not fields[2].lstrip("-").isdigit():
            raise RagassayError(f"{qrels_path}:{line_number}: expected 'query-id<TAB>corpus-id<TAB>score'")
        qrels_rows.append({"query_id": fields[0], "doc_id": fields[1], "relevance": int(fields[2])})
    qrels = pl.DataFrame(qrels_rows, schema=QRELS.schema)
    test_ids = set(qrels["query_id"].to_list())
    queries = pl.DataFrame(
        [
            {"query_id": str(record["_id"]), "text": record.get("text") or ""}
            for _, record in _jsonl(queries_path)
            if str(record.get("_id")) in test_ids
        ],
        schema=QUERIES.schema,
    )
    return incoming, queries, qrels


def _jsonl(path: Path):
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield line_number, json.loads(line)
            except json.JSONDecodeError as error:
                raise RagassayError(f"{path}:{line_number}: invalid JSON: {error.msg}") from error


@task(name="store-beir-queries", cache_policy=NO_CACHE)
def store_beir_queries(paths: CollectionPaths, queries: pl.DataFrame, qrels: pl.DataFrame) -> None:
    write_table(queries, paths.beir_queries, QUERIES)
    write_table(qrels, paths.beir_qrels, QRELS)
