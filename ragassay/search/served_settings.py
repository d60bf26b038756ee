"""Where a served model (an embedding server, a reranker) is and how it is called: its settings,
and an embedding server's (ServedEmbeddingModel), kept apart from the calls so that a command's
options and a pipeline file can be read without loading httpx or numpy."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field, field_validator

from ragassay.fields import Frozen
from ragassay.http_bounds import (
    HEADER_VARIABLE,
    SECRET_LOOKING_HEADER,
)


class ServedModelSettings(Frozen):
    """Where a served model is and how it is called. Header values that look secret
    (Authorization, X-Api-Key, ...) must take the secret from the environment (`Bearer ${VAR}`):
    these settings are stored (a collection's manifest, a run's params), and a secret written into
    them would be stored too."""

    url: str = Field(pattern=r"^https?://", description="The server's base URL (without the endpoint's path).")
    model: str = Field(min_length=1, description="The model name the server knows.")
    concurrency: int = Field(4, ge=1, le=64, description="Requests in flight at once.")
    timeout_seconds: float = Field(60.0, gt=0, le=3600, description="The most one request may take.")
    headers: dict[str, str] = Field(default_factory=dict, description="Request headers; secrets as ${VAR}.")

    @field_validator("headers")
    @classmethod
    def _secrets_from_environment(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if SECRET_LOOKING_HEADER.search(name) and not HEADER_VARIABLE.search(value):
                raise ValueError(
                    f"header {name!r} holds a secret written into the settings: write it as ${{VARIABLE}} "
                    f"(e.g. 'Bearer ${{MODEL_API_KEY}}') and set the variable (these settings are stored)"
                )
        return headers


class ServedEmbeddingModel(ServedModelSettings):
    """An embedding model behind an HTTP API. backend `openai`: POST {url}/v1/embeddings with
    {model, input}; `ollama`: POST {url}/api/embed with {model, input}. dimensions: the vector
    width expected (asked of an `openai` server as `dimensions`, for models that can shorten their
    vectors); a response of another width is refused."""

    backend: Literal["openai", "ollama"] = Field(
        description="openai: POST {url}/v1/embeddings (vLLM, llama.cpp, TEI); ollama: POST {url}/api/embed."
    )
    dimensions: int | None = Field(None, ge=1, le=65536, description="Vector width expected (and asked for).")
    batch_size: int = Field(32, ge=1, le=2048, description="Texts per request.")

    @property
    def endpoint(self) -> str:
        return "/v1/embeddings" if self.backend == "openai" else "/api/embed"


def served_model_of(value) -> ServedEmbeddingModel | None:
    """The served model an `embedding_model` setting names (a mapping, its JSON text or the model
    itself), or None for a local one (a name or a folder)."""
    if isinstance(value, ServedEmbeddingModel):
        return value
    if isinstance(value, str) and value.lstrip().startswith("{"):
        value = json.loads(value)
    return ServedEmbeddingModel.model_validate(value) if isinstance(value, dict) else None
