"""One frozen, validated config object per run. Invalid values fail before any work is done."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from ragassay.answer.settings import AnswerConfiguration
from ragassay.fields import LABEL, Frozen, check_collection, check_collections, unique_labels
from ragassay.gates.assertions import (
    COVERAGE,
    coverage_label,
    is_answer_assertion,
    parse_answer_assertion,
    parse_assertion,
)
from ragassay.llm.settings import DEFAULT_JUDGE, ChatModelConfig
from ragassay.metrics.names import ANSWER_METRICS, MetricName, standard_metrics
from ragassay.search.served_embeddings import ServedEmbeddingModel
from ragassay.search.settings import SEARCH_TYPES, SearchSettings, SearchType
from ragassay.store.workspace import collection_paths, workspace_home
from ragassay.systems.settings import SystemConfiguration

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2-int8"
# Generation writes with the judge's model: on the sample corpus it wrote 10 acceptable questions
# in 18 pages where SmolLM2 managed 3 in 20 (BENCHMARKS.md, "Golden-set generation").
DEFAULT_GENERATION_MODEL = DEFAULT_JUDGE


class TaskRunnerConfig(Frozen):
    """Where a flow's fanned-out tasks run (one per retrieval configuration).

    threads (default): a pool of `workers` threads (default 1) in the flow's own process, so each
    configuration's search time is its own. dask: Dask worker processes, those of a running
    scheduler (`address: tcp://host:8786`) or of a LocalCluster of `workers` processes (default 2)
    started for the flow and stopped after it. Each worker process loads its own indexes and models
    (tasks/resources.py); an in-process chat model is one per worker process, so answering and
    judging scale through a model server (a model with backend openai), not more workers.
    """

    kind: Literal["threads", "dask"] = Field("threads", description="threads (in this process) or dask.")
    address: str | None = Field(None, description="A running Dask scheduler's address (tcp://host:8786).")
    workers: int | None = Field(
        None, ge=1, le=1024, description="Threads, or the processes of a local Dask cluster (default 1 / 2)."
    )

    @model_validator(mode="after")
    def _address_for_dask(self) -> TaskRunnerConfig:
        if self.address is not None and self.kind != "dask":
            raise ValueError("task_runner.address is a Dask scheduler's address: set kind: dask with it")
        if self.address is not None and self.workers is not None:
            raise ValueError(
                "task_runner: give a Dask scheduler's address or a number of workers for a local cluster, not both"
            )
        return self


# What a run is given besides its stage's settings: a pipeline provides these to every stage.


class OneCollection(Frozen):
    """A run over one collection of a workspace."""

    collection: str = Field(description="The collection's name.")
    home: Path = Field(
        default_factory=workspace_home, description="The workspace ($RAGASSAY_HOME, default ~/.ragassay)."
    )

    _collection = field_validator("collection")(check_collection)

    def check_stored(self) -> None:
        """CollectionNotFound, naming the workspace's collections, unless the collection is there:
        a command checks it before it starts any work (or a Prefect server)."""
        collection_paths(self.home, self.collection)


class SomeCollections(Frozen):
    """A run over the golden sets of one or more collections of a workspace."""

    collections: tuple[str, ...] = Field(min_length=1)
    home: Path = Field(default_factory=workspace_home)

    _collections = field_validator("collections")(check_collections)

    def check_stored(self) -> None:
        """CollectionNotFound for the first collection that is not there (see OneCollection)."""
        for name in self.collections:
            collection_paths(self.home, name)


class OnTaskRunner(Frozen):
    task_runner: TaskRunnerConfig = Field(
        TaskRunnerConfig(), description="Where the fanned-out tasks run: threads here, or Dask worker processes."
    )


# Each stage's own settings are declared once, in a <Stage>Settings model: the stage's config (what
# its command takes) adds what the pipeline provides (collection, workspace, task runner), and the
# pipeline's section for the stage adds `enabled`. The CLI takes its options' defaults and help from
# these fields (cli/common.py, field_option).


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


DEFAULT_KS = (1, 3, 5, 10)
# An evaluation's question sample, declared once for retrieval and answer evaluations (0: no single
# question, for a run of the golden dialogues alone).
MaxQuestions = Annotated[
    int | None,
    Field(
        ge=0,
        description="Evaluate a seeded sample of at most this many questions (0: none, the golden dialogues alone).",
    ),
]
# The golden dialogues an evaluation asks, each with all its turns (0: none).
MaxDialogues = Annotated[
    int | None,
    Field(ge=0, description="Evaluate a seeded sample of at most this many golden dialogues, each with all its turns."),
]


class RetrievalConfiguration(SearchSettings):
    """One retrieval configuration under evaluation: search settings under a label that names it
    in runs and assertions. Its search is exactly what `ragassay search` runs with these settings."""

    system_under_test: ClassVar[bool] = False

    label: str = Field(pattern=LABEL, description="Names the configuration in runs, tables and assertions.")
    search_type: SearchType = Field(description=f"One of {', '.join(SEARCH_TYPES)}.")
    rerank_model: ChatModelConfig = Field(ChatModelConfig(), description="The chat model of rerank llm.")

    def chat_models(self) -> list[ChatModelConfig]:
        """The reranker, when the configuration reranks with a chat model."""
        return [self.rerank_model] if self.rerank == "llm" else []

    def check_for_retrieval(self) -> None:
        """Nothing stored to check: ragassay's own search ranks what the collection holds."""

    def with_models(self, resolve: Callable[[ChatModelConfig], ChatModelConfig]) -> RetrievalConfiguration:
        """The configuration with its chat-model reranker resolved (a pipeline's model settings)."""
        return self.model_copy(update={"rerank_model": resolve(self.rerank_model)})


