"""Importing a BEIR dataset folder: corpus.jsonl as documents, the test queries and their qrels."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ragassay.errors import ConfigError, RagassayError
from ragassay.ingest.documents import IncomingDocument, sha256_hex
from ragassay.ingest.extraction import ExtractedText
from ragassay.store.schemas import QRELS, QUERIES
from ragassay.store.tables import write_table
from ragassay.store.workspace import CollectionPaths


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


def store_beir_queries(paths: CollectionPaths, queries: pl.DataFrame, qrels: pl.DataFrame) -> None:
    with paths.write_lock():
        write_table(queries, paths.beir_queries, QUERIES)
        write_table(qrels, paths.beir_qrels, QRELS)
