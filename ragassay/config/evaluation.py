"""The evaluations' settings: retrieval (RetrievalSettings, RetrievalEvalConfig) and answers
(AnswerEvalSettings, AnswerEvalConfig), with the configurations they compare."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import (
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from ragassay.answer.settings import AnswerConfiguration
from ragassay.config.common import OnTaskRunner, SomeCollections
from ragassay.fields import LABEL, Frozen, unique_labels
from ragassay.gates.assertions import (
    COVERAGE,
    parse_answer_assertion,
    parse_assertion,
)
from ragassay.llm.settings import DEFAULT_JUDGE, ChatModelConfig
from ragassay.metrics.names import ANSWER_METRICS, MetricName, standard_metrics
from ragassay.search.settings import SEARCH_TYPES, SearchSettings, SearchType
from ragassay.systems.settings import SystemConfiguration

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