def _configuration_kind(value) -> str:
    """A configuration with a `system:` key is a system under test; any other is built in."""
    if isinstance(value, dict):
        return "system" if "system" in value else "built_in"
    return "system" if value.system_under_test else "built_in"


# A retrieval configuration: ragassay's own search, or a team's RAG system under test.
AnyRetrievalConfiguration = Annotated[
    Annotated[RetrievalConfiguration, Tag("built_in")] | Annotated[SystemConfiguration, Tag("system")],
    Discriminator(_configuration_kind),
]
# An answer configuration: ragassay's own answer path, or a team's RAG system under test.
AnyAnswerConfiguration = Annotated[
    Annotated[AnswerConfiguration, Tag("built_in")] | Annotated[SystemConfiguration, Tag("system")],
    Discriminator(_configuration_kind),
]


def _assertions_checked(assertions: tuple[str, ...], configurations: tuple, parse) -> None:
    """Each assertion parses, names a configuration, and bounds coverage only of a system under test."""
    labels = unique_labels(configurations)
    systems = {c.label for c in configurations if c.system_under_test}
    for text in assertions:
        assertion = parse(text)
        if assertion.label not in labels:
            raise ValueError(f"assertion {text!r} names configuration {assertion.label!r}; labels: {', '.join(labels)}")
        if assertion.metric == COVERAGE and assertion.label not in systems:
            raise ValueError(
                f"assertion {text!r}: coverage is the share of questions a system under test answered; "
                f"{assertion.label!r} is built in and answers every question"
            )


class RetrievalSettings(Frozen):
    """Retrieval evaluation: configurations (default: fulltext, semantic and hybrid), cut-offs, the
    question sample, and `--assert` bounds."""

    configurations: tuple[AnyRetrievalConfiguration, ...] = Field(
        default_factory=lambda: tuple(RetrievalConfiguration(label=m, search_type=m) for m in SEARCH_TYPES),
        min_length=1,
        description="The configurations compared: ragassay's own search (search_type, ...) or a system under test (system).",
    )
    ks: tuple[int, ...] = Field(DEFAULT_KS, description="Cut-offs k of recall@k, precision@k, nDCG@k and hit rate@k.")
    max_rank: int = Field(
        100,
        ge=1,
        le=10_000,
        description="Deepest rank scored (MRR reads every rank to it; at least max(ks)): built-in configurations "
        "retrieve this many documents, a system's longer list is read to this rank.",
    )
    common_questions: bool = Field(
        False, description="Score every configuration on only the questions all of them answered."
    )
    max_questions: MaxQuestions = None
    max_dialogues: MaxDialogues = None
    seed: int = Field(0, description="Seed of the question sample and the significance tests.")
    assertions: tuple[str, ...] = Field(
        (),
        description="Bounds on a configuration's mean ('hybrid:recall@5>=0.8'); a missed one exits 1 and fails the run.",
    )
    save_records: Path | None = Field(
        None,
        description="Write each configuration's records into this folder as <label>.jsonl (re-scored later as "
        "`system: {kind: records, path: ...}`).",
    )

    @field_validator("ks", mode="before")
    @classmethod
    def _comma_separated(cls, ks):
        """`--ks 1,3,10` and `ks: "1,3,10"` as the list they write."""
        if not isinstance(ks, str):
            return ks
        try:
            return [int(k) for k in ks.split(",")]
        except ValueError:
            raise ValueError(f"ks {ks!r} must be comma-separated integers") from None

    @field_validator("ks")
    @classmethod
    def _cutoffs(cls, ks: tuple[int, ...]) -> tuple[int, ...]:
        if not ks or min(ks) < 1:
            raise ValueError("ks must be one or more cut-offs >= 1")
        return tuple(sorted(set(ks)))

    @model_validator(mode="after")
    def _unique_labels(self) -> RetrievalSettings:
        for configuration in self.configurations:
            system = getattr(configuration, "system", None)
            problem = system.retrieval_problem() if system is not None else None
            if problem is not None:
                raise ValueError(f"configuration {configuration.label!r}: {problem}")
        _assertions_checked(self.assertions, self.configurations, parse_assertion)
        for text in self.assertions:
            assertion = parse_assertion(text)
            if (
                isinstance(assertion.metric, MetricName)
                and assertion.metric.k is not None
                and assertion.metric.k > max(self.ks)
            ):
                raise ValueError(f"assertion {text!r} needs k <= max(ks) = {max(self.ks)}")
        return self

    @property
    def depth(self) -> int:
        """The deepest rank any metric reads, the same for every configuration: max_rank, or
        max(ks) where a cut-off is deeper."""
        return max(self.max_rank, max(self.ks))

    def metrics(self) -> list[MetricName]:
        """The standard metrics at every k, plus any other metric an assertion names."""
        names = standard_metrics(list(self.ks))
        extra = [parse_assertion(text).metric for text in self.assertions]
        return names + [m for m in dict.fromkeys(extra) if isinstance(m, MetricName) and m not in names]


