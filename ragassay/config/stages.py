"""The settings of the stages before evaluation: ingest (with its chunking), index and golden-set
generation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from ragassay.config.common import DEFAULT_EMBEDDING_MODEL, DEFAULT_GENERATION_MODEL, OneCollection, OnTaskRunner
from ragassay.fields import Frozen
from ragassay.llm.settings import DEFAULT_JUDGE, ChatModelConfig
from ragassay.search.served_settings import ServedEmbeddingModel


class ChunkingConfig(Frozen):
    """How documents are cut into chunks (characters)."""

    chunk_size: int = Field(1200, ge=100, le=20_000, description="Most characters in one chunk.")
    chunk_overlap: int = Field(150, ge=0, description="Characters a chunk repeats from the previous one.")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self


# Files one extraction task reads: enough that starting its extraction worker is a small part of
# the task, few enough that a large ingest shows progress per task and spreads over the workers.
FILES_PER_TASK = 500


# Chunk texts one embedding task embeds: 4,096 x 384 float32 vectors are 6 MB, what a task holds.
CHUNKS_PER_TASK = 4096


class IngestSettings(Frozen):
    """What is ingested and how it is chunked (unchanged files keep their documents; see
    ingest/documents.py). files_per_task: files one extraction task reads (with one extraction
    worker process) on the task runner."""

    paths: tuple[Path, ...] = Field((), description="Files or folders to ingest (folders searched recursively).")
    chunking: ChunkingConfig = Field(ChunkingConfig(), description="How documents are cut into chunks.")
    files_per_task: int = Field(FILES_PER_TASK, ge=1, description="Files one extraction task reads on the task runner.")


class IngestConfig(OneCollection, IngestSettings, OnTaskRunner):
    """One `ragassay ingest` run."""

    format: Literal["files", "beir"] = Field(
        "files", description="files, or beir (corpus.jsonl, queries.jsonl, qrels/test.tsv)."
    )
    doc_id: str | None = Field(
        None, description="Document id for a single file (default: its path relative to the ingest root)."
    )

    @model_validator(mode="after")
    def _paths_given(self) -> IngestConfig:
        if not self.paths:
            raise ValueError("paths: give the files or folders to ingest")
        if self.doc_id is not None and (len(self.paths) != 1 or self.paths[0].is_dir()):
            raise ValueError("doc_id can be given only when ingesting exactly one file")
        if self.format == "beir" and len(self.paths) != 1:
            raise ValueError("format 'beir' takes exactly one dataset folder")
        return self


class IndexSettings(Frozen):
    """How a collection is indexed (embeddings come from the cache when a chunk is unchanged).
    chunks_per_task: chunk texts one embedding task embeds on the task runner (and one row group
    of the embedding cache holds); batch_size: texts per model call within it."""

    embedding_model: str | ServedEmbeddingModel = Field(
        DEFAULT_EMBEDDING_MODEL,
        description="fastembed model name, a folder with model.onnx and tokenizer files, or a served model "
        '(a mapping, or its JSON: {"backend": "openai" or "ollama", "url": ..., "model": ...}).',
    )
    batch_size: int = Field(64, ge=1, le=4096, description="Chunks embedded per batch.")
    chunks_per_task: int = Field(
        CHUNKS_PER_TASK, ge=1, description="Chunk texts one embedding task embeds on the task runner."
    )

    @field_validator("embedding_model", mode="before")
    @classmethod
    def _served_from_json(cls, value):
        """A served model given as JSON text (the CLI's --embedding-model '{"backend": ...}')."""
        if isinstance(value, str) and value.lstrip().startswith("{"):
            return json.loads(value)  # a JSONDecodeError is a ValueError: the error names the field
        return value


class IndexConfig(OneCollection, IndexSettings, OnTaskRunner):
    """One `ragassay index` run."""


class GenerateSettings(Frozen):
    """Seeded golden-set generation through the quality gate.

    count: questions wanted (dialogues, with `dialogues`); at most max_attempts_factor × count
    pages are tried, so the work stays bounded when the model writes few acceptable ones. seed
    None: one is drawn and reported.
    """

    count: int = Field(
        10, ge=1, le=10_000, description="Questions (or dialogues) wanted; at most 3 pages are tried per one."
    )
    dialogues: bool = Field(False, description="Write dialogues of `turns` turns instead of single questions.")
    turns: int = Field(3, ge=2, le=6, description="Turns of a generated dialogue.")
    seed: int | None = Field(None, description="Sampling seed; a random one is drawn and printed when omitted.")
    model: ChatModelConfig = Field(DEFAULT_GENERATION_MODEL, description="The chat model that writes the questions.")
    max_attempts_factor: int = Field(3, ge=1, le=100, description="Pages tried per question wanted, at most.")
    temperature: float = Field(0.3, ge=0.0, le=2.0, description="Sampling temperature of the questions.")


class GenerateConfig(OneCollection, GenerateSettings):
    """One `ragassay golden generate` run."""

    # Checks that each accepted answer is supported by its page (the quality gate's judged check).
    judge: ChatModelConfig = DEFAULT_JUDGE
    # False: generate `count` more questions from pages not tried yet. True (the pipeline): `count`
    # is what this seed, model and prompt should have produced in all; only the rest is generated.
    count_is_total: bool = False

    def chat_models(self) -> list[ChatModelConfig]:
        """The chat models this run calls (llm/registry.locate_models checks them first)."""
        return [self.model, self.judge]
