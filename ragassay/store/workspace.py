"""The workspace on disk: where each collection's tables and indexes live, and loading them.

Models are not in the workspace: they are assembled once per user (environment.models_dir).

Layout under the workspace root ($RAGASSAY_HOME):
    cache/completions.sqlite               model calls remembered by exactly what was asked
                                           (llm/cache.py; $RAGASSAY_CACHE, when set, moves it)
    collections/<name>/documents.parquet   one row per document (text included)
    collections/<name>/chunks.parquet      one row per chunk, spans into the document text
    collections/<name>/embeddings.parquet  embedding cache: (text_sha256, model_id) -> vector
    collections/<name>/beir/               queries.parquet and qrels.parquet of an imported BEIR set
    collections/<name>/golden.parquet      the collection's golden set
    collections/<name>/dialogues.parquet   its golden dialogues (conversations of turns)
    collections/<name>/generation/         every generated candidate, accepted or discarded
    collections/<name>/index/              manifest.json, bm25/ (chunks) and bm25_documents/
    deleting/                              collections being deleted (delete_collection)
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ragassay.environment import environment
from ragassay.errors import CollectionNotFound, ConfigError
from ragassay.store.locks import collection_lock
from ragassay.store.names import COLLECTION_NAME
from ragassay.store.schemas import CHUNKS, DOCUMENTS, TableSpec
from ragassay.store.tables import read_table

INDEX_FORMAT_VERSION = 2


def completion_cache_path(home: Path) -> Path:
    """The workspace's cache of model calls (llm/cache.py), or the one in $RAGASSAY_CACHE when set
    (several workspaces can share one)."""
    folder = environment().cache
    return (folder.expanduser() if folder else home / "cache") / "completions.sqlite"


@dataclass(frozen=True)
class CollectionPaths:
    """Every file of one collection."""

    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def documents(self) -> Path:
        return self.root / "documents.parquet"

    @property
    def chunks(self) -> Path:
        return self.root / "chunks.parquet"

    @property
    def embeddings(self) -> Path:
        return self.root / "embeddings.parquet"

    @property
    def beir_queries(self) -> Path:
        return self.root / "beir" / "queries.parquet"

    @property
    def beir_qrels(self) -> Path:
        return self.root / "beir" / "qrels.parquet"

    @property
    def golden(self) -> Path:
        return self.root / "golden.parquet"

    @property
    def dialogues(self) -> Path:
        """The golden dialogues: conversations of turns (golden/dialogues.py)."""
        return self.root / "dialogues.parquet"

    @property
    def judge_labels(self) -> Path:
        """People's labels of the judge's verdicts (judge/calibration/labels/store.py)."""
        return self.root / "judge_labels.parquet"

    @property
    def aligned_judge(self) -> Path:
        """The judge aligned to the collection's labels, as `judge calibrate` fitted it (judge/calibration/alignment.py)."""
        return self.root / "aligned_judge.json"

    @property
    def generation_log(self) -> Path:
        return self.root / "generation" / "candidates.parquet"

    @property
    def dialogue_generation_log(self) -> Path:
        """Every generated dialogue, accepted or discarded (golden/dialogue_generation.py)."""
        return self.root / "generation" / "dialogue_candidates.parquet"

    @property
    def lock_file(self) -> Path:
        """The collection's write lock (store/locks.py), outside its folder: <home>/locks/<name>.lock."""
        return self.root.parent.parent / "locks" / f"{self.name}.lock"

    def write_lock(self):
        """The context manager that serializes writers of this collection (store/locks.py)."""
        return collection_lock(self.lock_file)

    def index_build_lock(self):
        """Held for a whole index build (minutes to hours), apart from the write lock so that
        ingests go on meanwhile: a second build of the collection waits for the first instead of
        removing the embedded groups it is writing (index/embedding.EMBEDDING_PARTS)."""
        lock_file = self.lock_file.with_name(f"{self.name}.index-build.lock")
        return collection_lock(lock_file, name=f"collection {self.name!r} (an index build)")

    @property
    def golden_only(self) -> bool:
        """A collection that holds only a golden set (a team's own system under test is evaluated
        against its own document ids, without ingesting its corpus). One that also holds chunks or
        an index lost its documents table instead."""
        return (
            (self.golden.exists() or self.dialogues.exists())
            and not self.documents.exists()
            and not self.chunks.exists()
            and not self.index_dir.exists()
        )

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def index_manifest(self) -> Path:
        return self.index_dir / "manifest.json"

    @property
    def bm25_dir(self) -> Path:
        return self.index_dir / "bm25"

    @property
    def bm25_documents_dir(self) -> Path:
        return self.index_dir / "bm25_documents"


