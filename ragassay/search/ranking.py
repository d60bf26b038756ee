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
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ragassay.search.fusion import reciprocal_rank_fusion
from ragassay.search.lexical import LexicalIndex, tokenize
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
    chunk_text: Sequence[str]  # indexable by chunk position; may read the texts on first use
    doc_ids: list[str]
    doc_id_rank: np.ndarray  # each document's place among doc_ids sorted
    doc_titles: list[str]
    doc_content_types: list[str]
    doc_source_paths: list[str]
    lexical: LexicalIndex
    document_lexical: LexicalIndex
    dense: np.ndarray | None
    embed_queries: Callable[[list[str]], np.ndarray] | None  # texts in, unit vectors out
    embedding_model_id: str | None

    def embed_query(self, query: str) -> np.ndarray:
        """The unit vector of one query, with this collection's embedding model."""
        if self.embed_queries is None:
            raise ValueError(f"collection {self.name!r} was opened without its dense index")
        return self.embed_queries([query])[0]

    # Derived once from the fields above, on first use (cached_property: computed from immutable
    # arrays, so two threads computing it at once get equal values).
    @cached_property
    def chunks_by_document(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chunk positions grouped by document (stable, so ascending within a document), where
        each document's run starts, and the documents (ascending) those runs belong to."""
        order = np.argsort(self.chunk_doc, kind="stable")
        grouped = self.chunk_doc[order]
        starts = (
            np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]]) if len(grouped) else np.zeros(0, dtype=np.int64)
        )
        return order, starts, grouped[starts]

    @cached_property
    def _chunk_positions(self) -> dict[str, int]:
        return {chunk: i for i, chunk in enumerate(self.chunk_ids)}

    def chunk_position(self, chunk_id: str) -> int:
        """Where a chunk lies in this collection's arrays."""
        return self._chunk_positions[chunk_id]


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


# A ranked document: ((collection, doc_id), score, collection's position, its best chunk's position
# or -1 where the caller did not ask for chunks). A plain tuple, as evaluation makes one per
# question and rank (30,000 for SciFact), and building a class instance each time was half the
# time of a fulltext evaluation.
_DocScore = tuple[tuple[str, str], float, int, int]


# How many queries are ranked at once: a block's score matrix is this many rows by every chunk,
# and the block's query vectors one embedding call. On 16x SciFact (146,432 chunks, 300 queries)
# blocks of 64 raised evaluation's peak by 350 MB over the opened indexes; blocks of 16 by none,
# and ranked as fast (BENCHMARKS.md).
QUERY_BLOCK = 16


def search(collections: list[SearchableCollection], query: str, settings: SearchSettings, k: int) -> list[SearchHit]:
    """Rank documents of the given collections for the query; the best k come back, best first,
    each with the chunk that earned its place and a snippet.

    settings.content_types must be MIME types (search/run.py normalizes what users write).
    """
    fused = _rank(collections, [query], settings, k, with_chunks=True)[0]
    return [_hit(collections, rank, entry, score, query) for rank, (entry, score) in enumerate(fused[:k], 1)]


