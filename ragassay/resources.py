"""Loaded state, held explicitly: the chat models, embedding models and opened collections one
owner keeps for its lifetime. A CLI command makes one for the command; the Prefect tasks share
one per worker process (tasks/resources.py). Library functions that need loaded state take it
as an argument; none keeps it in a module global."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragassay.llm.models import ChatModels
from ragassay.search.collections import OpenCollections
from ragassay.search.dense import Embedders


@dataclass
class Resources:
    """Chat models, embedding models and opened collections, each loaded once."""

    chat_models: ChatModels = field(default_factory=ChatModels)
    embedders: Embedders = field(default_factory=Embedders)
    collections: OpenCollections = field(init=False)

    def __post_init__(self) -> None:
        self.collections = OpenCollections(self.embedders)

    def close(self) -> None:
        """Release the loaded models; what is opened again afterwards is loaded again."""
        self.chat_models.close()
