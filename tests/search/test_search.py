"""Search through the real indexes and the real embedding model: modes, fusion, filters, isolation."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ragassay.errors import CollectionNotFound, ConfigError, IndexMissing
from ragassay.search.ranking import make_snippet
from ragassay.search.settings import SearchSettings
from tests.helpers import build_collection, index, ingest, search_hits


def build(home: Path, name: str, files: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / name
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    build_collection(home, name, (root,), chunk_size=200, chunk_overlap=0)


@pytest.fixture
def two_collections(home, tmp_path) -> Path:
    build(
        home,
        "hives",
        {
            "langstroth.md": "The Langstroth hive uses removable frames and the bee space.",
            "topbar.txt": "A top-bar hive has no frames; combs hang from wooden bars.",
            "long/mites.txt": ("Intro about bees in general. " * 10)
            + "\n\nVarroa mites are counted with an alcohol wash.",
            "notes.html": "<p>Frames of honey are heavy to lift.</p>",
        },
        tmp_path,
    )
    build(home, "kitchen", {"bread.txt": "Sourdough bread needs a starter and long fermentation."}, tmp_path)
    return home


@pytest.mark.parametrize("mode", ["fulltext", "semantic", "hybrid"])
def test_each_mode_ranks_the_answering_document_first(two_collections, mode):
    hits = search_hits(two_collections, ["hives"], "how are varroa mites counted?", search_type=mode, k=3)
    assert hits[0].doc_id == "long/mites.txt"
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


def test_document_score_is_its_best_chunk_and_the_span_points_at_it(two_collections):
    hits = search_hits(two_collections, ["hives"], "varroa alcohol wash", search_type="fulltext", k=1)
    best = hits[0]
    assert best.chunk_id == "long/mites.txt#1", "the second chunk holds the matching text"
    assert best.char_start > 0 and "alcohol wash" in best.snippet


def test_fulltext_returns_only_documents_sharing_a_term(two_collections):
    hits = search_hits(two_collections, ["hives"], "sourdough", search_type="fulltext")
    assert hits == []


def test_hybrid_score_is_the_rrf_of_both_rankings(two_collections):
    query = "removable frames"
    config = dict(k=4, depth=10, fusion={"k": 60})
    lexical = [h.doc_id for h in search_hits(two_collections, ["hives"], query, search_type="fulltext", **config)]
    semantic = [h.doc_id for h in search_hits(two_collections, ["hives"], query, search_type="semantic", **config)]
    hybrid = search_hits(two_collections, ["hives"], query, search_type="hybrid", **config)
    for hit in hybrid:
        expected = sum(
            1 / (60 + ranking.index(hit.doc_id) + 1) for ranking in (lexical, semantic) if hit.doc_id in ranking
        )
        assert hit.score == pytest.approx(expected)


def test_a_search_never_returns_documents_of_other_collections(two_collections):
    hits = search_hits(two_collections, ["kitchen"], "hive frames bees", search_type="semantic", k=10)
    assert {h.collection for h in hits} == {"kitchen"}
    both = search_hits(two_collections, ["hives", "kitchen"], "sourdough starter", search_type="hybrid", k=2)
    assert both[0].collection == "kitchen" and both[0].doc_id == "bread.txt"


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"content_types": ("html",)}, {"notes.html"}),
        ({"content_types": ("text/markdown", ".html")}, {"langstroth.md", "notes.html"}),
        ({"path_glob": "long/*"}, {"long/mites.txt"}),
    ],
)
def test_filters_apply_before_ranking(two_collections, filters, expected):
    hits = search_hits(two_collections, ["hives"], "frames", search_type="semantic", k=10, **filters)
    assert {h.doc_id for h in hits} == expected


def test_bad_inputs_get_typed_errors(two_collections, home):
    with pytest.raises(ConfigError, match="not one of"):
        search_hits(two_collections, ["hives"], "x", content_types=("docm",))
    with pytest.raises(CollectionNotFound, match="collections: hives, kitchen"):
        search_hits(two_collections, ["garden"], "x")
    with pytest.raises(ConfigError, match="search_type"):
        from ragassay.config_errors import parse_config

        parse_config(SearchSettings, search_type="vector")


def test_an_unindexed_collection_says_how_to_index_it(home, tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.txt").write_text("text", encoding="utf-8")
    ingest(home, "raw", (root,))
    with pytest.raises(IndexMissing, match="ragassay index --collection raw"):
        search_hits(home, ["raw"], "text")


def test_snippet_centres_on_a_query_word():
    text = "filler " * 100 + "the queen excluder keeps brood out of supers " + "filler " * 100
    snippet = make_snippet(text, "what does an excluder do?")
    assert "excluder" in snippet and snippet.startswith("…") and len(snippet) <= 242


def test_batch_embedding_equals_one_at_a_time(home):
    """Length-sorted batching must hand every text its own vector back, in the caller's order."""
    import numpy as np

    from ragassay.environment import models_dir
    from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, resolve_model

    embedder = Embedder(resolve_model(DEFAULT_MODEL_NAME, models_dir()))
    texts = ["a much longer text about queen cells and swarming in late spring", "wax", "varroa mites feed on bees"]
    batched = embedder.embed(texts, batch_size=2)
    assert batched.shape == (3, 384) and batched.dtype == np.float32
    for row, text in zip(batched, texts):
        assert np.allclose(row, embedder.embed_query(text), atol=1e-5)
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