def rank_documents(
    collections: list[SearchableCollection],
    queries: list[str],
    settings: SearchSettings,
    k: int,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[list[tuple[tuple[str, str], float]]]:
    """The best k (collection, doc_id) and their scores for each query: the ranking `search` gives
    each of them, computed for all queries at once (one tokenization, one batched embedding call,
    one score matrix per block of queries) and without chunks or snippets, which evaluation does
    not show. Rankings and scores are exactly `search`'s: embedding a batch gives each query the
    vector it gets alone, and each query's scores are a product of its own."""
    ranked: list[list[tuple[tuple[str, str], float]]] = []
    for start in range(0, len(queries), QUERY_BLOCK):
        block = _rank(collections, queries[start : start + QUERY_BLOCK], settings, k, with_chunks=False)
        ranked.extend([(entry[0], score) for entry, score in fused[:k]] for fused in block)
        if on_progress is not None:
            on_progress(len(ranked), len(queries))
    return ranked


def _rank(
    collections: list[SearchableCollection], queries: list[str], settings: SearchSettings, k: int, with_chunks: bool
) -> list[list[tuple[_DocScore, float]]]:
    mode, rrf_k, lexical_unit = settings.search_type, settings.fusion.k, settings.lexical_unit
    if lexical_unit not in LEXICAL_UNITS:
        raise ValueError(f"lexical_unit {lexical_unit!r} is not one of {', '.join(LEXICAL_UNITS)}")
    if mode not in ("fulltext", "semantic", "hybrid"):
        raise ValueError(f"search mode {mode!r} is not one of fulltext, semantic, hybrid")
    list_length = max(settings.depth, k)
    masks = [_chunk_filter(c, settings.content_types, settings.path_glob) for c in collections]
    lexical = semantic = None
    if mode in ("fulltext", "hybrid"):
        lexical = _ranked_documents(collections, masks, queries, lexical_unit, list_length, with_chunks)
    if mode in ("semantic", "hybrid"):
        semantic = _ranked_documents(collections, masks, queries, "semantic", list_length, with_chunks)
    if mode == "hybrid":
        return [_fuse(lexical_list, semantic_list, rrf_k) for lexical_list, semantic_list in zip(lexical, semantic)]
    return [[(entry, entry[1]) for entry in ranked] for ranked in (lexical if mode == "fulltext" else semantic)]


def _fuse(lexical: list[_DocScore], semantic: list[_DocScore], rrf_k: int) -> list[tuple[_DocScore, float]]:
    lexical_rank = {entry[0]: rank for rank, entry in enumerate(lexical)}
    chosen = {entry[0]: entry for entry in lexical}
    for rank, entry in enumerate(semantic):
        if rank < lexical_rank.get(entry[0], float("inf")):
            chosen[entry[0]] = entry
    fused = reciprocal_rank_fusion([[e[0] for e in lexical], [e[0] for e in semantic]], rrf_k)
    # Equal fused scores are ordered by (collection, doc_id), as everywhere else in search.
    ordered = sorted(fused, key=lambda pair: (-pair[1], pair[0]))
    return [(chosen[key], score) for key, score in ordered]


def _ranked_documents(
    collections: list[SearchableCollection],
    masks: list[np.ndarray],
    queries: list[str],
    retriever: str,
    limit: int,
    with_chunks: bool,
) -> list[list[_DocScore]]:
    """For each query, the best `limit` documents of the collections by one retriever:
    "document" or "chunk" BM25, or "semantic". Ties are ordered by (collection, doc_id)."""
    per_query: list[list[_DocScore]] = [[] for _ in queries]
    tokens = tokenize(queries) if retriever != "semantic" else None
    for index, (collection, mask) in enumerate(zip(collections, masks)):
        if retriever == "semantic":
            if collection.dense is None or collection.embed_queries is None:
                raise ValueError(f"collection {collection.name!r} has no dense index")
            # One matrix-vector product per query, not one matrix product per block: a matrix
            # product's rounding depends on the block (up to 7e-7 on SciFact), which swapped
            # near-tied documents in 3 of 300 rankings against the same question searched alone.
            vectors = collection.embed_queries(queries)
            chunk_scores = (
                np.stack([collection.dense @ vector for vector in vectors])
                if len(vectors)
                else np.zeros((0, len(collection.dense)), dtype=np.float32)
            )
            valid = np.broadcast_to(mask, chunk_scores.shape)
            documents, scores = _best_chunk_scores(collection, chunk_scores, valid)
        elif retriever == "chunk":
            chunk_scores = collection.lexical.scores_for_tokens(tokens)
            valid = mask & (chunk_scores > 0)
            documents, scores = _best_chunk_scores(collection, chunk_scores, valid)
        else:
            # Whole-document BM25; a document needs one chunk the filters allow and a query term.
            document_scores = collection.document_lexical.scores_for_tokens(tokens)
            documents = _documents_with_chunks(collection, mask)
            scores = document_scores[:, documents].astype(np.float64)
            scores[scores <= 0] = -np.inf
            if with_chunks:
                chunk_scores = collection.lexical.scores_for_tokens(tokens)
                valid = np.broadcast_to(mask & (document_scores > 0)[:, collection.chunk_doc], chunk_scores.shape)
        # Stored order is ingest order: equal scores go by doc_id, as the rules above say.
        for row, top in enumerate(_top_positions(scores, collection.doc_id_rank[documents], limit)):
            top_documents, top_scores = documents[top].tolist(), scores[row, top].tolist()
            chunks = (
                [_best_chunk(collection, chunk_scores[row], valid[row], d) for d in top_documents]
                if with_chunks
                else [-1] * len(top)
            )
            keys = [(collection.name, collection.doc_ids[d]) for d in top_documents]
            per_query[row].extend(zip(keys, top_scores, itertools.repeat(index), chunks))
    if len(collections) > 1:  # one collection's list is already in (-score, doc_id) order
        for entries in per_query:
            entries.sort(key=lambda entry: (-entry[1], entry[0]))
            del entries[limit:]
    return per_query


def _documents_with_chunks(collection: SearchableCollection, mask: np.ndarray) -> np.ndarray:
    """Positions, ascending, of the documents with at least one chunk the filters allow."""
    if mask.all():
        return collection.chunks_by_document[2]
    return np.unique(collection.chunk_doc[mask])


def _best_chunk_scores(
    collection: SearchableCollection, chunk_scores: np.ndarray, valid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Max-passage aggregation for a block of queries: the positions (ascending) of the documents
    that have chunks, and each query's best valid chunk score per document (float64; -inf where a
    document has no valid chunk for that query)."""
    order, starts, documents = collection.chunks_by_document
    masked = np.where(valid, chunk_scores, -np.inf)[:, order]
    if masked.shape[1] == 0:
        return documents, np.zeros((len(chunk_scores), 0))
    return documents, np.maximum.reduceat(masked, starts, axis=1).astype(np.float64)


def _top_positions(scores: np.ndarray, tie_order: np.ndarray, limit: int) -> list[np.ndarray]:
    """For each row, the columns of its best `limit` finite scores, best first; equal scores in
    the order of tie_order (each column's document's place in doc_id order)."""
    columns = scores.shape[1]
    if columns > limit:
        # Every score tied with a row's limit-th best stays a candidate, so the tie order decides.
        thresholds = np.partition(scores, columns - limit, axis=1)[:, columns - limit]
        candidates = (scores >= thresholds[:, None]) & np.isfinite(scores)
    else:
        candidates = np.isfinite(scores)
    tops = []
    for row, chosen in zip(scores, candidates):
        eligible = np.flatnonzero(chosen)
        tops.append(eligible[np.lexsort((tie_order[eligible], -row[eligible]))][:limit])
    return tops


def _best_chunk(collection: SearchableCollection, chunk_scores: np.ndarray, valid: np.ndarray, document: int) -> int:
    """The document's valid chunk with the highest score; the earliest chunk wins a tie."""
    order, starts, documents = collection.chunks_by_document
    run = int(np.searchsorted(documents, document))
    end = starts[run + 1] if run + 1 < len(starts) else len(order)
    chunks = order[starts[run] : end]
    chunks = chunks[valid[chunks]]
    return int(chunks[np.argmax(chunk_scores[chunks])])


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
    _, _, collection_index, chunk = entry
    collection = collections[collection_index]
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
