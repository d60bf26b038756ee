"""Ingesting files: finding them under the given paths, extracting each one's text (a file that
fails becomes a typed rejection and the others go on), and the report of what an ingest did."""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from pydantic import BaseModel, computed_field

from ragassay.errors import ConfigError
from ragassay.fields import unsafe_characters
from ragassay.ingest.documents import (
    Chunker,
    IncomingDocument,
    IngestStaging,
    StagedPart,
    sha256_hex,
    stage_part,
    store_staged,
    stored_digests,
)
from ragassay.ingest.extraction import ExtractionError, read_file
from ragassay.ingest.isolation import IsolatedExtractor
from ragassay.progress import ProgressReporter
from ragassay.store.workspace import collection_paths


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

    @computed_field
    @property
    def counts(self) -> dict[str, int]:
        """Documents by outcome."""
        return {
            "ingested": len(self.ingested),
            "replaced": len(self.replaced),
            "unchanged": len(self.unchanged),
            "rejected": len(self.rejected),
        }


def _is_hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def _followed(path: Path) -> Path:
    """The path made absolute with its links followed; a link loop as written (absolute), to be
    rejected by name (not_a_file) rather than end the ingest."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return path.absolute()


def discover_files(paths: tuple[Path, ...]) -> list[tuple[Path, Path]]:
    """(root, file) pairs: everything but folders under each folder (hidden ones skipped), or the
    path itself. What is not a regular file (a FIFO, a device, a socket, a link loop or a broken
    link) is kept here, to be rejected by name and counted (extract_documents), never read."""
    found: list[tuple[Path, Path]] = []
    for given in paths:
        path = _followed(given.expanduser())
        if path.is_dir():
            found.extend(
                (path, file) for file in sorted(path.rglob("*")) if not file.is_dir() and not _is_hidden(file, path)
            )
        elif os.path.lexists(path):
            found.append((path.parent, path))
        else:
            raise ConfigError(f"ingest path {given} does not exist")
    return found


def not_a_regular_file(file: Path) -> ExtractionError | None:
    """Why a path is no file to read (reading a FIFO would wait for ever, a device may never end):
    a link loop, a broken link, or a FIFO, device or socket; None for a regular file."""
    try:
        mode = file.stat().st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return ExtractionError("not_a_file", "a symbolic link loop")
        if file.is_symlink():
            return ExtractionError("not_a_file", f"a broken link to {os.readlink(file)}")
        return ExtractionError("unreadable", f"cannot read file: {error.strerror or error}")
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _SPECIAL_KINDS if test(mode)), "special file")
    return ExtractionError("not_a_file", f"a {kind}, not a regular file")


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "FIFO (named pipe)"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def extract_documents(
    files: list[tuple[Path, Path]], doc_id: str | None, stored: dict[str, str] | None = None
) -> tuple[list[IncomingDocument], list[Rejection]]:
    """Extract every file's text; a file that fails becomes a rejection and the others go on.

    stored: {doc_id: sha256} of the documents the collection holds with the chunk settings of this
    ingest. A file whose bytes have its stored document's digest is not extracted again (its text
    and chunks are already stored, and the merge keeps them): its `extracted` is None."""
    stored = stored or {}
    incoming: list[IncomingDocument] = []
    rejections: list[Rejection] = []
    seen: dict[str, Path] = {}
    with ProgressReporter("extracting files", total=len(files)) as progress, IsolatedExtractor() as extract:
        for done, (root, file) in enumerate(files, start=1):
            # NFC: a name typed on one system and stored by another (macOS writes NFD) is one id;
            # two files whose names differ only in that form are a duplicate, not two documents.
            identifier = unicodedata.normalize("NFC", doc_id or file.relative_to(root).as_posix())
            try:
                problem = not_a_regular_file(file)
                if problem is not None:
                    raise problem
                if identifier in seen:
                    raise ExtractionError("duplicate_id", f"doc_id {identifier!r} is also {seen[identifier]}")
                if not file.resolve().is_relative_to(root.resolve()):
                    raise ExtractionError("outside_root", f"a link to {file.resolve()}, outside the ingest root {root}")
                if unsafe_characters(identifier):
                    raise ExtractionError(
                        "unsafe_name",
                        f"the name holds control or bidirectional characters {unsafe_characters(identifier)}",
                    )
                raw = read_file(file)
                digest = sha256_hex(raw)
                extracted = None if stored.get(identifier) == digest else extract(raw, file.name)
            except ExtractionError as error:
                rejections.append(Rejection(path=str(file), reason=error.reason, detail=error.detail))
            else:
                seen[identifier] = file
                incoming.append(IncomingDocument(identifier, str(file), len(raw), digest, extracted))
            progress(done, len(files))
    return incoming, rejections


def combine_extractions(
    batches: list[tuple[StagedPart, list[Rejection]]],
) -> tuple[list[StagedPart], list[Rejection]]:
    """The parts and rejections of batches extracted apart, in batch order; a document whose id an
    earlier batch already has is rejected as a duplicate, as within one batch, and left out of its part."""
    parts: list[StagedPart] = []
    rejections: list[Rejection] = []
    seen: dict[str, str] = {}
    for part, rejected in batches:
        first_here = []
        for doc_id, path in part.documents.select("doc_id", "source_path").iter_rows():
            first_here.append(doc_id not in seen)
            if doc_id in seen:
                rejections.append(
                    Rejection(path=path, reason="duplicate_id", detail=f"doc_id {doc_id!r} is also {seen[doc_id]}")
                )
            else:
                seen[doc_id] = path
        parts.append(replace(part, documents=part.documents.filter(pl.Series(first_here, dtype=pl.Boolean))))
        rejections.extend(rejected)
    return parts, rejections


def report_from(
    collection: str,
    outcomes: pl.DataFrame,
    parts: list[StagedPart],
    rejections: list[Rejection],
    queries: int = 0,
    qrels: int = 0,
) -> IngestReport:
    """The report of one ingest: documents by outcome, truncated texts, rejections, BEIR counts."""
    report = IngestReport(collection=collection, rejected=rejections, queries=queries, qrels=qrels)
    for doc_id, outcome in outcomes.sort("doc_id").select("doc_id", "outcome").iter_rows():
        getattr(report, outcome).append(doc_id)
    report.truncated = sorted(
        doc_id for part in parts for doc_id in part.documents.filter("truncated")["doc_id"].to_list()
    )
    return report


def ingest_files(home: Path, collection: str, paths: tuple[Path, ...], chunker: Chunker) -> IngestReport:
    """Ingest files and folders into a collection in this process, as one batch: what the ingest
    flow does with its batches fanned out on a task runner (flows/ingest.py), for library callers
    and tests that do not run Prefect."""
    target = collection_paths(home, collection, must_exist=False)
    stored = stored_digests(target, chunker)
    staging = IngestStaging.new(target, datetime.now(UTC))
    incoming, rejected = extract_documents(discover_files(paths), None, stored)
    parts, rejections = combine_extractions([(stage_part(staging, incoming, chunker), rejected)])
    return report_from(collection, store_staged(target, staging, parts, chunker), parts, rejections)
