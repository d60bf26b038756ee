"""The pipeline file's settings (`ragassay run`): a section per stage, each laid over the stage's own
settings, and the assertions routed to the stage that checks them."""

from __future__ import annotations

from pathlib import Path

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    model_validator,
)

from ragassay.config.common import OneCollection, OnTaskRunner
from ragassay.config.evaluation import AnswerEvalConfig, AnswerEvalSettings, RetrievalEvalConfig, RetrievalSettings
from ragassay.config.stages import (
    GenerateConfig,
    GenerateSettings,
    IndexConfig,
    IndexSettings,
    IngestConfig,
    IngestSettings,
)
from ragassay.gates.assertions import (
    coverage_label,
    is_answer_assertion,
)
from ragassay.llm.settings import DEFAULT_JUDGE, ChatModelConfig


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
