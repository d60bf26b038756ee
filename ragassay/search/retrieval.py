"""Search over one or more indexed collections: fulltext, semantic or hybrid, returning documents.

Rules (what a result means):
- Semantic: chunks are scored by cosine similarity of unit vectors; a document's score is its best
  chunk's score (max-passage), and that chunk is the one shown.
- Fulltext, lexical_unit "document" (the default): a document's score is BM25 over its whole
  text; the chunk shown is its chunk with the highest chunk-level BM25. With lexical_unit "chunk",
  BM25 over chunks, aggregated by max-passage like semantic. Either way a document must share at
  least one query term (score > 0). Whole-document BM25 measured better on BEIR SciFact and
  NFCorpus (BENCHMARKS.md), as BM25's length normalization is designed for documents; the dense
  model needs chunks, as it reads at most 256 word pieces.
- With several collections, documents are merged by score. Cosine scores are comparable across
  collections embedded by the same model; BM25 scores are not strictly so, because each
  collection has its own term statistics.
- Hybrid takes each retriever's top max(depth, k) documents and fuses them with reciprocal-rank
  fusion (search/fusion.py); a document's chunk comes from the retriever that ranked it higher
  (fulltext on a tie).
- Filters (content type, path glob on doc id or source path) apply before ranking, so a filtered
  search still returns up to k documents.
- Ties are broken by (collection, doc_id), so the same query always gives the same order.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ragassay.search.fusion import reciprocal_rank_fusion
from ragassay.search.lexical import LexicalIndex
from ragassay.search.settings import SearchSettings

SNIPPET_CHARS = 240
LEXICAL_UNITS = ("document", "chunk")


@dataclass
class SearchableCollection:
    """A collection's chunks and documents, in index order, with its indexes loaded."""

    name: str
    chunk_ids: list[str]
    chunk_doc: np.ndarray  # position in doc_ids of each chunk's document
    chunk_start: np.ndarray
    chunk_end: np.ndarray
    chunk_page: list[int | None]
    chunk_text: list[str]
    doc_ids: list[str]
    doc_titles: list[str]
    doc_content_types: list[str]
    doc_source_paths: list[str]
    lexical: LexicalIndex
    document_lexical: LexicalIndex
    dense: np.ndarray | None
    embed_query: Callable[[str], np.ndarray] | None
    embedding_model_id: str | None

    def chunk_position(self, chunk_id: str) -> int:
        """Where a chunk lies in this collection's arrays."""
        if not hasattr(self, "_positions"):
            self._positions = {chunk: i for i, chunk in enumerate(self.chunk_ids)}
        return self._positions[chunk_id]


@dataclass(frozen=True)
class SearchHit:
    """One document in a result list, with the chunk that earned its place."""

    rank: int
    score: float
    collection: str
    doc_id: str
    title: str
    content_type: str
    chunk_id: str
    char_start: int
    char_end: int
    page: int | None
    snippet: str


@dataclass(frozen=True)
class _DocScore:
    key: tuple[str, str]  # (collection, doc_id)
    score: float
    collection_index: int
    chunk_index: int


def search(collections: list[SearchableCollection], query: str, settings: SearchSettings, k: int) -> list[SearchHit]:
    """Rank documents of the given collections for the query; the best k come back, best first.

    settings.content_types must be MIME types (search/run.py normalizes what users write).
    """
    mode, depth, rrf_k = settings.search_type, settings.depth, settings.fusion.k
    content_types, path_glob, lexical_unit = settings.content_types, settings.path_glob, settings.lexical_unit
    if lexical_unit not in LEXICAL_UNITS:
        raise ValueError(f"lexical_unit {lexical_unit!r} is not one of {', '.join(LEXICAL_UNITS)}")
    list_length = max(depth, k)
    masks = [_chunk_filter(c, content_types, path_glob) for c in collections]
    if mode == "fulltext":
        ranked = _ranked_documents(collections, masks, query, lexical_unit, list_length)
        fused = [(entry, entry.score) for entry in ranked]
    elif mode == "semantic":
        ranked = _ranked_documents(collections, masks, query, "semantic", list_length)
        fused = [(entry, entry.score) for entry in ranked]
    elif mode == "hybrid":
        lexical = _ranked_documents(collections, masks, query, lexical_unit, list_length)
        semantic = _ranked_documents(collections, masks, query, "semantic", list_length)
        fused = _fuse(lexical, semantic, rrf_k)
    else:
        raise ValueError(f"search mode {mode!r} is not one of fulltext, semantic, hybrid")
    return [_hit(collections, rank, entry, score, query) for rank, (entry, score) in enumerate(fused[:k], 1)]