class RetrievalEvalConfig(SomeCollections, RetrievalSettings, OnTaskRunner):
    """One `ragassay eval retrieval` call: the golden sets of some collections under configurations."""

    def check_stored(self) -> None:
        """The collections are there, and each records file names retrieved documents (without
        any, every question would score 0 without anything measured): refused before any work."""
        super().check_stored()
        for configuration in self.configurations:
            configuration.check_for_retrieval()

    def chat_models(self) -> list[ChatModelConfig]:
        """The rerankers of the configurations that rerank."""
        return [model for c in self.configurations for model in c.chat_models()]


class AnswerEvalSettings(Frozen):
    """Answer evaluation (default configuration: hybrid retrieval, strict groundedness).

    unanswerable: a JSONL/CSV file of questions the corpus cannot answer (id, question), for the
    refusal metrics. pairwise: compare every pair of configurations answer by answer.
    questions_per_task: questions one answering or judging task takes on the task runner (None: a
    configuration's questions in one task each).
    """

    configurations: tuple[AnyAnswerConfiguration, ...] = Field(
        default_factory=lambda: (AnswerConfiguration(label="hybrid", search_type="hybrid"),),
        min_length=1,
        description="The configurations compared: ragassay's own answer path or a system under test (system).",
    )
    unanswerable: Path | None = Field(
        None,
        description="JSONL or CSV of questions the documents cannot answer (id, question): refusal is measured on them.",
    )
    max_questions: MaxQuestions = None
    max_dialogues: MaxDialogues = None
    max_unanswerable: int | None = Field(
        None,
        ge=0,
        description="Ask a seeded sample of at most this many of the unanswerable file's questions (0: none of "
        "them; a dialogue's unanswerable turns are asked with their dialogue).",
    )
    seed: int = Field(0, description="Seed of the question sample.")
    pairwise: bool = Field(True, description="Ask the judge which of two configurations' answers is better, each pair.")
    judge_odds: bool = Field(
        False,
        description="Also ask the judge model its own P(supported) of each statement against its most similar "
        "passage, shown beside the verdict (the default judge's verdict does not read it: one more call a statement).",
    )
    traces: bool = Field(
        True,
        description="Log each question as an MLflow trace of its configuration's run: retrieved passages, the "
        "answer, every verdict beside its passage, and the question's scores as assessments.",
    )
    assertions: tuple[str, ...] = Field(
        (),
        description="Bounds on a configuration's mean ('hybrid:recall@5>=0.8'); a missed one exits 1 and fails the run.",
    )
    metrics: tuple[str, ...] | None = Field(
        None,
        description="The answer metrics to score (default: every one declared): a run pays only for the verdicts "
        "of those it names.",
    )
    questions_per_task: int | None = Field(
        None, ge=1, description="Questions one answering or judging task takes (none: a configuration's in one task)."
    )
    save_records: Path | None = Field(
        None,
        description="Write each configuration's answers as records into this folder as <label>.jsonl (re-scored "
        "later as `system: {kind: records, path: ...}`).",
    )

    @model_validator(mode="after")
    def _unique_labels(self) -> AnswerEvalSettings:
        _assertions_checked(self.assertions, self.configurations, parse_answer_assertion)
        if self.metrics is not None:
            unknown = [name for name in self.metrics if name not in ANSWER_METRICS]
            if unknown or not self.metrics:
                named = f"{', '.join(map(repr, unknown))} is not an answer metric" if unknown else "names none"
                raise ValueError(f"metrics: {named}; answer metrics: {', '.join(ANSWER_METRICS)}")
            for text in self.assertions:
                bounded = str(parse_answer_assertion(text).metric).split(".")[0]  # faithfulness.corrected_low
                if bounded in ANSWER_METRICS and bounded not in self.metrics:
                    raise ValueError(f"assertion {text!r} bounds {bounded}, which metrics leaves out")
        return self


