"""One frozen, validated config object per run. Invalid values fail before any work is done.

- common: what every stage's config shares (the collections, the task runner, default models).
- stages: ingest (with its chunking), index and golden-set generation.
- evaluation: retrieval and answer evaluation, with the configurations they compare.
- pipeline: the pipeline file (`ragassay run`), a section per stage, and assertions routed.

Every config is importable from here, as `ragassay.config.IndexConfig`.
"""

from __future__ import annotations

from ragassay.config.common import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_GENERATION_MODEL,
    OneCollection,
    OnTaskRunner,
    SomeCollections,
    TaskRunnerConfig,
    workspace_home,
)
from ragassay.config.evaluation import (
    DEFAULT_KS,
    AnswerEvalConfig,
    AnswerEvalSettings,
    AnyAnswerConfiguration,
    AnyRetrievalConfiguration,
    MaxDialogues,
    MaxQuestions,
    RetrievalConfiguration,
    RetrievalEvalConfig,
    RetrievalSettings,
)
from ragassay.config.pipeline import (
    PIPELINE_STAGES,
    PipelineAnswers,
    PipelineConfig,
    PipelineGolden,
    PipelineIndex,
    PipelineIngest,
    PipelineRetrieval,
    route_assertions,
)
from ragassay.config.stages import (
    CHUNKS_PER_TASK,
    FILES_PER_TASK,
    ChunkingConfig,
    GenerateConfig,
    GenerateSettings,
    IndexConfig,
    IndexSettings,
    IngestConfig,
    IngestSettings,
)

__all__ = [
    "CHUNKS_PER_TASK",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_GENERATION_MODEL",
    "DEFAULT_KS",
    "FILES_PER_TASK",
    "PIPELINE_STAGES",
    "AnswerEvalConfig",
    "AnswerEvalSettings",
    "AnyAnswerConfiguration",
    "AnyRetrievalConfiguration",
    "ChunkingConfig",
    "GenerateConfig",
    "GenerateSettings",
    "IndexConfig",
    "IndexSettings",
    "IngestConfig",
    "IngestSettings",
    "MaxDialogues",
    "MaxQuestions",
    "OnTaskRunner",
    "OneCollection",
    "PipelineAnswers",
    "PipelineConfig",
    "PipelineGolden",
    "PipelineIndex",
    "PipelineIngest",
    "PipelineRetrieval",
    "RetrievalConfiguration",
    "RetrievalEvalConfig",
    "RetrievalSettings",
    "SomeCollections",
    "TaskRunnerConfig",
    "route_assertions",
    "workspace_home",
]
