"""The bundled sample corpus: every file ingests, and its golden set is found (recall@1 >= 0.75)."""

from __future__ import annotations

import pytest

from ragassay.store.workspace import collection_paths, load_documents
from tests.conftest import SAMPLE
from tests.helpers import search_hits


def test_every_sample_document_is_ingested(sample_home):
    documents = load_documents(collection_paths(sample_home, "sample"))
    files = sorted(p.relative_to(SAMPLE / "corpus").as_posix() for p in (SAMPLE / "corpus").rglob("*") if p.is_file())
    assert sorted(documents["doc_id"]) == files
    assert 15 <= documents.height <= 30
    assert set(documents["content_type"].str.split("/").list.last()) >= {
        "plain",
        "markdown",
        "csv",
        "json",
        "html",
        "pdf",
    }


def test_golden_set_refers_to_existing_documents(sample_home, sample_golden):
    doc_ids = set(load_documents(collection_paths(sample_home, "sample"))["doc_id"])
    for entry in sample_golden:
        assert set(entry["expected_document_ids"]) <= doc_ids, entry["id"]


@pytest.mark.parametrize("mode", ["fulltext", "hybrid"])
def test_recall_at_1_on_the_sample_golden_set(sample_home, sample_golden, mode):
    """recall@1 = mean over questions of |relevant in top 1| / |relevant|; CI demands >= 0.75."""
    recalls = []
    for entry in sample_golden:
        hits = search_hits(sample_home, ["sample"], entry["question"], search_type=mode, k=1)
        expected = set(entry["expected_document_ids"])
        recalls.append(len({h.doc_id for h in hits} & expected) / len(expected))
    recall_at_1 = sum(recalls) / len(recalls)
    print(f"{mode} recall@1 = {recall_at_1:.3f} over {len(recalls)} questions")
    assert recall_at_1 >= 0.75
