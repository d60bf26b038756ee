"""How questions are answered: the settings of `ragassay answer`, of each answer configuration
under evaluation and of a case suite's answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from ragassay.fields import LABEL
from ragassay.llm.settings import ChatModelConfig, model_id_of
from ragassay.search.settings import SearchSettings

# Cosine similarity (query, best provided chunk) under which a question is declined without
# calling the model. Measured on the sample corpus with all-MiniLM-L6-v2: off-topic questions
# score 0.04-0.12, the least similar answerable question 0.31; questions on the subject that the
# corpus cannot answer score 0.25-0.48 and are left to the model.
MIN_RELEVANCE = 0.25


class AnswerSettings(SearchSettings):
    """How questions are answered (`ragassay answer`, answer evaluation, cases): retrieval settings,
    how many sources (k), the answer model, and how strict grounding is.

    min_relevance: cosine similarity (question, best retrieved chunk) under which the question is
    declined without calling the model (see answer/grounding.py for how it was set). The reranker,
    when on and rerank_model is not given, is the answer model.
    """

    k: int = Field(5, ge=1, le=100, description="Documents retrieved; each gives its best chunk as a source.")
    groundedness: Literal["strict", "off"] = Field(
        "strict", description="strict: every statement must cite a source; off: a plain RAG answer."
    )

    @field_validator("groundedness", mode="before")
    @classmethod
    def _off_as_written(cls, value):
        # YAML 1.1 readers (Prefect's, most YAML libraries) turn a written `off` into false.
        return "off" if value is False else value

    model: ChatModelConfig = Field(ChatModelConfig(), description="The chat model that writes the answers.")
    max_answer_tokens: int = Field(384, ge=16, le=8192, description="Most tokens of one answer.")
    min_relevance: float = Field(
        MIN_RELEVANCE,
        ge=-1.0,
        le=1.0,
        description="Cosine similarity of the question and its best chunk under which it is declined unasked.",
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature of the answers.")
    seed: int = Field(0, description="Sampling seed.")

    def chat_models(self) -> list[ChatModelConfig]:
        """The answer model, the reranker when these settings rerank, and the rewriter when
        follow-ups are rewritten."""
        search = self.search_settings()
        return [
            self.model,
            *([search.rerank_model] if search.rerank == "llm" else []),
            *([search.rewrite_model] if search.followup_query == "rewrite" else []),
        ]

    def search_settings(self) -> SearchSettings:
        """The search of these settings, its reranker and rewriter defaulting to the answer model."""
        return (
            super()
            .search_settings()
            .model_copy(
                update={
                    "rerank_model": self.rerank_model or self.model,
                    "rewrite_model": self.rewrite_model or self.model,
                }
            )
        )


class AnswerConfiguration(AnswerSettings):
    """One answer configuration under evaluation; its label names it in runs and tables."""

    # ragassay writes its answers (a SystemConfiguration's system answers for itself).
    system_under_test: ClassVar[bool] = False

    label: str = Field(pattern=LABEL, description="Names the configuration in runs, tables and assertions.")

    def answered_by(self) -> str:
        """Who writes the configuration's answers: its answer model."""
        return model_id_of(self.model)

    def run_params(self) -> dict:
        """What its MLflow run logs of it: the answer model's id and how it was verified, and its settings."""
        from ragassay.llm.registry import model_verification  # the model backends, only when logged

        return {
            "answer_model_id": model_id_of(self.model),
            "answer_model_verified": model_verification(self.model),
            "config": self.applicable_settings(),
        }

    def with_models(self, resolve: Callable[[ChatModelConfig], ChatModelConfig]) -> AnswerConfiguration:
        """The configuration with each chat model it calls resolved (a pipeline's model settings)."""
        rerank_model = self.rerank_model and resolve(self.rerank_model)
        return self.model_copy(update={"model": resolve(self.model), "rerank_model": rerank_model})