def collection_paths(home: Path, name: str, must_exist: bool = True) -> CollectionPaths:
    """The paths of a collection; CollectionNotFound (listing those that exist) when it is missing."""
    if not COLLECTION_NAME.match(name):
        raise ConfigError(f"collection name {name!r} must be 1-64 letters, digits, '_', '.' or '-'")
    paths = CollectionPaths(home / "collections" / name)
    if must_exist and not paths.documents.exists() and not paths.golden_only:
        if paths.root.is_dir() and any(paths.root.iterdir()):
            # The folder holds other tables (a golden set, an index) but no documents table: it was
            # deleted or lost, which a user should not read as "there is no such collection".
            raise CollectionNotFound(
                f"collection {name!r} in {home} has no documents table ({paths.documents} is missing): "
                f"run `ragassay ingest -c {name}` on its sources to rebuild it (its golden set is kept)"
            )
        known = ", ".join(list_collections(home)) or "none"
        raise CollectionNotFound(f"no collection {name!r} in {home} (collections: {known})")
    return paths


def list_collections(home: Path) -> list[str]:
    root = home / "collections"
    if not root.exists():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "documents.parquet").exists())


def delete_collection(home: Path, name: str) -> None:
    """Remove a collection and everything in it, under its write lock: a writer that is merging
    finishes first (or CollectionBusy after the lock's bounded wait, naming it), and an ingest that
    is still staging finds its staging folder gone and stores nothing (ingest/documents.py). The
    folder is first renamed out of the workspace's collections, so a delete that is killed midway
    leaves no half collection."""
    paths = collection_paths(home, name)
    with paths.write_lock():
        if not paths.root.is_dir():
            raise CollectionNotFound(f"no collection {name!r} in {home}: it was deleted meanwhile")
        trash = home / "deleting" / f"{name}-{uuid.uuid4().hex}"
        trash.parent.mkdir(exist_ok=True)
        paths.root.rename(trash)
    # Every deleted collection's folder, this one's and any a killed delete left.
    shutil.rmtree(trash.parent, ignore_errors=True)


def load_documents(paths: CollectionPaths, with_text: bool = False) -> pl.DataFrame:
    return _load_without_text(paths.documents, DOCUMENTS, with_text)


def load_chunks(paths: CollectionPaths, with_text: bool = True) -> pl.DataFrame:
    return _load_without_text(paths.chunks, CHUNKS, with_text)


def _load_without_text(path: Path, spec: TableSpec, with_text: bool) -> pl.DataFrame:
    """spec's table at path (empty when there is none yet), its text column only when asked for:
    texts are most of a collection's bytes."""
    columns = [c for c in spec.schema if with_text or c != "text"]
    return read_table(path, spec, columns=columns) if path.exists() else spec.empty().select(columns)


def link_tables(paths: CollectionPaths, into: Path) -> CollectionPaths:
    """The collection's documents and chunks tables as they are now, as hard links in the new
    folder into (copies where the filesystem makes none): a writer replaces a table by renaming a
    new file over it, so the links keep this version readable, a part at a time, for as long as a
    long task needs it. Call under the write lock, so both are of one ingest."""
    snapshot = CollectionPaths(into)
    into.mkdir(parents=True)
    for table, link in ((paths.documents, snapshot.documents), (paths.chunks, snapshot.chunks)):
        if table.exists():
            try:
                os.link(table, link)
            except OSError:
                shutil.copy2(table, link)
    return snapshot


def read_manifest(paths: CollectionPaths) -> dict | None:
    if not paths.index_manifest.exists():
        return None
    return json.loads(paths.index_manifest.read_text())


STALE_STAGING_SECONDS = 3600


def remove_leftovers(root: Path, keep: Path | None = None) -> None:
    """Remove what killed writers left in a collection's folder: temporary table files
    (`.chunks.parquet.XXXX`) and index or ingest staging folders, once older than
    STALE_STAGING_SECONDS. A younger one may be a live writer's: an index build writes its
    embedding cache outside the lock and takes the lock only to rename it. Called under the write lock."""
    now = time.time()
    for leftover in root.glob(".*"):
        if leftover == keep or now - leftover.stat().st_mtime <= STALE_STAGING_SECONDS:
            continue
        if leftover.is_file() and ".parquet." in leftover.name:
            leftover.unlink(missing_ok=True)
        elif leftover.is_dir() and leftover.name.startswith((".index-", ".ingest-")):
            shutil.rmtree(leftover, ignore_errors=True)