def _fuse(lexical: list[_DocScore], semantic: list[_DocScore], rrf_k: int) -> list[tuple[_DocScore, float]]:
    lexical_rank = {entry.key: rank for rank, entry in enumerate(lexical)}
    chosen = {entry.key: entry for entry in lexical}
    for rank, entry in enumerate(semantic):
        if rank < lexical_rank.get(entry.key, float("inf")):
            chosen[entry.key] = entry
    fused = reciprocal_rank_fusion([[e.key for e in lexical], [e.key for e in semantic]], rrf_k)
    # Equal fused scores are ordered by (collection, doc_id), as everywhere else in search.
    ordered = sorted(fused, key=lambda pair: (-pair[1], pair[0]))
    return [(chosen[key], score) for key, score in ordered]


def _ranked_documents(
    collections: list[SearchableCollection],
    masks: list[np.ndarray],
    query: str,
    retriever: str,
    limit: int,
) -> list[_DocScore]:
    """The best `limit` documents of the collections by one retriever: "document" or "chunk"
    BM25, or "semantic". Ties are ordered by (collection, doc_id)."""
    entries: list[_DocScore] = []
    for index, (collection, mask) in enumerate(zip(collections, masks)):
        if retriever == "semantic":
            if collection.dense is None or collection.embed_query is None:
                raise ValueError(f"collection {collection.name!r} has no dense index")
            documents, chunks, scores = _best_chunk_per_document(collection, collection.dense @ collection.embed_query(query), mask)
        else:
            chunk_scores = collection.lexical.scores(query)
            if retriever == "chunk":
                documents, chunks, scores = _best_chunk_per_document(collection, chunk_scores, mask & (chunk_scores > 0))
            else:
                document_scores = collection.document_lexical.scores(query)
                matching = (document_scores > 0)[collection.chunk_doc]
                documents, chunks, _ = _best_chunk_per_document(collection, chunk_scores, mask & matching)
                scores = document_scores[documents].astype(np.float64)
        # Documents are stored sorted by doc_id, so the document position breaks ties by doc_id.
        top = np.lexsort((documents, -scores))[:limit]
        entries.extend(
            _DocScore(
                key=(collection.name, collection.doc_ids[documents[i]]),
                score=float(scores[i]),
                collection_index=index,
                chunk_index=int(chunks[i]),
            )
            for i in top
        )
    entries.sort(key=lambda entry: (-entry.score, entry.key))
    return entries[:limit]


def _best_chunk_per_document(
    collection: SearchableCollection, scores: np.ndarray, valid: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Max-passage aggregation over the valid chunks: (document, its best chunk, that chunk's
    score) for each document with a valid chunk; the earliest chunk wins a tie."""
    chunk_positions = np.nonzero(valid)[0]
    chunk_scores = scores[chunk_positions].astype(np.float64)
    documents = collection.chunk_doc[chunk_positions]
    # Sort by document, then by descending score, then by chunk position; the first of each
    # document's run is its best chunk.
    order = np.lexsort((chunk_positions, -chunk_scores, documents))
    first_of_run = np.ones(len(order), dtype=bool)
    first_of_run[1:] = documents[order][1:] != documents[order][:-1]
    best = order[first_of_run]
    return documents[best], chunk_positions[best], chunk_scores[best]


def _chunk_filter(
    collection: SearchableCollection, content_types: tuple[str, ...], path_glob: str | None
) -> np.ndarray:
    allowed_documents = np.ones(len(collection.doc_ids), dtype=bool)
    if content_types:
        allowed_documents &= np.array([ct in content_types for ct in collection.doc_content_types], dtype=bool)
    if path_glob:
        allowed_documents &= np.array(
            [
                fnmatch.fnmatchcase(doc_id, path_glob) or fnmatch.fnmatchcase(source, path_glob)
                for doc_id, source in zip(collection.doc_ids, collection.doc_source_paths)
            ],
            dtype=bool,
        )
    if len(collection.chunk_doc) == 0:
        return np.zeros(0, dtype=bool)
    return allowed_documents[collection.chunk_doc]


def _hit(collections: list[SearchableCollection], rank: int, entry: _DocScore, score: float, query: str) -> SearchHit:
    collection = collections[entry.collection_index]
    chunk = entry.chunk_index
    doc = int(collection.chunk_doc[chunk])
    return SearchHit(
        rank=rank,
        score=score,
        collection=collection.name,
        doc_id=collection.doc_ids[doc],
        title=collection.doc_titles[doc],
        content_type=collection.doc_content_types[doc],
        chunk_id=collection.chunk_ids[chunk],
        char_start=int(collection.chunk_start[chunk]),
        char_end=int(collection.chunk_end[chunk]),
        page=collection.chunk_page[chunk],
        snippet=make_snippet(collection.chunk_text[chunk], query),
    )


def make_snippet(text: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """A window of the chunk around the first query word it contains, whitespace collapsed."""
    flat = re.sub(r"\s+", " ", text).strip()
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    positions = [lowered.find(word) for word in re.findall(r"\w{3,}", query.lower())]
    found = [position for position in positions if position >= 0]
    start = max(0, min(found) - width // 4) if found else 0
    start = min(start, len(flat) - width)
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(flat) else ""
    return prefix + flat[start : start + width].strip() + suffix
