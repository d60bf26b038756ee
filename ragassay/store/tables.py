"""Reading and writing canonical tables as Parquet: validated on load, written atomically."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from itertools import chain
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from ragassay.errors import TableDamaged, TableSchemaError
from ragassay.store.schemas import TableSpec
from ragassay.work_parts import streamed_parts

_METADATA_KEY = b"ragassay"
# Every data page carries a CRC32 of its bytes, verified on every read: a damaged page is an error
# naming the file, never changed values read as stored (Parquet's footer alone holds no checksum).
# Tables written before checksums were written read as before.
_WRITE_OPTIONS = {"compression": "zstd", "write_page_checksum": True}
# How each table is made again when it is damaged, for the error that names it.
_REPAIRS = {
    "documents": "run `ragassay ingest` on the collection's sources again",
    "chunks": "run `ragassay ingest` on the collection's sources again, then `ragassay index`",
    "embeddings": "delete it (it is a cache) and run `ragassay index` again",
    "golden": "restore it from a copy, or add the golden file again (`ragassay golden add`)",
}


def write_table(frame: pl.DataFrame, path: Path, spec: TableSpec) -> Path:
    """Write frame as spec's table: columns cast and ordered by the schema, then an atomic rename."""
    arrow = _as_table(frame, path, spec)
    atomic_write(path, lambda handle: pq.write_table(arrow, handle, **_WRITE_OPTIONS))
    return path


def write_table_in_groups(
    frames: Iterable[pl.DataFrame], path: Path, spec: TableSpec, replace_under: AbstractContextManager | None = None
) -> Path:
    """Write spec's table one frame at a time, each frame its own row groups, so that only one
    frame is in memory at a time (frames may be made as they are written); then an atomic rename,
    under replace_under (a lock) when given. An empty iterable writes an empty table."""

    def write(handle) -> None:
        with pq.ParquetWriter(handle, _as_table(spec.empty(), path, spec).schema, **_WRITE_OPTIONS) as writer:
            for frame in frames:
                if frame.height:
                    writer.write_table(_as_table(frame, path, spec))

    atomic_write(path, write, replace_under)
    return path


def _as_table(frame: pl.DataFrame, path: Path, spec: TableSpec):
    """frame as an Arrow table of spec: columns cast and ordered by the schema, marked with the
    table's name and version."""
    missing = [name for name in spec.schema if name not in frame.columns]
    if missing:
        raise TableSchemaError(f"{spec.name} table for {path} lacks columns {missing}")
    arrow = frame.select([pl.col(name).cast(dtype) for name, dtype in spec.schema.items()]).to_arrow()
    marker = json.dumps({"table": spec.name, "version": spec.version}).encode()
    return arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), _METADATA_KEY: marker})


def read_table(path: Path, spec: TableSpec, columns: list[str] | None = None) -> pl.DataFrame:
    """Read spec's table from path, refusing a file of another table, version or schema."""
    _check_marker(path, spec)
    with _damage_named(path, spec):
        # ParquetFile, not pq.read_table: read_table goes through pyarrow.dataset, which imports
        # pandas (half a second of every command that reads a table).
        arrow = pq.ParquetFile(path, page_checksum_verification=True).read(columns=columns)
    return _checked_columns(pl.from_arrow(arrow), path, spec, columns)


def read_row_groups(path: Path, spec: TableSpec) -> Iterator[pl.DataFrame]:
    """spec's table at path one row group at a time, checked as read_table checks it: a table far
    larger than memory can be filtered and written on."""
    _check_marker(path, spec)
    file = pq.ParquetFile(path, page_checksum_verification=True)
    for group in range(file.num_row_groups):
        with _damage_named(path, spec):
            arrow = file.read_row_group(group)
        yield _checked_columns(pl.from_arrow(arrow), path, spec, None)


def read_column_batches(path: Path, spec: TableSpec, column: str, batch_size: int) -> Iterator[list]:
    """One column of spec's table at path as Python lists of at most batch_size values, in table
    order, read as they are taken: a column of every text is never held at once."""
    _check_marker(path, spec)
    if column not in spec.schema:
        raise TableSchemaError(f"{spec.name} table has no column {column!r}")
    # Row group by row group: ParquetFile.iter_batches held about three times as much of the file
    # (190 MB against 59 MB for the texts of 146,432 chunks).
    file = pq.ParquetFile(path, page_checksum_verification=True)

    def group_values(group: int) -> list:
        with _damage_named(path, spec):
            return file.read_row_group(group, columns=[column]).column(0).to_pylist()

    values = (group_values(group) for group in range(file.num_row_groups))
    yield from streamed_parts(chain.from_iterable(values), batch_size)


def _repair(spec: TableSpec) -> str:
    return _REPAIRS.get(spec.name, "restore it from a copy, or run again the command that wrote it")


@contextmanager
def _damage_named(path: Path, spec: TableSpec) -> Iterator[None]:
    """TableDamaged naming the file and its repair for any error reading its pages."""
    try:
        yield
    except FileNotFoundError:
        raise
    except Exception as error:  # pyarrow raises OSError, ArrowInvalid and others for damaged bytes
        raise TableDamaged(f"{path} is damaged ({type(error).__name__}: {error}); {_repair(spec)}") from error


def _check_marker(path: Path, spec: TableSpec) -> None:
    """TableSchemaError unless path is a Parquet file marked as spec's table and version."""
    try:
        metadata = pq.read_schema(path).metadata or {}
    except FileNotFoundError:
        raise
    except Exception as error:  # pyarrow raises several unrelated types for a damaged file
        raise TableDamaged(f"{path} is not a readable Parquet file ({error}); {_repair(spec)}") from error
    marker = json.loads(metadata.get(_METADATA_KEY, b"{}"))
    if marker.get("table") != spec.name or marker.get("version") != spec.version:
        raise TableSchemaError(
            f"{path} holds table {marker.get('table')!r} version {marker.get('version')!r}; "
            f"expected {spec.name!r} version {spec.version}"
        )


def _checked_columns(frame: pl.DataFrame, path: Path, spec: TableSpec, columns: list[str] | None) -> pl.DataFrame:
    expected = {name: spec.schema[name] for name in (columns or list(spec.schema))}
    if dict(frame.schema) != expected:
        raise TableSchemaError(f"{path} has columns {dict(frame.schema)}; expected {expected}")
    return frame


def read_table_or_empty(path: Path, spec: TableSpec) -> pl.DataFrame:
    """The table at path, or an empty one with spec's schema when the file does not exist yet."""
    return read_table(path, spec) if path.exists() else spec.empty()


def write_json(path: Path, value: object) -> Path:
    """Write a small JSON document atomically."""
    payload = json.dumps(value, indent=2, sort_keys=True).encode()
    atomic_write(path, lambda handle: handle.write(payload))
    return path


def copy_if_absent(source: Path, target: Path) -> bool:
    """Copy source to target, whole or not at all, when target does not exist and source does (a
    set-up template into a new store); False when nothing was copied. The caller holds the
    target's lock, so that two processes do not both copy."""
    if target.exists() or not source.is_file():
        return False
    with source.open("rb") as copied:
        atomic_write(target, lambda handle: shutil.copyfileobj(copied, handle))
    return True


def atomic_write(path: Path, write, replace_under: AbstractContextManager | None = None) -> None:
    """Call write(binary handle) on a temporary file beside path, then rename it over path (under
    replace_under, a lock, when given: the writing need not hold it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Not a `with` block: the file must outlive the handle, renamed or removed below.
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", delete=False)  # noqa: SIM115
    try:
        with handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        with replace_under or nullcontext():
            os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