class AnswerEvalConfig(SomeCollections, AnswerEvalSettings, OnTaskRunner):
    """One `ragassay eval answers` call."""

    judge: ChatModelConfig = DEFAULT_JUDGE

    def chat_models(self) -> list[ChatModelConfig]:
        """Each configuration's answer model and reranker, and the judge."""
        return [*(model for c in self.configurations for model in c.chat_models()), self.judge]


class PipelineIngest(IngestSettings):
    """The pipeline's ingest stage."""

    enabled: bool = Field(True, description="Run this stage (false: skip it).")

    def run_params(self) -> dict[str, str]:
        """What the pipeline's ingest run logs as params: the paths ingested."""
        return {"paths": ",".join(map(str, self.paths))}


class PipelineIndex(IndexSettings):
    """The pipeline's index stage."""

    enabled: bool = Field(True, description="Run this stage (false: skip it).")


class PipelineGolden(GenerateSettings):
    """The pipeline's golden set: hand-written entries and dialogues from `file` (one golden file or
    a list of them, added when not yet stored) and seeded generation through the quality gate.
    `count` is how many generated questions this seed should have produced in all: a re-run
    generates only what is missing."""

    file: Path | tuple[Path, ...] | None = Field(
        None, description="A golden file (entries, and dialogues as rows with `turns`), or a list of them."
    )
    generate: bool = Field(True, description="Generate questions through the quality gate (false: only the files).")
    # Seeded by default, unlike `golden generate`: a re-run must resume the same sampling.
    seed: int = Field(0, description="Sampling seed of the pages generation draws.")

    @property
    def files(self) -> tuple[Path, ...]:
        """The golden files, in the order given."""
        return () if self.file is None else (self.file,) if isinstance(self.file, Path) else self.file


class PipelineRetrieval(RetrievalSettings):
    """The pipeline's retrieval evaluation."""

    enabled: bool = Field(True, description="Run this stage (false: skip it).")


class PipelineAnswers(AnswerEvalSettings):
    """The pipeline's answer evaluation."""

    enabled: bool = Field(True, description="Run this stage (false: skip it).")


PIPELINE_STAGES = ("ingest", "index", "golden", "retrieval", "answers")


def _stage_config(config_class: type[BaseModel], section: BaseModel, **provided) -> BaseModel:
    """A stage's config from its pipeline section (the stage settings it shares with the stage's
    command) and what the pipeline provides."""
    shared = {name: getattr(section, name) for name in type(section).model_fields if name in config_class.model_fields}
    return config_class(**{**shared, **provided})


