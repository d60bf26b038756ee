"""The one search path: `ragassay search` and answering call run_search; retrieval evaluation calls
rank_queries, the same ranking for many questions at once (run_search when it reranks)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ragassay.errors import ConfigError
from ragassay.ingest.extraction import CONTENT_TYPES
from ragassay.llm.completion import ChatModel
from ragassay.llm.settings import ChatModelConfig
from ragassay.llm.structured import Usage
from ragassay.search.collections import OpenCollections
from ragassay.search.ranking import SearchableCollection, SearchHit, rank_documents, search
from ragassay.search.rerank import RerankerFailures, RerankStats, rerank_hits, rerank_served
from ragassay.search.settings import SEARCH_RESULTS, SearchSettings


class SearchResources(Protocol):
    """What a search needs loaded (ragassay.resources.Resources has it): the opened collections
    and, to rerank, a chat model. A protocol, so search does not depend on the owner of the state."""

    collections: OpenCollections
    # Its served rerankers' failures in a row: one that keeps failing is not asked again.
    reranker_failures: RerankerFailures

    def chat_model(self, config: ChatModelConfig, home: Path) -> ChatModel: ...


def normalize_content_types(values: tuple[str, ...]) -> tuple[str, ...]:
    """Accept 'pdf', '.pdf' or 'application/pdf'; anything else is a ConfigError listing the choices."""
    known = set(CONTENT_TYPES.values())
    normalized = []
    for value in values:
        candidate = value if value in known else CONTENT_TYPES.get("." + value.lower().lstrip("."))
        if candidate is None:
            allowed = ", ".join(sorted(known | {s.lstrip(".") for s in CONTENT_TYPES}))
            raise ConfigError(f"content type {value!r} is not one of: {allowed}")
        normalized.append(candidate)
    return tuple(normalized)


@dataclass(frozen=True)
class SearchResult:
    """The hits of one search, and what reranking cost (zero without reranking)."""

    hits: list[SearchHit]
    usage: Usage = Usage()
    rerank: RerankStats = RerankStats()


def run_search(
    resources: SearchResources,
    home: Path,
    collections: list[str],
    query: str,
    settings: SearchSettings,
    k: int = SEARCH_RESULTS,
) -> SearchResult:
    """Search the named collections (each at most once) with one set of search settings and
    return the best k documents; when it reranks, the reranker's calls and fallbacks come back
    with the hits."""
    loaded, settings = _open_for_search(resources, home, collections, settings)
    if settings.rerank == "off":
        return SearchResult(search(loaded, query, settings, k))
    hits = search(loaded, query, settings, max(k, settings.rerank_candidates))
    if settings.rerank == "llm":
        model = resources.chat_model(settings.rerank_model or ChatModelConfig(), home)
        reranked = rerank_hits(model, loaded, query, hits[: settings.rerank_candidates])
    else:
        reranked = rerank_served(
            settings.rerank, loaded, query, hits[: settings.rerank_candidates], resources.reranker_failures
        )
    return SearchResult(reranked.hits[:k], reranked.usage, reranked.stats)


def rank_queries(
    resources: SearchResources,
    home: Path,
    collections: list[str],
    queries: list[str],
    settings: SearchSettings,
    k: int,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[list[tuple[tuple[str, str], float]]]:
    """The ranking run_search gives each query, as ((collection, doc_id), score) pairs, computed
    for all queries at once (search/retrieval.rank_documents). Without reranking only: a
    reranked search is one model call per question, run_search's path."""
    loaded, settings = _open_for_search(resources, home, collections, settings)
    if settings.rerank != "off":
        raise ValueError("rank_queries ranks without reranking; rerank with run_search")
    return rank_documents(loaded, queries, settings, k, on_progress)


def _open_for_search(
    resources: SearchResources, home: Path, collections: list[str], settings: SearchSettings
) -> tuple[list[SearchableCollection], SearchSettings]:
    """The named collections opened (each once) and the search part of the settings, with
    content types normalized."""
    if not collections:
        raise ConfigError("at least one --collection is needed")
    need_dense = settings.search_type in ("semantic", "hybrid")
    loaded = [resources.collections.open(home, name, need_dense) for name in dict.fromkeys(collections)]
    model_ids = {c.embedding_model_id for c in loaded}
    if need_dense and len(model_ids) > 1:
        raise ConfigError(
            f"collections were embedded with different models ({', '.join(sorted(model_ids))}); index them with one model"
        )
    settings = settings.search_settings().model_copy(
        update={"content_types": normalize_content_types(settings.content_types)}
    )
    return loaded, settings