def test_lexical_unit_scores_whole_documents_or_best_chunks(home, tmp_path):
    """'alpha' and 'omega' sit in different chunks of spread.txt. Document BM25 scores its whole
    text (both terms); chunk BM25 gives it its best chunk's score (one term at a time)."""
    import numpy as np

    from ragassay.search.lexical import LexicalIndex
    from ragassay.store.workspace import collection_paths, load_chunks, load_documents

    filler = " ".join(f"filler{n}" for n in range(30))
    build(
        home,
        "units",
        {
            "spread.txt": f"alpha {filler}.\n\n{filler} omega.",
            "focused.txt": "alpha alpha.",
            "other.txt": "nothing here.",
        },
        tmp_path,
    )
    paths = collection_paths(home, "units")
    documents, chunks = load_documents(paths, with_text=True), load_chunks(paths)
    document_bm25 = dict(
        zip(documents["doc_id"], LexicalIndex.build(documents["text"].to_list()).scores("alpha omega"))
    )
    chunk_scores = LexicalIndex.build(chunks["text"].to_list()).scores("alpha omega")
    best_chunk_bm25 = {
        doc: float(np.max(chunk_scores[(chunks["doc_id"] == doc).to_numpy()])) for doc in documents["doc_id"]
    }

    by_document = search_hits(home, ["units"], "alpha omega", search_type="fulltext", lexical_unit="document")
    by_chunk = search_hits(home, ["units"], "alpha omega", search_type="fulltext", lexical_unit="chunk")
    assert {h.doc_id for h in by_document} == {h.doc_id for h in by_chunk} == {"spread.txt", "focused.txt"}
    for hit in by_document:
        assert hit.score == pytest.approx(document_bm25[hit.doc_id], rel=1e-6)
    for hit in by_chunk:
        assert hit.score == pytest.approx(best_chunk_bm25[hit.doc_id], rel=1e-6)
    spread = next(h for h in by_document if h.doc_id == "spread.txt")
    shown = chunks.filter(chunks["chunk_id"] == spread.chunk_id)["text"].item()
    assert "alpha" in shown or "omega" in shown, "the chunk shown is one that matches the query"


