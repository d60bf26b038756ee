"""How a configuration names a system under test: the `system:` key (one of the kinds in
systems/kinds.py, told apart by `kind`), how its document ids map to the collection's
(`doc_ids:`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from pydantic import Field, field_validator

from ragassay.fields import LABEL, Frozen
from ragassay.systems.kinds import SystemSpec


class DocIdRule(Frozen):
    """How a system's document ids become the collection's: strip a prefix, then a regex
    substitution, then a CSV mapping (columns `system_id,doc_id`); any of them, in that order."""

    strip_prefix: str | None = Field(None, description="A prefix removed from each of the system's ids.")
    pattern: str | None = Field(None, description="A regular expression replaced in each id (re.sub).")
    replacement: str = Field("", description="What pattern is replaced with (\\1 for its first group).")
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


class SystemConfiguration(Frozen):
    """A configuration whose results come from a team's own RAG system, scored exactly as the
    built-in ones are."""

    # The system answers (or ranks) for itself: ragassay's models are not called for it.
    system_under_test: ClassVar[bool] = True

    label: str = Field(pattern=LABEL, description="Names the configuration in runs, tables and assertions.")
    system: SystemSpec = Field(description="The system and how it gives its records; its `kind` says which.")
    doc_ids: DocIdRule | None = Field(None, description="How the system's document ids become the collection's.")

    def chat_models(self) -> list:
        """The chat models the configuration calls: none (the system answers itself)."""
        return []

    def answered_by(self) -> str:
        """Who writes the configuration's answers: the system under test."""
        return f"system under test ({self.system.kind})"

    def run_params(self) -> dict:
        """What its MLflow run logs of it: its settings, as its kind logs them."""
        return {"config": self.applicable_settings()}

    def with_models(self, resolve) -> SystemConfiguration:
        """Itself: the system answers with its own models, so a pipeline's model settings leave it alone."""
        return self

    def check_for_retrieval(self) -> None:
        """A ConfigError before any work when the system's stored records cannot be ranked."""
        self.system.check_for_retrieval()

    def applicable_settings(self) -> dict:
        """The settings logged as MLflow params, the system's as its kind logs them (no secret
        reaches MLflow: kind.SystemKind.logged_settings)."""
        settings = self.model_dump(mode="json", exclude_none=True, exclude={"label", "system"})
        return settings | {"system": self.system.logged_settings()}
