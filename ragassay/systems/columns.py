"""The fields of a system's record, and the names other tools give them: what a records file or
a Python target's result may call each field (`columns:`)."""

from __future__ import annotations

from pydantic import Field, field_validator

from ragassay.fields import Frozen

# The field names a records file may use instead of ragassay's (`columns:` takes one of these
# names, or a mapping of its own): RAGAS' SingleTurnSample, DeepEval's LLMTestCase and
# LlamaCloud's eval-set records.
COLUMN_PRESETS: dict[str, dict[str, str]] = {
    "ragas": {
        "question": "user_input",
        "answer": "response",
        "contexts": "retrieved_contexts",
        "documents": "retrieved_context_ids",
    },
    "deepeval": {"question": "input", "answer": "actual_output", "contexts": "retrieval_context"},
    "llamacloud": {"question": "query", "answer": "response", "contexts": "contexts"},
}
# ragassay's own record fields; `documents` and `contexts` are the flat alternative to `retrieved`.
RECORD_FIELDS = (
    "query_id",
    "question",
    "answer",
    "retrieved",
    "documents",
    "contexts",
    "citations",
    "refused",
    "error",
    "latency_ms",
    "conversation_id",
    "turn",
)
# The record fields under their own names (a record ragassay wrote itself: the cache's).
OWN_NAMES = {name: name for name in RECORD_FIELDS}


class RecordColumns(Frozen):
    """The `columns:` setting of a system whose records use other field names."""

    columns: str | dict[str, str] = Field(
        default_factory=dict,
        description="Field names of the records: ragas, deepeval, llamacloud, or {our_field: their_field}.",
    )

    @field_validator("columns")
    @classmethod
    def _known(cls, columns: str | dict[str, str]) -> str | dict[str, str]:
        if isinstance(columns, str) and columns not in COLUMN_PRESETS:
            raise ValueError(f"columns {columns!r} must be one of {', '.join(COLUMN_PRESETS)}, or a mapping")
        if isinstance(columns, dict):
            unknown = sorted(set(columns) - set(RECORD_FIELDS))
            if unknown:
                raise ValueError(f"columns maps unknown fields {unknown}; record fields: {', '.join(RECORD_FIELDS)}")
        return columns

    def column_names(self) -> dict[str, str]:
        """{record field: the name it has in the records}."""
        given = COLUMN_PRESETS[self.columns] if isinstance(self.columns, str) else self.columns
        return {name: given.get(name, name) for name in RECORD_FIELDS}
