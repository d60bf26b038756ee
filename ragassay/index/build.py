"""Building a collection's index: chunk embeddings through the embedding cache, BM25 over chunks and
over whole documents, all written into a staging folder that is swapped in whole with its
manifest, so readers see the old index or the new one, never a mix."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path

import polars as pl
from pydantic import BaseModel

from ragassay.environment import models_dir
from ragassay.errors import CollectionDeleted, InconsistentCollection, IndexMissing, TableDamaged
from ragassay.ingest.documents import check_consistent, index_input_digest
from ragassay.progress import ProgressReporter
from ragassay.search.dense import Embedder, EmbeddingModelSpec, resolve_model
from ragassay.search.lexical import STEMMER_LANGUAGE, STOPWORDS, TOKENIZE_BATCH, LexicalIndex
from ragassay.store.schemas import CHUNKS, DOCUMENTS, embeddings_spec
from ragassay.store.tables import (
    read_column_batches,
    read_row_groups,
    read_table,
    write_json,
    write_table,
    write_table_in_groups,
)
from ragassay.store.workspace import (
    INDEX_FORMAT_VERSION,
    CollectionPaths,
    collection_paths,
    link_tables,
    load_chunks,
    load_documents,
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


@dataclass(frozen=True)
class Embedded:
    """Texts embedded now, texts taken from the cache, the vector width, and the seconds it took."""

    embedded: int
    reused: int
    dimension: int
    seconds: float


@dataclass(frozen=True)
class EmbeddingWork:
    """What an index build embeds: the collection's distinct chunk texts (text_sha256), and those
    the embedding cache lacks for the model, in groups of at most group_rows (their text_sha256),
    each embedded on its own (by a task of its own in the index flow, which reads the group's
    texts from the build's snapshot) and written as row groups."""

    texts: pl.Series
    groups: tuple[pl.DataFrame, ...]  # text_sha256 only: each group's texts are read where it is embedded
    model_id: str
    planned_at: float  # time.time(), for the seconds the embedding took, across processes
    # Where the index flow's tasks write each group's rows. It outlives a build that stops before
    # the cache is written (a killed process, a server that went away), so the next build of the
    # same model takes the groups that finished instead of embedding them again (`resumed`).
    parts_folder: Path
    # Parts of an earlier build of this model, and the texts taken from them (none in the cache).
    resumed: tuple[Path, ...] = ()
    resumed_texts: pl.Series | None = None

    @property
    def missing(self) -> int:
        return sum(group.height for group in self.groups)

    @property
    def writes(self) -> bool:
        """Whether the cache gains rows: groups to embed, or groups an earlier build embedded."""
        return bool(self.missing or self.resumed)

    def part(self, number: int) -> Path:
        return self.parts_folder / f"group-{self.planned_at * 1000:.0f}-{number:06d}.parquet"


def plan_embedding(
    paths: CollectionPaths, chunks: pl.DataFrame, spec: EmbeddingModelSpec, group_rows: int
) -> EmbeddingWork:
    """The chunk texts to embed for this model: those whose digest the cache lacks (read without
    its vectors). Only digests: no text is read here."""
    planned_at = time.time()
    texts = chunks.select("text_sha256").unique("text_sha256", keep="first", maintain_order=True)
    missing = texts
    if paths.embeddings.exists():
        cached = (
            pl.scan_parquet(paths.embeddings)
            .filter(pl.col("model_id") == spec.model_id)
            .select("text_sha256")
            .collect()
        )
        missing = texts.join(cached, on="text_sha256", how="anti", maintain_order="left")
    parts_folder = paths.root / EMBEDDING_PARTS
    resumed, resumed_texts = _finished_parts(parts_folder, spec.model_id, missing["text_sha256"])
    missing = missing.filter(~pl.col("text_sha256").is_in(resumed_texts.implode()))
    groups = tuple(missing.slice(start, group_rows) for start in range(0, missing.height, group_rows))
    return EmbeddingWork(texts["text_sha256"], groups, spec.model_id, planned_at, parts_folder, resumed, resumed_texts)


# A collection's folder of embedded groups not yet in its embedding cache (EmbeddingWork.parts_folder).
EMBEDDING_PARTS = ".embedding-parts"


def _finished_parts(folder: Path, model_id: str, wanted: pl.Series) -> tuple[tuple[Path, ...], pl.Series]:
    """The parts an earlier build of this model left (each written whole, by write_table) that hold
    texts still wanted, and those texts. A part of another model, or one that cannot be read, is
    passed over (the next complete build removes the folder)."""
    parts, found = [], []
    for part in sorted(folder.glob("group-*.parquet")) if folder.is_dir() else ():
        try:
            rows = pl.read_parquet(part, columns=["text_sha256", "model_id"])
        except (OSError, pl.exceptions.PolarsError):
            continue
        if rows.height and (rows["model_id"] == model_id).all():
            useful = rows["text_sha256"].filter(rows["text_sha256"].is_in(wanted.implode()))
            if useful.len():
                parts.append(part)
                found.append(useful)
    texts = pl.concat(found).unique(maintain_order=True) if found else pl.Series("text_sha256", [], pl.String)
    return tuple(parts), texts


def resumed_rows(work: EmbeddingWork) -> Iterator[pl.DataFrame]:
    """The rows of the parts an earlier build left, each text once, one part at a time."""
    taken: set[str] = set()
    for frame in read_embedded_parts(work.resumed):
        frame = frame.filter(
            pl.col("text_sha256").is_in(work.resumed_texts.implode()) & ~pl.col("text_sha256").is_in(list(taken))
        )
        taken.update(frame["text_sha256"].to_list())
        yield frame


def read_group_texts(snapshot: CollectionPaths, group: pl.DataFrame) -> pl.DataFrame:
    """The texts of one group's digests (text_sha256, text), in the group's order, from the
    snapshot's chunks table, read a row group at a time (only the group's texts are kept)."""
    chunks = snapshot_in_use(snapshot).chunks
    texts = (
        pl.scan_parquet(chunks)
        .select("text_sha256", "text")
        .filter(pl.col("text_sha256").is_in(group["text_sha256"].implode()))
        .unique("text_sha256", keep="any")
        .collect(engine="streaming")
    )
    found = group.select("text_sha256").join(texts, on="text_sha256", how="left", maintain_order="left")
    if found["text"].null_count():
        raise InconsistentCollection(
            f"the index build's snapshot {chunks} lacks texts it planned to embed: run `ragassay index` again"
        )
    return found


def embed_group(
    embedder: Embedder,
    snapshot: CollectionPaths,
    group: pl.DataFrame,
    batch_size: int,
    on_progress: Callable[[int, int], None] | None = None,
) -> pl.DataFrame:
    """The embedding cache's rows for one group of texts (text_sha256, model_id, vector), its texts
    read from the build's snapshot."""
    group = read_group_texts(snapshot, group)
    vectors = embedder.embed(group["text"].to_list(), batch_size, on_progress)
    return pl.DataFrame(
        {
            "text_sha256": group["text_sha256"],
            "model_id": pl.Series([embedder.spec.model_id] * group.height, dtype=pl.String),
            "vector": pl.Series("vector", vectors, dtype=pl.Array(pl.Float32, vectors.shape[1])),
        }
    )


def store_embeddings(
    paths: CollectionPaths, work: EmbeddingWork, embedded: Iterable[pl.DataFrame], dimension: int | None
) -> Embedded:
    """Write the new embedding cache, one row group at a time: the kept vectors of current texts,
    then each group of new ones as it comes (only one group is in memory); it replaces the old
    cache under the collection's write lock when complete. Rewritten only when something changed.

    The cache holds one vector width: rows of a model with another width are dropped. dimension:
    the model's, when known before embedding (a local ONNX folder does not say).
    """
    embedded = chain(resumed_rows(work), embedded)
    # The first new group tells the width the kept rows must have.
    first = next(embedded, None) if work.writes else None
    cached_dimension = pl.read_parquet_schema(paths.embeddings)["vector"].size if paths.embeddings.exists() else None
    dimension = first.schema["vector"].size if first is not None else cached_dimension or dimension or 0
    keeps_cache = cached_dimension == dimension
    if work.writes or not keeps_cache or _holds_other_texts(paths.embeddings, work.texts):
        # The cache's current rows are read a row group at a time as they are written on.
        kept = _cache_rows_of(paths.embeddings, dimension, work.texts) if keeps_cache else iter(())
        frames = chain(kept, [first] if first is not None else [], embedded)
        write_table_in_groups(frames, paths.embeddings, embeddings_spec(dimension), replace_under=paths.write_lock())
    return Embedded(work.missing, work.texts.len() - work.missing, dimension, time.time() - work.planned_at)


def write_embedded_part(rows: pl.DataFrame, path: Path) -> Path:
    """One group's rows of the embedding cache, in a file of their own (EmbeddingWork.part)."""
    return write_table(rows, path, embeddings_spec(rows.schema["vector"].size))


def read_embedded_parts(parts: Iterable[Path]) -> Iterator[pl.DataFrame]:
    """The groups' rows, one file at a time."""
    for part in parts:
        yield read_table(part, embeddings_spec(pl.read_parquet_schema(part)["vector"].size))


def embed_chunks(inputs: IndexInputs, embedder: Embedder, batch_size: int, group_rows: int) -> Embedded:
    """Embed the chunk texts the cache lacks for this model, a group at a time in this process,
    and prune the cache to current texts (plan_embedding, embed_group, store_embeddings)."""
    paths = inputs.paths
    work = plan_embedding(paths, inputs.chunks, embedder.spec, group_rows)
    with ProgressReporter(f"embedding {work.missing} chunks", total=work.missing) as progress:

        def embedded_groups():
            offset = 0
            for group in work.groups:
                yield embed_group(
                    embedder,
                    inputs.snapshot,
                    group,
                    batch_size,
                    lambda finished, _, offset=offset: progress(offset + finished, work.missing),
                )
                offset += group.height

        embedded = store_embeddings(paths, work, embedded_groups(), embedder.spec.dimension)
    if work.resumed:  # the parts an earlier build left are in the cache now
        shutil.rmtree(work.parts_folder, ignore_errors=True)
    return embedded


def _holds_other_texts(cache: Path, texts: pl.Series) -> bool:
    """Whether the cache has rows of texts the collection no longer holds (read without vectors)."""
    cached = pl.scan_parquet(cache).select("text_sha256").collect()["text_sha256"]
    return bool((~cached.is_in(texts.implode())).any())


def _cache_rows_of(cache: Path, dimension: int, texts: pl.Series) -> Iterator[pl.DataFrame]:
    """The cache's rows of these texts, a row group at a time."""
    for group in read_row_groups(cache, embeddings_spec(dimension)):
        yield group.filter(pl.col("text_sha256").is_in(texts.implode()))


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


def staging_folder(paths: CollectionPaths) -> Path:
    return paths.root / f".index-{datetime.now(UTC):%Y%m%dT%H%M%S%f}"


def _swap_in(staging: Path, target: Path) -> None:
    """Replace target by staging; readers see the old or the new index, never a mix of files."""
    retired = target.with_name(f".{target.name}-retired")
    shutil.rmtree(retired, ignore_errors=True)
    if target.exists():
        target.rename(retired)
    staging.rename(target)
    shutil.rmtree(retired, ignore_errors=True)
