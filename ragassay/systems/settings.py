"""How a configuration names a system under test (the `system:` key): where its records come from
(a file of records, a TREC run, a Python callable, an HTTP endpoint), how its document ids map to
the collection's, and whether its calls are remembered."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from ragassay.fields import LABEL, Frozen
from ragassay.http_bounds import MAX_RESPONSE_BYTES, SECRET_LOOKING_HEADER

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


class DocIdRule(Frozen):
    """How a system's document ids become the collection's: strip a prefix, then a regex
    substitution, then a CSV mapping (columns `system_id,doc_id`); any of them, in that order."""

    strip_prefix: str | None = None
    pattern: str | None = None
    replacement: str = ""
    mapping: Path | None = Field(None, description="CSV file with columns system_id,doc_id.")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"doc_ids.pattern {pattern!r} is not a regular expression: {error}") from None
        return pattern


class _Columns(Frozen):
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


class RecordsSystem(_Columns):
    """Records a system produced earlier: JSON Lines (one record per line) or Parquet. Two records
    for one question are refused, naming both lines, unless `duplicates` says which one counts."""

    kind: Literal["records"]
    path: Path
    duplicates: Literal["refuse", "first", "last"] = Field(
        "refuse", description="Two records for one question: refuse (naming both lines), or keep the first or last."
    )


class TrecSystem(Frozen):
    """A TREC run file (`qid Q0 docid rank score tag`): retrieval only."""

    kind: Literal["trec"]
    path: Path


class _Called(Frozen):
    """What every system that is called shares: how many calls at once, retries, the cache."""

    concurrency: int = Field(1, ge=1, le=64)
    timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="The most one call may take: connecting, sending, receiving and reading the response "
        "together; past it the try is a timeout.",
    )
    max_retries: int = Field(3, ge=0, le=10, description="Tries after the first, with backoff.")
    cache: bool | None = Field(
        None,
        description="Remember successful calls. Default: only under a `version:`, since a system can change "
        "behind unchanged settings (a new deploy) and remembered calls would then be stale.",
    )
    version: str | None = Field(None, description="Bump to call the system again with unchanged settings.")

    @property
    def remembers_calls(self) -> bool:
        return self.cache if self.cache is not None else self.version is not None


_TARGET = r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"


class PythonSystem(_Called, _Columns):
    """A Python callable `package.module:function` called with question= (and query_id=, history=,
    session= when it takes them), sync or async, returning a record's fields as a dict. In a
    conversation, history is the earlier turns as OpenAI-style messages and session names the
    conversation; clear_session, when given, is called with session= after its last turn."""

    kind: Literal["python"]
    target: str = Field(pattern=_TARGET)
    clear_session: str | None = Field(
        None, pattern=_TARGET, description="A callable called with session= after each conversation's last turn."
    )


class ResponsePaths(Frozen):
    """JSONPaths (jsonpath-ng) into an HTTP response body, one per record field."""

    answer: str | None = None
    documents: str | None = None
    contexts: str | None = None
    scores: str | None = None
    citations: str | None = None
    refused: str | None = None

    @model_validator(mode="after")
    def _parse(self) -> ResponsePaths:
        from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
        from jsonpath_ng.ext import parse

        for name, path in self.model_dump(exclude_none=True).items():
            try:
                parse(path)
            except (JsonPathLexerError, JsonPathParserError, Exception) as error:
                raise ValueError(f"response.{name} {path!r} is not a JSONPath: {error}") from None
        if self.answer is None and self.documents is None:
            raise ValueError("response needs a JSONPath for documents (retrieval metrics) or answer (answer metrics)")
        return self


class SessionRequest(Frozen):
    """The request that clears a conversation's state on a system that keeps it, sent after the
    conversation's last turn: {{session}} (and [[session]]) filled in its URL and body."""

    url: str = Field(pattern=r"^https?://")
    method: Literal["DELETE", "POST", "PUT", "GET"] = "DELETE"
    body: dict | None = None


class HttpSystem(_Called):
    """An HTTP endpoint: the request from a template ({{question}} and {{query_id}} substituted in
    every string of the body, ${VAR} in headers taken from the environment), the record read from
    the JSON response by JSONPaths. In a conversation the body may also name {{history}} (the
    earlier turns as OpenAI-style messages), {{messages}} (those and this question), {{session}}
    (the conversation's session id, fresh for each evaluation), {{conversation_id}} and {{turn}};
    a string that is only {{history}} or {{messages}} becomes the list itself. clear_session: the
    request that clears a session, sent after each conversation's last turn.

    Header values are SecretStr, so a value written into the file never reaches Prefect's
    flow-run parameters (they are stored as `**********`; the task resolves the real one) or any
    dump of the settings. The secrets masked in every text ragassay keeps or prints: each
    `${VAR}`'s value, and the whole value of a header named in `secret_headers` or whose name looks
    secret (Authorization, X-Api-Key, Cookie, ...)."""

    kind: Literal["http"]
    url: str = Field(pattern=r"^https?://")
    method: Literal["GET", "POST", "PUT"] = "POST"
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    secret_headers: tuple[str, ...] = Field((), description="Headers whose values are secret (masked everywhere).")
    body: dict | None = None
    response: ResponsePaths
    concurrency: int = Field(4, ge=1, le=64)
    follow_redirects: bool = Field(
        False, description="Follow HTTP redirects (off: a redirect is that question's http_status error, naming it)."
    )
    max_response_bytes: int = Field(
        MAX_RESPONSE_BYTES,
        ge=1,
        description="The most bytes a response may hold once decompressed; past it the question's record is a "
        "too_large error (a 2 MB gzip body can inflate to 2 GB).",
    )
    clear_session: SessionRequest | None = None

    def header_templates(self) -> dict[str, str]:
        """The headers as written in the configuration (`Bearer ${VAR}` unresolved)."""
        return {name: value.get_secret_value() for name, value in self.headers.items()}

    def is_secret_header(self, name: str) -> bool:
        marked = {header.lower() for header in self.secret_headers}
        return name.lower() in marked or bool(SECRET_LOOKING_HEADER.search(name))


SystemSpec = Annotated[RecordsSystem | TrecSystem | PythonSystem | HttpSystem, Field(discriminator="kind")]


class SystemConfiguration(Frozen):
    """A configuration whose results come from a team's own RAG system, scored exactly as the
    built-in ones are."""

    label: str = Field(pattern=LABEL)
    system: SystemSpec
    doc_ids: DocIdRule | None = None

    def chat_models(self) -> list:
        """The chat models the configuration calls: none (the system answers itself)."""
        return []

    def applicable_settings(self) -> dict:
        """The settings logged as MLflow params: a header's value is kept (as the template it is)
        only when it takes its secret from an environment variable (`Bearer ${VAR}`); one written
        into the file is logged as ***, as a secret must not reach MLflow."""
        settings = self.model_dump(mode="json", exclude_none=True, exclude={"label"})
        if isinstance(self.system, HttpSystem) and self.system.headers:
            settings["system"]["headers"] = {
                name: value if re.search(r"\$\{\w+\}", value) else "***"
                for name, value in self.system.header_templates().items()
            }
        return settings
