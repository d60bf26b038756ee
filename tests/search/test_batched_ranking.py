"""Retrieval evaluation ranks all questions at once (search/run.rank_queries); each ranking must be
the one `ragassay search` gives that question alone, ties, filters and several collections included."""

from __future__ import annotations

import json

import pytest

from ragassay.search.run import rank_queries
from ragassay.search.settings import SearchSettings
from tests.conftest import SAMPLE
from tests.helpers import SESSION_RESOURCES, build_collection, search_hits
from tests.search.test_search import build

TWIN = "Queens lay eggs in wax cells; workers feed the larvae royal jelly for three days."


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """The sample corpus, and a second collection whose twin documents tie on every score."""
    root = tmp_path_factory.mktemp("batched")
    home = root / "workspace"
    build_collection(home, "sample", (SAMPLE / "corpus",))
    build(
        home,
        "twins",
        {"b/twin.txt": TWIN, "a/twin.txt": TWIN, "c/twin.md": TWIN, "other.txt": "Smoke calms the colony."},
        root,
    )
    return home


QUESTIONS = [
    json.loads(line)["question"] for line in (SAMPLE / "golden.jsonl").read_text().splitlines() if line.strip()
] + [
    "royal jelly larvae",  # the twins tie in every retriever
    "zyxxy qwerty",  # no known term: fulltext finds nothing
]


@pytest.mark.parametrize(
    "settings",
    [
        dict(search_type="fulltext"),
        dict(search_type="fulltext", lexical_unit="chunk"),
        dict(search_type="semantic"),
        dict(search_type="hybrid", depth=4, fusion={"k": 10}),
        dict(
            search_type="hybrid", lexical_unit="chunk", content_types=("text/plain", "text/markdown"), path_glob="*t*"
        ),
    ],
    ids=["fulltext", "fulltext-chunks", "semantic", "hybrid-shallow", "hybrid-filtered"],
)
def test_batched_rankings_are_what_search_returns_for_each_question(workspace, settings):
    collections, k = ["sample", "twins"], 5
    batched = rank_queries(SESSION_RESOURCES, workspace, collections, QUESTIONS, SearchSettings(**settings), k)
    assert len(batched) == len(QUESTIONS)
    for question, ranking in zip(QUESTIONS, batched):
        hits = search_hits(workspace, collections, question, k=k, **settings)
        assert [key for key, _ in ranking] == [(hit.collection, hit.doc_id) for hit in hits], question
        assert [score for _, score in ranking] == [hit.score for hit in hits], "the same scores, not nearly"
    twins = batched[QUESTIONS.index("royal jelly larvae")]
    if settings["search_type"] != "hybrid" or "path_glob" not in settings:
        tied = [key[1] for key, _ in twins if key[1].endswith("twin.txt") or key[1].endswith("twin.md")]
        assert tied == sorted(tied), "equal scores in doc_id order"
    if settings["search_type"] == "fulltext":
        assert batched[-1] == [], "a query sharing no term with any document finds nothing"
