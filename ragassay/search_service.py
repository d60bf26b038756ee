"""The one search path: `ragassay search` and retrieval evaluation both call run_search."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ragassay.config import SearchConfig
from ragassay.errors import ConfigError
from ragassay.workspace import collection_paths, load_searchable, read_manifest
from tasks.extraction import CONTENT_TYPES
from tasks.models import Usage, generate_structured, load_chat_model
from tasks.reranking import RelevanceScore, RerankStats, rerank_messages, rerank_order
from tasks.retrieval import SearchableCollection, SearchHit, search

# Loaded collections, keyed by what they were loaded from (index digest, the tables' sizes and
# times) and whether dense vectors were loaded: a process that searches many times (an evaluation)
# loads each index once, and a re-ingested or re-indexed collection is loaded (and checked) again.
_loaded: dict[tuple, SearchableCollection] = {}


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


def open_collection(home: Path, name: str, need_dense: bool) -> SearchableCollection:
    paths = collection_paths(home, name)
    manifest = read_manifest(paths) or {}
    tables = tuple((p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None for p in (paths.documents, paths.chunks))
    key = (home, name, str(manifest.get("index_digest")), tables, need_dense)
    if key not in _loaded:
        _loaded[key] = load_searchable(home, name, need_dense)
    return _loaded[key]


def run_search(
    home: Path,
    collections: list[str],
    query: str,
    config: SearchConfig,
    usage: Usage | None = None,
    rerank_stats: RerankStats | None = None,
) -> list[SearchHit]:
    """Search the named collections (each at most once) with one configuration; with rerank
    "llm", model calls are counted in usage and fallbacks in rerank_stats."""
    if not collections:
        raise ConfigError("at least one --collection is needed")
    need_dense = config.mode in ("semantic", "hybrid")
    loaded = [open_collection(home, name, need_dense) for name in dict.fromkeys(collections)]
    model_ids = {c.embedding_model_id for c in loaded}
    if need_dense and len(model_ids) > 1:
        raise ConfigError(f"collections were embedded with different models ({', '.join(sorted(model_ids))}); index them with one model")
    k = max(config.k, config.rerank_candidates) if config.rerank == "llm" else config.k
    hits = search(
        loaded,
        query,
        mode=config.mode,
        k=k,
        depth=config.depth,
        rrf_k=config.rrf_k,
        content_types=normalize_content_types(config.content_types),
        path_glob=config.path_glob,
        lexical_unit=config.lexical_unit,
    )
    if config.rerank == "llm":
        hits = rerank_hits(loaded, query, hits[: config.rerank_candidates], config, usage, rerank_stats)
    return hits[: config.k]


def rerank_hits(
    loaded: list[SearchableCollection],
    query: str,
    hits: list[SearchHit],
    config: SearchConfig,
    usage: Usage | None,
    stats: RerankStats | None,
) -> list[SearchHit]:
    """Score each hit's chunk 0-10 with the chat model and reorder (see tasks/reranking.py)."""
    model = load_chat_model(config.rerank_model)
    by_name = {collection.name: collection for collection in loaded}
    scores: list[int | None] = []
    for hit in hits:
        collection = by_name[hit.collection]
        passage = collection.chunk_text[collection.chunk_position(hit.chunk_id)]
        result = generate_structured(model, rerank_messages(query, passage), RelevanceScore, max_tokens=16, usage=usage)
        scores.append(result.value.score if result.ok else None)
    order = rerank_order(scores)
    if stats is not None:
        stats.queries += 1
        stats.unreadable_scores += sum(score is None for score in scores)
        stats.fallbacks += order is None
    if order is None:
        return hits
    return [replace(hits[position], rank=rank, score=float(scores[position])) for rank, position in enumerate(order, start=1)]