class PipelineConfig(OneCollection, OnTaskRunner):
    """One `ragassay run`: every stage of one collection, configured in one file.

    judge: the judge of the quality gate's answer check and of answer evaluation. cache: remember
    model calls in the workspace's completion cache (llm/cache.py), so an unchanged re-run re-uses
    every answer and verdict. task_runner: where every stage's fanned-out tasks run (extraction
    batches, embedding groups, configurations searched, answered and judged). Each stage's section
    builds that stage's own config (the same one its command takes), so a stage behaves exactly as
    when run alone.
    """

    ingest: PipelineIngest = Field(PipelineIngest(), description="The ingest stage: files into the collection.")
    index: PipelineIndex = Field(PipelineIndex(), description="The index stage: BM25 and embeddings.")
    golden: PipelineGolden = Field(PipelineGolden(), description="The golden set: files, and generation.")
    retrieval: PipelineRetrieval = Field(PipelineRetrieval(), description="The retrieval evaluation.")
    answers: PipelineAnswers = Field(PipelineAnswers(), description="The answer evaluation.")
    judge: ChatModelConfig = Field(
        DEFAULT_JUDGE, description="The judge of answer evaluation and of the quality gate's answer check."
    )
    cache: bool = Field(True, description="Re-use remembered model calls, so an unchanged re-run asks nothing again.")

    @model_validator(mode="after")
    def _stages_valid(self) -> PipelineConfig:
        if self.ingest.enabled and not self.ingest.paths:
            raise ValueError(
                "ingest.paths: give the files or folders to ingest, or switch the stage off (ingest: {enabled: false})"
            )
        # Building each stage's config checks what only the whole can check.
        for stage, build in (
            ("ingest", self.ingest_config),
            ("index", self.index_config),
            ("golden", self.generate_config),
            ("retrieval", self.retrieval_config),
            ("answers", self.answer_config),
        ):
            try:
                build()
            except ValidationError as error:
                raise ValueError(
                    f"{stage}: " + "; ".join(item["msg"].removeprefix("Value error, ") for item in error.errors())
                ) from None
        return self

    def _model(self, model: ChatModelConfig) -> ChatModelConfig:
        return model if self.cache else model.model_copy(update={"cache": False})

    def chat_models(self) -> list[ChatModelConfig]:
        """The chat models of every enabled stage that calls one."""
        stages = self.enabled_stages()
        models = []
        if "golden" in stages and self.golden.generate:
            models += self.generate_config().chat_models()
        if "retrieval" in stages:
            models += self.retrieval_config().chat_models()
        if "answers" in stages:
            models += self.answer_config().chat_models()
        return models

    def enabled_stages(self) -> list[str]:
        flags = {
            "ingest": self.ingest.enabled,
            "index": self.index.enabled,
            "golden": bool(self.golden.file) or self.golden.generate,
            "retrieval": self.retrieval.enabled,
            "answers": self.answers.enabled,
        }
        return [stage for stage in PIPELINE_STAGES if flags[stage]]

    def _provided(self, *, one_collection: bool = True, task_runner: bool = True) -> dict:
        provided = {"collection": self.collection} if one_collection else {"collections": (self.collection,)}
        return {**provided, "home": self.home, **({"task_runner": self.task_runner} if task_runner else {})}

    def ingest_config(self) -> IngestConfig | None:
        if not self.ingest.enabled:
            return None
        return _stage_config(IngestConfig, self.ingest, **self._provided())

    def index_config(self) -> IndexConfig:
        return _stage_config(IndexConfig, self.index, **self._provided())

    def generate_config(self) -> GenerateConfig:
        return _stage_config(
            GenerateConfig,
            self.golden,
            model=self._model(self.golden.model),
            judge=self._model(self.judge),
            count_is_total=True,
            **self._provided(task_runner=False),
        )

    def retrieval_config(self) -> RetrievalEvalConfig:
        configurations = tuple(c.with_models(self._model) for c in self.retrieval.configurations)
        return _stage_config(
            RetrievalEvalConfig, self.retrieval, configurations=configurations, **self._provided(one_collection=False)
        )

    def answer_config(self) -> AnswerEvalConfig:
        # A system under test answers with its own models: only built-in configurations take the
        # pipeline's model settings.
        configurations = tuple(c.with_models(self._model) for c in self.answers.configurations)
        return _stage_config(
            AnswerEvalConfig,
            self.answers,
            configurations=configurations,
            judge=self._model(self.judge),
            **self._provided(one_collection=False),
        )


def route_assertions(values: dict, assertions: list[str]) -> dict:
    """Pipeline settings with `--assert` bounds added to the stage they bound: an answer metric's
    to answers, a `LABEL:coverage` bound to each stage that has a configuration LABEL (retrieval
    when neither has), any other to retrieval."""
    if not assertions:
        return values
    values = dict(values)
    labels = {
        stage: {c.get("label") for c in (values.get(stage) or {}).get("configurations") or () if isinstance(c, dict)}
        for stage in ("answers", "retrieval")
    }

    def bounds(stage: str, text: str) -> bool:
        label = coverage_label(text)
        if label is None:
            return is_answer_assertion(text) == (stage == "answers")
        if label in labels["answers"] or label in labels["retrieval"]:
            return label in labels[stage]
        return stage == "retrieval"

    for stage in ("answers", "retrieval"):
        extra = [text for text in assertions if bounds(stage, text)]
        if extra:
            section = dict(values.get(stage) or {})
            section["assertions"] = [*section.get("assertions", []), *extra]
            values[stage] = section
    return values
