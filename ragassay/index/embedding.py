"""A collection's chunk embeddings: the work planned in groups (EmbeddingWork), each group embedded
and written as a part (resumable: a finished part is not embedded again), the parts stored through
the embedding cache keyed by text digest and model."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import polars as pl

from ragassay.errors import InconsistentCollection
from ragassay.index.inputs import IndexInputs, snapshot_in_use
from ragassay.progress import ProgressReporter
from ragassay.search.dense import Embedder, EmbeddingModelSpec
from ragassay.store.schemas import embeddings_spec
from ragassay.store.tables import (
    read_row_groups,
    read_table,
    write_table,
    write_table_in_groups,
)
from ragassay.store.workspace import (
    CollectionPaths,
)


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
