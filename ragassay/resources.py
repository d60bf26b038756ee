"""Loaded state, held explicitly: the chat models, embedding models, opened collections and
completion caches one owner keeps for its lifetime. A CLI command makes one for the command; the
Prefect tasks share one per worker process (tasks/resources.py). Library functions that need
loaded state take it as an argument; none keeps it in a module global."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from ragassay.environment import models_dir
from ragassay.llm.cache import CompletionCache
from ragassay.llm.completion import ChatModel
from ragassay.llm.registry import ChatModels
from ragassay.llm.settings import ChatModelConfig
from ragassay.search.collections import OpenCollections
from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, Embedders, resolve_model
from ragassay.search.rerank import RerankerFailures
from ragassay.store.workspace import collection_paths, completion_cache_path, read_manifest


@dataclass
class Resources:
    """Chat models, embedding models and opened collections, each loaded once, and each
    workspace's completion cache, opened once."""

    chat_models: ChatModels = field(default_factory=ChatModels)
    embedders: Embedders = field(default_factory=Embedders)
    collections: OpenCollections = field(init=False)
    reranker_failures: RerankerFailures = field(default_factory=RerankerFailures, init=False)
    _caches: dict[Path, CompletionCache] = field(default_factory=dict, init=False)
    # Tasks on a thread runner share one Resources: a cache is opened once however many ask at once.
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.collections = OpenCollections(self.embedders)

    def chat_model(self, config: ChatModelConfig, home: Path) -> ChatModel:
        """The chat model of config for work in workspace home: its calls remembered in the
        workspace's completion cache (llm/cache.py) unless config.cache is off."""
        return self.chat_models.get(config, self.completion_cache(home))

    def collection_embedder(self, home: Path, collection: str) -> Embedder:
        """The embedding model a collection was indexed with, or the default one before it is
        indexed (loaded once; the index itself is not opened)."""
        manifest = read_manifest(collection_paths(home, collection))
        if manifest is None or "embedding_model_id" not in manifest:
            return self.embedders.get(resolve_model(DEFAULT_MODEL_NAME, models_dir()))
        return self.embedders.indexed(manifest, models_dir(), collection)

    def completion_cache(self, home: Path) -> CompletionCache:
        """The workspace's completion cache (model calls, and calls to systems under test)."""
        path = completion_cache_path(home)
        with self._lock:
            if path not in self._caches:
                self._caches[path] = CompletionCache(path)
            return self._caches[path]

    def close(self) -> None:
        """Release the loaded models and caches; what is opened again afterwards is loaded again."""
        self.chat_models.close()
        with self._lock:
            for cache in self._caches.values():
                cache.close()
            self._caches.clear()
