"""What every kind of system under test is. A kind is the settings of its `system:` mapping (a
pydantic model told apart from the others by `kind`) with what ragassay does with them: collect
one record per question, say what a retrieval evaluation cannot use, keep its secrets out of
every text. Each kind is one module (records_system, trec, python_system, http_system), listed
once in systems/kinds.py; a kind that is asked question by question builds on
calls.CalledSystem, which brings concurrency, retries, sessions and the cache."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ragassay.fields import Frozen
from ragassay.llm.cache import CompletionCache

if TYPE_CHECKING:  # the records' module loads polars: named here, read where a system is asked
    from ragassay.systems.records import SystemQuestion, SystemRecord

# How a kind says how far collecting has got: (questions done, questions in all).
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class CollectedRecords:
    """One record per question, in the questions' order; records that matched none."""

    records: list[SystemRecord]
    unmatched: list[str]
    repeated: list[str]  # records not scored because another record of their question is (duplicates: first|last)


class SystemKind(Frozen):
    """The settings of one kind of system, and how its records are had. A subclass declares
    `kind: Literal["its-name"]` and its own settings, and implements `collect`."""

    kind: str
    # Whether the system is asked (a call a question, with a latency to measure and a cost to
    # estimate) or its records are read from a file made earlier.
    asks: ClassVar[bool] = True

    def collect(
        self, questions: list[SystemQuestion], cache: CompletionCache | None, on_progress: Progress
    ) -> CollectedRecords:
        """One record per question, in their order (a question the system gave nothing for is a
        record with its error kind, never a lost row)."""
        raise NotImplementedError(f"system kind {self.kind!r} does not say how its records are collected")

    def retrieval_problem(self) -> str | None:
        """Why a retrieval evaluation of the system would measure nothing, read from the settings
        alone (checked when the configuration is parsed); None when it can be evaluated."""
        return None

    def check_for_retrieval(self) -> None:
        """A ConfigError before any work when the system's stored records hold no document id;
        a kind without stored records has nothing to check."""

    def check_records(self, records: list[SystemRecord]) -> None:
        """A ConfigError when the records collected cannot be ranked (a records file without ids)."""

    def secrets(self) -> frozenset[str]:
        """Values that no text ragassay keeps or prints may show (masked wherever they are echoed)."""
        return frozenset()

    def logged_settings(self) -> dict:
        """The settings as MLflow params: a kind with secrets in its settings masks them here."""
        return self.model_dump(mode="json", exclude_none=True)

    def source(self) -> str:
        """Where the records come from, for an estimate's basis ("records read from runs.jsonl")."""
        return f"the {self.kind} system"
