"""One warning type for every stage: something a run noticed and went on past (a golden entry with
no expected document, an unreadable judgement, a rejected file). Reports carry these; the answer
evaluation's `warnings` table (store/schemas.WARNINGS) holds all but `stage`."""

from __future__ import annotations

import polars as pl
from pydantic import BaseModel, ConfigDict

from ragassay.store.schemas import WARNINGS


class RunWarning(BaseModel):
    """Where (stage, configuration, metric, question: each empty when it does not apply) and why."""

    model_config = ConfigDict(frozen=True)

    stage: str = ""
    configuration: str = ""
    metric: str = ""
    question: str = ""
    reason: str

    def text(self) -> str:
        """One line: the stage, where, then why."""
        where = " ".join(part for part in (self.configuration, self.metric, self.question) if part)
        line = f"{where}: {self.reason}" if where else self.reason
        return f"{self.stage}: {line}" if self.stage else line

    def in_stage(self, stage: str) -> RunWarning:
        return self.model_copy(update={"stage": stage})


def warnings_table(warnings: list[RunWarning]) -> pl.DataFrame:
    """The warnings as the `warnings` table (configuration, metric, question, reason)."""
    rows = [w.model_dump(exclude={"stage"}) for w in warnings]
    return pl.DataFrame(rows, schema=WARNINGS.schema) if rows else WARNINGS.empty()
