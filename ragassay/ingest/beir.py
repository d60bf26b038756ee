"""Importing a BEIR dataset folder: corpus.jsonl as documents, the test queries and their qrels."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from ragassay.errors import ConfigError, RagassayError
from ragassay.ingest.documents import IncomingDocument, sha256_hex
from ragassay.ingest.extraction import ExtractedText
from ragassay.store.schemas import QRELS, QUERIES
from ragassay.store.tables import write_table
from ragassay.store.workspace import CollectionPaths
from ragassay.work_parts import streamed_parts


def beir_files(folder: Path) -> tuple[Path, Path, Path]:
    """corpus.jsonl, queries.jsonl and qrels/test.tsv of a BEIR folder, each checked to exist."""
    corpus_path, queries_path, qrels_path = (
        folder / "corpus.jsonl",
        folder / "queries.jsonl",
        folder / "qrels" / "test.tsv",
    )
    for needed in (corpus_path, queries_path, qrels_path):
        if not needed.is_file():
            raise ConfigError(f"BEIR dataset {folder} lacks {needed.relative_to(folder)}")
    return corpus_path, queries_path, qrels_path


def corpus_parts(
    folder: Path, size: int | None, stored: dict[str, str] | None = None
) -> Iterator[list[IncomingDocument]]:
    """corpus.jsonl's documents (title and text joined), size at a time (all at once for None), read
    as they are yielded. A document whose text has its stored digest is not extracted (as files.extract_documents)."""
    return streamed_parts(_corpus_documents(beir_files(folder)[0], stored or {}), size)


def _corpus_documents(corpus_path: Path, stored: dict[str, str]) -> Iterator[IncomingDocument]:
    first_line: dict[str, int] = {}
    for line_number, record in _jsonl(corpus_path):
        doc_id, title, body = str(record.get("_id", "")), record.get("title") or "", record.get("text") or ""
        if not doc_id:
            raise RagassayError(f"{corpus_path}:{line_number}: record has no '_id'")
        if first_line.setdefault(doc_id, line_number) != line_number:
            raise RagassayError(f"{corpus_path}:{line_number}: '_id' {doc_id!r} is also on line {first_line[doc_id]}")
        text = f"{title}\n\n{body}" if title else body
        raw = text.encode()
        digest = sha256_hex(raw)
        extracted = (
            None
            if stored.get(doc_id) == digest
            else ExtractedText(text=text, title=title or doc_id, content_type="text/plain")
        )
        yield IncomingDocument(doc_id, f"{corpus_path}#{doc_id}", len(raw), digest, extracted)


def read_beir_queries(folder: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The test queries and their qrels of a BEIR folder."""
    _, queries_path, qrels_path = beir_files(folder)
    qrels_rows = []
    for line_number, line in enumerate(qrels_path.read_text(encoding="utf-8").splitlines(), start=1):
        fields = line.strip().split("\t")
        if (line_number == 1 and fields[0] == "query-id") or not line.strip():
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
    return queries, qrels


def _jsonl(path: Path):
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield line_number, json.loads(line)
            except json.JSONDecodeError as error:
                raise RagassayError(f"{path}:{line_number}: invalid JSON: {error.msg}") from error


def store_beir_queries(paths: CollectionPaths, queries: pl.DataFrame, qrels: pl.DataFrame) -> None:
    with paths.write_lock():
        write_table(queries, paths.beir_queries, QUERIES)
        write_table(qrels, paths.beir_qrels, QRELS)
