"""What an index build reads: a snapshot of the collection's chunks and documents (IndexInputs), held
while the build reads it and released after."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from ragassay.environment import models_dir
from ragassay.errors import IndexMissing, TableDamaged
from ragassay.ingest.documents import check_consistent
from ragassay.search.dense import EmbeddingModelSpec, resolve_model
from ragassay.store.workspace import (
    CollectionPaths,
    collection_paths,
    link_tables,
    load_chunks,
    load_documents,
)


@dataclass(frozen=True)
class IndexInputs:
    """What an index is built from: the collection's documents and chunks without their texts (ids
    and digests), a snapshot of its tables that the texts are read from a part at a time when
    they are tokenized or embedded, and the embedding model."""

    paths: CollectionPaths
    # Hard links to the tables as they were when the build began (store/workspace.link_tables): an
    # ingest during the build can't pair one version's ids with another's texts.
    snapshot: CollectionPaths
    documents: pl.DataFrame
    chunks: pl.DataFrame
    embedding_model: str | dict  # as the manifest records it: a name, or a served model's settings
    spec: EmbeddingModelSpec


def read_index_inputs(home: Path, collection: str, embedding_model) -> IndexInputs:
    """The collection's documents and chunks (without text) from a snapshot of its tables, and the
    embedding model resolved (offline, or by one probe of a served model)."""
    paths = collection_paths(home, collection)
    spec = resolve_model(embedding_model, models_dir())
    if spec.served is not None:
        embedding_model = json.loads(spec.served)
    # Under the write lock: never the chunks of one ingest beside the documents of another.
    with paths.write_lock():
        snapshot = link_tables(paths, staging_folder(paths).with_suffix(".inputs"))
    try:
        documents, chunks = load_documents(snapshot), load_chunks(snapshot, with_text=False)
        check_consistent(paths.name, documents, chunks)
    except TableDamaged as error:
        release_index_inputs(snapshot)
        # The snapshot's files are links to the collection's: the error names the collection's.
        raise TableDamaged(str(error).replace(str(snapshot.root), str(paths.root))) from error
    except BaseException:
        release_index_inputs(snapshot)
        raise
    return IndexInputs(paths, snapshot, documents, chunks, embedding_model, spec)


def release_index_inputs(snapshot: CollectionPaths) -> None:
    """Remove an index build's snapshot of the tables (its links; the collection keeps its files)."""
    shutil.rmtree(snapshot.root, ignore_errors=True)


def snapshot_in_use(snapshot: CollectionPaths) -> CollectionPaths:
    """The snapshot, marked as in use now: remove_leftovers removes a staging folder left untouched
    for an hour as a killed build's, and embedding a large collection takes hours."""
    try:
        os.utime(snapshot.root)
    except FileNotFoundError:
        raise IndexMissing(
            f"the index build's snapshot of collection {snapshot.root.parent.name!r} ({snapshot.root}) was removed while it ran: "
            "run `ragassay index` again"
        ) from None
    return snapshot


def staging_folder(paths: CollectionPaths) -> Path:
    """A new folder beside the index for a build's staging (and, with a suffix, its inputs)."""
    return paths.root / f".index-{datetime.now(UTC):%Y%m%dT%H%M%S%f}"
