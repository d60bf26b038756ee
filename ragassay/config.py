"""One frozen, validated config object per run. Invalid values fail before any work is done."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragassay.errors import ConfigError

DEFAULT_HOME = Path.home() / ".ragassay"
COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2-int8"

SearchMode = Literal["fulltext", "semantic", "hybrid"]
SEARCH_MODES: tuple[str, ...] = ("fulltext", "semantic", "hybrid")


def workspace_home() -> Path:
    """The workspace root: $RAGASSAY_HOME, or ~/.ragassay when it is unset."""
    return Path(os.environ.get("RAGASSAY_HOME") or DEFAULT_HOME).expanduser().resolve()


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _check_collection(name: str) -> str:
    if not COLLECTION_NAME.match(name):
        raise ValueError(
            f"collection name {name!r} must be 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


class ChunkingConfig(_Frozen):
    """How documents are cut into chunks (characters)."""

    chunk_size: int = Field(1200, ge=100, le=20_000)
    chunk_overlap: int = Field(150, ge=0)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> "ChunkingConfig":
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self


class IngestConfig(_Frozen):
    """One `ragassay ingest` run."""

    collection: str
    paths: tuple[Path, ...] = Field(min_length=1)
    format: Literal["files", "beir"] = "files"
    chunking: ChunkingConfig = ChunkingConfig()
    doc_id: str | None = None
    home: Path = Field(default_factory=workspace_home)

    _collection = field_validator("collection")(_check_collection)

    @model_validator(mode="after")
    def _doc_id_needs_one_file(self) -> "IngestConfig":
        if self.doc_id is not None and (len(self.paths) != 1 or self.paths[0].is_dir()):
            raise ValueError("doc_id can be given only when ingesting exactly one file")
        if self.format == "beir" and len(self.paths) != 1:
            raise ValueError("format 'beir' takes exactly one dataset folder")
        return self


class IndexConfig(_Frozen):
    """One `ragassay index` run. embedding_model: a fastembed model name or a local ONNX folder."""

    collection: str
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    batch_size: int = Field(64, ge=1, le=4096)
    home: Path = Field(default_factory=workspace_home)

    _collection = field_validator("collection")(_check_collection)


class SearchConfig(_Frozen):
    """How one search runs: mode, depth, fusion and filters.

    depth: how many documents each retriever contributes before fusion (hybrid) and the most a
    search returns. rrf_k: the constant of reciprocal-rank fusion.
    """

    mode: SearchMode = "hybrid"
    k: int = Field(10, ge=1, le=10_000)
    depth: int = Field(100, ge=1, le=100_000)
    rrf_k: int = Field(60, ge=1)
    content_types: tuple[str, ...] = ()
    path_glob: str | None = None


def parse_config(model: type[BaseModel], **values) -> BaseModel:
    """Build a config, turning pydantic's error into a ConfigError that names each bad field."""
    try:
        return model(**values)
    except ValidationError as error:
        problems = []
        for item in error.errors():
            field = ".".join(str(part) for part in item["loc"]) or model.__name__
            problems.append(f"{field}: {item['msg']}")
        raise ConfigError("invalid configuration: " + "; ".join(problems)) from None