def test_chunk_texts_are_read_when_shown_and_never_from_a_table_changed_since(two_collections, tmp_path):
    """Ranking needs no chunk text, so an opened collection reads its texts only when a snippet
    asks; a re-ingest in between must not pair a hit with another chunk's text."""
    from ragassay.search.collections import load_searchable
    from ragassay.search.dense import Embedders
    from ragassay.search.ranking import rank_documents, search
    from ragassay.store.workspace import collection_paths, load_chunks

    settings = SearchSettings(search_type="fulltext")
    opened = load_searchable(two_collections, "hives", need_dense=False, embedders=Embedders())
    ranked = rank_documents([opened], ["varroa alcohol wash"], settings, k=2)
    assert ranked[0][0][0] == ("hives", "long/mites.txt")

    fresh = load_searchable(two_collections, "hives", need_dense=False, embedders=Embedders())
    chunks = load_chunks(collection_paths(two_collections, "hives"))
    assert list(fresh.chunk_text) == chunks["text"].to_list() and len(fresh.chunk_text) == chunks.height

    # Another chunking of the same files: the chunks table changes under the collection opened above.
    ingest(two_collections, "hives", (tmp_path / "hives",), chunk_size=100, chunk_overlap=0)
    assert rank_documents([opened], ["varroa alcohol wash"], settings, k=2) == ranked, (
        "ranking still reads only the opened index"
    )
    with pytest.raises(IndexMissing, match="changed since it was opened"):
        search([opened], "varroa alcohol wash", settings, k=1)
    assert "alcohol wash" in search([fresh], "varroa alcohol wash", settings, k=1)[0].snippet, (
        "texts read before the change stay"
    )


def test_equal_scores_go_by_doc_id_whatever_order_the_documents_were_stored_in(home, tmp_path):
    """Tables keep documents in the order they were ingested; ties must still go by doc_id. BM25
    ties exactly on equal texts (cosine scores of equal vectors can differ in the last bit, as
    the matrix-vector product rounds each row by its place in memory)."""
    from ragassay.store.workspace import collection_paths, load_documents

    for name in ("zeta.txt", "alpha.txt", "mid.txt"):  # three ingests: stored in this order
        (tmp_path / name).write_text("Propolis seals cracks in the hive.", encoding="utf-8")
        ingest(home, "ties", (tmp_path / name,))
    index(home, "ties")
    assert load_documents(collection_paths(home, "ties"))["doc_id"].to_list() == ["zeta.txt", "alpha.txt", "mid.txt"]
    hits = search_hits(home, ["ties"], "propolis hive", search_type="fulltext", k=3)
    assert len({hit.score for hit in hits}) == 1 and [hit.doc_id for hit in hits] == [
        "alpha.txt",
        "mid.txt",
        "zeta.txt",
    ]


def test_a_collection_is_held_once_whether_lexical_or_dense_search_opened_it(two_collections):
    """An evaluation of fulltext and semantic configurations opens a collection for both: opened
    with its vectors, it serves lexical searches too, and the lexical one it replaced is let go.
    Its matrix holds the embedding cache's vectors in chunk order (read a row group at a time)."""
    import gc
    import weakref

    import numpy as np

    from ragassay.search.collections import OpenCollections
    from ragassay.search.dense import Embedders
    from ragassay.store.schemas import embeddings_spec
    from ragassay.store.tables import read_table
    from ragassay.store.workspace import collection_paths, load_chunks

    collections = OpenCollections(Embedders())
    lexical = collections.open(two_collections, "hives", need_dense=False)
    assert lexical.dense is None
    dense = collections.open(two_collections, "hives", need_dense=True)
    assert dense is not lexical and dense.dense is not None
    assert collections.open(two_collections, "hives", need_dense=False) is dense
    assert collections.open(two_collections, "hives", need_dense=True) is dense
    released = weakref.ref(lexical)
    del lexical
    gc.collect()
    assert released() is None, "the lexical-only collection is no longer held"

    paths = collection_paths(two_collections, "hives")
    cache = read_table(paths.embeddings, embeddings_spec(dense.dense.shape[1]))
    vectors = dict(zip(cache["text_sha256"].to_list(), cache["vector"].to_numpy()))
    assert np.array_equal(dense.dense, np.stack([vectors[sha] for sha in load_chunks(paths)["text_sha256"]]))
