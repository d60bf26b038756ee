"""`kind: records`: what a system produced earlier, read from a file of records (JSON Lines, one
record per line, or Parquet; systems/records.py reads them), matched to the questions."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from ragassay.llm.cache import CompletionCache
from ragassay.systems.collect import match_records
from ragassay.systems.columns import RecordColumns
from ragassay.systems.kind import CollectedRecords, Progress, SystemKind
from ragassay.systems.records import SystemQuestion, SystemRecord, check_document_ids, read_records


class RecordsSystem(SystemKind, RecordColumns):
    """Records a system produced earlier: JSON Lines (one record per line) or Parquet. Two records
    for one question are refused, naming both lines, unless `duplicates` says which one counts."""

    kind: Literal["records"] = Field(description="records: outputs the system wrote earlier.")
    path: Path = Field(description="The records file: JSON Lines or Parquet.")
    duplicates: Literal["refuse", "first", "last"] = Field(
        "refuse", description="Two records for one question: refuse (naming both lines), or keep the first or last."
    )
    asks: ClassVar[bool] = False

    def collect(
        self, questions: list[SystemQuestion], cache: CompletionCache | None, on_progress: Progress
    ) -> CollectedRecords:
        collected = match_records(read_records(self.path, self.column_names()), questions, self.duplicates)
        on_progress(len(questions), len(questions))
        return collected

    def check_for_retrieval(self) -> None:
        """A ConfigError (before any work) when the file holds no document id at all, so a
        retrieval evaluation of it would measure nothing; its answers can still be evaluated."""
        self.check_records(read_records(self.path, self.column_names()))

    def check_records(self, records: list[SystemRecord]) -> None:
        check_document_ids(records, self.column_names(), self.path)

    def source(self) -> str:
        return f"records read from {self.path}"
