"""A suite of evaluation cases (`ragassay cases run SUITE`): each case's question and checks."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator, model_validator

from ragassay.answer.settings import AnswerSettings
from ragassay.fields import LABEL, Frozen, check_collections
from ragassay.llm.settings import DEFAULT_JUDGE, ChatModelConfig
from ragassay.store.names import workspace_home


class CaseJudgeCheck(Frozen):
    """A case's judged check: the judge scores the answer 0..1 against the criteria."""

    criteria: str = Field(min_length=1)
    min_score: float = Field(0.7, ge=0.0, le=1.0)


class EvalCase(Frozen):
    """One evaluation case: a question and the checks its answer must all pass.

    contains / excludes: case-insensitive substrings of the answer. grounded: every claim of the
    answer is judged against the passages it was answered from; at least min_supported of them
    must be supported.
    """

    id: str = Field(pattern=LABEL)
    input: str = Field(min_length=1)
    contains: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    judge: CaseJudgeCheck | None = None
    grounded: bool = False
    min_supported: float = Field(0.7, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _has_a_check(self) -> EvalCase:
        if not (self.contains or self.excludes or self.judge or self.grounded):
            raise ValueError(f"case {self.id!r} has no check: give contains, excludes, judge or grounded")
        return self


class CaseSuite(Frozen):
    """A suite of evaluation cases (`ragassay cases run SUITE`), answered from its collections."""

    name: str = Field("cases", pattern=LABEL)
    collections: tuple[str, ...] = Field(min_length=1)
    answer: AnswerSettings = AnswerSettings()
    judge: ChatModelConfig = DEFAULT_JUDGE
    cases: tuple[EvalCase, ...] = Field(min_length=1)
    home: Path = Field(default_factory=workspace_home)

    _collections = field_validator("collections")(check_collections)

    def chat_models(self) -> list[ChatModelConfig]:
        """The answer model (and reranker), and the judge."""
        return [*self.answer.chat_models(), self.judge]

    @model_validator(mode="after")
    def _unique_ids(self) -> CaseSuite:
        ids = [case.id for case in self.cases]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"case ids must be unique; repeated: {', '.join(repeated)}")
        return self
