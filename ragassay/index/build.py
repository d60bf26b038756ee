"""Building a collection's index: chunk embeddings through the embedding cache, BM25 over chunks and
over whole documents, all written into a staging folder that is swapped in whole with its
manifest, so readers see the old index or the new one, never a mix."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from ragassay.errors import CollectionDeleted
from ragassay.index.embedding import Embedded, embed_chunks
from ragassay.index.inputs import IndexInputs, read_index_inputs, release_index_inputs, snapshot_in_use, staging_folder
from ragassay.ingest.documents import index_input_digest
from ragassay.search.dense import Embedder, EmbeddingModelSpec
from ragassay.search.lexical import STEMMER_LANGUAGE, STOPWORDS, TOKENIZE_BATCH, LexicalIndex
from ragassay.store.schemas import CHUNKS, DOCUMENTS
from ragassay.store.tables import (
    read_column_batches,
    write_json,
)
from ragassay.store.workspace import (
    INDEX_FORMAT_VERSION,
    CollectionPaths,
    remove_leftovers,
)


class IndexReport(BaseModel):
    """What one index build did and cost."""

    collection: str
    chunks: int
    embedding_model_id: str
    embedded: int
    reused_embeddings: int
    index_digest: str
    seconds_embedding: float
    seconds_bm25: float

    def run_metrics(self) -> dict[str, float]:
        """What a pipeline's index run logs as metrics: what was embedded or reused, and the time."""
        return self.model_dump(include={"chunks", "embedded", "reused_embeddings", "seconds_embedding", "seconds_bm25"})

    def run_params(self) -> dict[str, str]:
        """What a pipeline's index run logs as params: which model embedded, and the index's digest."""
        return {"embedding_model": self.embedding_model_id, "index_digest": self.index_digest}


@dataclass(frozen=True)
class Staged:
    """A staging folder holding the new BM25 indexes, and the seconds building them took."""

    folder: Path
    seconds: float


def build_bm25_indexes(inputs: IndexInputs) -> Staged:
    """BM25 over the chunk texts and over whole document texts, each in table order, written into
    a new staging folder. The texts are read from the snapshot as they are tokenized, a batch at a
    time; one index is built and written before the other is begun."""
    started = time.perf_counter()
    staging = staging_folder(inputs.paths)
    for table, spec, folder in (
        (inputs.snapshot.chunks, CHUNKS, "bm25"),
        (inputs.snapshot.documents, DOCUMENTS, "bm25_documents"),
    ):
        snapshot_in_use(inputs.snapshot)
        texts = read_column_batches(table, spec, "text", TOKENIZE_BATCH) if table.exists() else iter(())
        LexicalIndex.build_from_batches(texts).save(staging / folder)
    return Staged(staging, time.perf_counter() - started)


def index_report(inputs: IndexInputs, embedded: Embedded, staged: Staged, manifest: dict) -> IndexReport:
    """The report of a build swapped in."""
    return IndexReport(
        collection=inputs.paths.name,
        chunks=inputs.chunks.height,
        embedding_model_id=inputs.spec.model_id,
        embedded=embedded.embedded,
        reused_embeddings=embedded.reused,
        index_digest=manifest["index_digest"],
        seconds_embedding=round(embedded.seconds, 3),
        seconds_bm25=round(staged.seconds, 3),
    )


def build_index(
    home: Path,
    collection: str,
    embedder_for: Callable[[EmbeddingModelSpec], Embedder],
    embedding_model: str,
    batch_size: int = 64,
    group_rows: int = 4096,
) -> IndexReport:
    """Index a collection in this process: what the index flow does with its embedding groups fanned
    out on a task runner (flows/index.py), for library callers and tests that do not run Prefect.
    embedder_for: the loaded embedder of a model spec (Embedders.get, so a caller loads it once)."""
    inputs = read_index_inputs(home, collection, embedding_model)
    try:
        embedded = embed_chunks(inputs, embedder_for(inputs.spec), batch_size, group_rows)
        staged = build_bm25_indexes(inputs)
        manifest = index_manifest(inputs, embedded.dimension, datetime.now(UTC))
        swap_in_index(inputs.paths, staged.folder, manifest)
        return index_report(inputs, embedded, staged, manifest)
    finally:
        release_index_inputs(inputs.snapshot)


def index_digest(input_digest: str, model_id: str) -> str:
    """Identity of an index: its input documents and chunks, embedding model and lexical settings."""
    key = f"{INDEX_FORMAT_VERSION}|{input_digest}|{model_id}|bm25s:{STOPWORDS}:{STEMMER_LANGUAGE}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def index_manifest(inputs: IndexInputs, dimension: int, built_at: datetime) -> dict:
    """What the manifest records: sizes, the digests that identify the index, the models used."""
    input_digest = index_input_digest(inputs.documents, inputs.chunks)
    return {
        "built_at": built_at.isoformat(),
        "chunks": inputs.chunks.height,
        "documents": inputs.documents.height,
        "input_digest": input_digest,
        "index_digest": index_digest(input_digest, inputs.spec.model_id),
        "embedding_model": inputs.embedding_model,
        "embedding_model_id": inputs.spec.model_id,
        "dimension": dimension,
        # A served model's vector of the probe text, compared at every later use (search/dense.py).
        **({"probe_vector": list(inputs.spec.probe_vector)} if inputs.spec.probe_vector else {}),
        "lexical": {"stopwords": STOPWORDS, "stemmer": STEMMER_LANGUAGE},
    }


def swap_in_index(paths: CollectionPaths, staging: Path, manifest: dict) -> None:
    """Write the manifest into the staging folder, then swap the staging folder in whole.
    CollectionDeleted when the collection was deleted while the index was built (its staging
    folder went with it): nothing is swapped into a folder the delete would have to recreate."""
    deleted = CollectionDeleted(
        f"collection {paths.name!r} was deleted while its index was built: nothing was swapped in"
    )
    # write_json makes missing folders: it must not make the deleted collection's folder again.
    if not staging.is_dir():
        raise deleted
    write_json(staging / "manifest.json", {"format_version": INDEX_FORMAT_VERSION, **manifest})
    with paths.write_lock():
        if not paths.documents.exists():
            # Deleted between the check and the lock: take away what the manifest's write made.
            shutil.rmtree(staging, ignore_errors=True)
            with contextlib.suppress(OSError):
                paths.root.rmdir()
            raise deleted
        _swap_in(staging, paths.index_dir)
        remove_leftovers(paths.root, keep=staging)


def _swap_in(staging: Path, target: Path) -> None:
    """Replace target by staging; readers see the old or the new index, never a mix of files."""
    retired = target.with_name(f".{target.name}-retired")
    shutil.rmtree(retired, ignore_errors=True)
    if target.exists():
        target.rename(retired)
    staging.rename(target)
    shutil.rmtree(retired, ignore_errors=True)
