"""The ingest and index flows on real files, run by Prefect's engine against a real API."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import polars as pl
import pytest

from flows.index import index_flow
from flows.ingest import ingest_flow
from ragassay.config import IndexConfig, IngestConfig
from ragassay.errors import IndexMissing, RagassayError
from ragassay.ingest.documents import delete_documents
from ragassay.store.schemas import embeddings_spec
from ragassay.store.tables import read_table
from ragassay.store.workspace import collection_paths, load_chunks, load_documents, read_manifest
from tests.helpers import search_hits
from tests.ingest.test_extraction import write_docx, write_pdf

pytestmark = pytest.mark.flows  # every test here runs flows


def make_corpus(root: Path) -> Path:
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "smoke.md").write_text("# Smoke\n\nCool smoke masks the alarm pheromone.\n", encoding="utf-8")
    (root / "guides" / "feeding.txt").write_text(
        "Feeding\n\nAutumn syrup is two parts sugar to one of water.\n", encoding="utf-8"
    )
    (root / "wax.html").write_text("<title>Wax</title><p>Beeswax melts at 63 degrees.</p>", encoding="utf-8")
    write_docx(root / "queens.docx", ["Queens emerge after 16 days."])
    write_pdf(root / "diseases.pdf", ["Foulbrood is notifiable.", "Chalkbrood is a fungus."])
    (root / "broken.txt").write_bytes(b"\xff\xfe\xfa broken")
    (root / "picture.png").write_bytes(b"\x89PNG")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "secret.txt").write_text("never ingested", encoding="utf-8")
    return root


def ingest(home: Path, *paths: Path, **options):
    return ingest_flow(IngestConfig(collection="bees", paths=paths, home=home, **options))


def test_ingest_stores_documents_and_reports_rejections(home, tmp_path):
    corpus = make_corpus(tmp_path / "corpus")
    report = ingest(home, corpus)
    assert report.counts == {"ingested": 5, "replaced": 0, "unchanged": 0, "rejected": 2}
    assert {(Path(r.path).name, r.reason) for r in report.rejected} == {
        ("broken.txt", "unreadable"),
        ("picture.png", "unsupported_type"),
    }
    paths = collection_paths(home, "bees")
    documents = load_documents(paths, with_text=True)
    assert sorted(documents["doc_id"]) == [
        "diseases.pdf",
        "guides/feeding.txt",
        "guides/smoke.md",
        "queens.docx",
        "wax.html",
    ]
    chunks = load_chunks(paths)
    for document in documents.iter_rows(named=True):
        own = chunks.filter(pl.col("doc_id") == document["doc_id"])
        assert own.height == document["chunk_count"] > 0
        for chunk in own.iter_rows(named=True):
            assert document["text"][chunk["char_start"] : chunk["char_end"]] == chunk["text"]
    pdf_pages = chunks.filter(pl.col("doc_id") == "diseases.pdf")["page"].to_list()
    assert pdf_pages == [1, 2]
    smoke = documents.filter(pl.col("doc_id") == "guides/smoke.md").row(0, named=True)
    assert smoke["title"] == "Smoke" and smoke["content_type"] == "text/markdown"
    assert len(smoke["sha256"]) == 64 and smoke["bytes"] == (corpus / "guides" / "smoke.md").stat().st_size


def test_reingest_is_a_no_op_and_a_changed_file_replaces_its_chunks(home, tmp_path):
    corpus = make_corpus(tmp_path / "corpus")
    ingest(home, corpus)
    paths = collection_paths(home, "bees")
    before = load_documents(paths)

    again = ingest(home, corpus)
    assert again.counts["unchanged"] == 5 and not again.ingested and not again.replaced
    assert load_documents(paths).equals(before)

    long_text = "# Smoke\n\n" + "\n\n".join(f"Paragraph {n} about smoke and bees." for n in range(200))
    (corpus / "guides" / "smoke.md").write_text(long_text, encoding="utf-8")
    changed = ingest(home, corpus)
    assert changed.replaced == ["guides/smoke.md"] and len(changed.unchanged) == 4
    chunks = load_chunks(paths)
    smoke_chunks = chunks.filter(pl.col("doc_id") == "guides/smoke.md")
    assert smoke_chunks.height > 1
    assert smoke_chunks["chunk_id"].to_list() == [f"guides/smoke.md#{n}" for n in range(smoke_chunks.height)]
    assert chunks["chunk_id"].is_unique().all(), "no orphan or duplicate chunks survive a replace"
    assert set(chunks["doc_id"]) == set(load_documents(paths)["doc_id"])
    # The merge copies the tables a row group at a time: kept documents keep their place, the
    # replaced one follows them, and chunks stay grouped by document in the same order.
    order = load_documents(paths)["doc_id"].to_list()
    assert order == [d for d in before["doc_id"].to_list() if d != "guides/smoke.md"] + ["guides/smoke.md"]
    assert chunks["doc_id"].unique(maintain_order=True).to_list() == order


def test_unchanged_files_are_not_extracted_again_unless_the_chunk_settings_change(home, tmp_path):
    from ragassay.ingest.documents import Chunker, stored_digests
    from ragassay.ingest.files import discover_files, extract_documents

    corpus = make_corpus(tmp_path / "corpus")
    ingest(home, corpus)
    paths = collection_paths(home, "bees")
    (corpus / "wax.html").write_text("<title>Wax</title><p>Beeswax melts at 64 degrees.</p>", encoding="utf-8")
    stored = stored_digests(paths, Chunker(1200, 150))
    incoming, _ = extract_documents(discover_files((corpus,)), None, stored)
    extracted = {document.doc_id: document.extracted for document in incoming}
    assert extracted["wax.html"] is not None and "64 degrees" in extracted["wax.html"].text
    assert [doc for doc, text in extracted.items() if text is None] == sorted(set(stored) - {"wax.html"})
    assert stored_digests(paths, Chunker(600, 100)) == {}, "other chunk settings: everything is extracted again"

    rechunked = ingest(home, corpus, chunking={"chunk_size": 600, "chunk_overlap": 100})
    assert len(rechunked.replaced) == 5 and not rechunked.unchanged
    assert set(load_documents(paths)["chunker"]) == {"spans:600/100"}


def test_a_file_that_turns_bad_keeps_its_stored_version(home, tmp_path):
    corpus = make_corpus(tmp_path / "corpus")
    ingest(home, corpus)
    (corpus / "guides" / "feeding.txt").write_bytes(b"\xff broken now")
    report = ingest(home, corpus)
    assert [Path(r.path).name for r in report.rejected if r.reason == "unreadable"] == ["broken.txt", "feeding.txt"]
    assert "guides/feeding.txt" in load_documents(collection_paths(home, "bees"))["doc_id"].to_list()


def test_a_single_file_can_be_given_its_doc_id(home, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("Notes about propolis.", encoding="utf-8")
    report = ingest(home, path, doc_id="handbook/propolis")
    assert report.ingested == ["handbook/propolis"]


@pytest.mark.slow
def test_index_caches_embeddings_and_reembeds_only_changed_chunks(home, tmp_path):
    corpus = make_corpus(tmp_path / "corpus")
    ingest(home, corpus)
    first = index_flow(IndexConfig(collection="bees", home=home))
    assert first.embedded == first.chunks == 6 and first.reused_embeddings == 0

    unchanged = index_flow(IndexConfig(collection="bees", home=home))
    assert unchanged.embedded == 0 and unchanged.reused_embeddings == 6
    assert unchanged.index_digest == first.index_digest

    (corpus / "wax.html").write_text(
        "<title>Wax</title><p>Beeswax melts between 62 and 64 degrees.</p>", encoding="utf-8"
    )
    ingest(home, corpus)
    with pytest.raises(IndexMissing, match="changed since it was indexed"):
        from ragassay.search.collections import load_searchable
        from ragassay.search.dense import Embedders

        load_searchable(home, "bees", need_dense=False, embedders=Embedders())
    after_change = index_flow(IndexConfig(collection="bees", home=home))
    assert after_change.embedded == 1 and after_change.reused_embeddings == 5
    assert after_change.index_digest != first.index_digest

    paths = collection_paths(home, "bees")
    cache = read_table(paths.embeddings, embeddings_spec(384))
    assert cache.height == 6, "the cache keeps current texts only"
    manifest = read_manifest(paths)
    assert manifest["chunks"] == 6 and manifest["dimension"] == 384
    assert not list(paths.root.glob(".index-*")), "the builds removed their snapshots and staging folders"


def test_an_index_build_reads_the_tables_as_they_were_when_it_began(home, tmp_path):
    """An ingest during an index build replaces the tables; the build reads its texts from its
    snapshot of them (ids and texts of one version), and the snapshot goes when it is released."""
    import shutil

    from ragassay.config import DEFAULT_EMBEDDING_MODEL
    from ragassay.index.build import build_bm25_indexes
    from ragassay.index.embedding import plan_embedding, read_group_texts
    from ragassay.index.inputs import read_index_inputs, release_index_inputs
    from ragassay.search.lexical import LexicalIndex

    corpus = make_corpus(tmp_path / "corpus")
    ingest(home, corpus)
    inputs = read_index_inputs(home, "bees", DEFAULT_EMBEDDING_MODEL)
    before = load_chunks(inputs.paths)
    (corpus / "wax.html").write_text("<title>Wax</title><p>Propolis seals the hive.</p>", encoding="utf-8")
    (corpus / "drones.txt").write_text("Drones have no sting.", encoding="utf-8")
    ingest(home, corpus)
    assert load_chunks(inputs.paths).height == before.height + 1, "the collection's tables changed"

    work = plan_embedding(inputs.paths, inputs.chunks, inputs.spec, group_rows=4)
    assert [group.height for group in work.groups] == [4, 2]
    texts = pl.concat([read_group_texts(inputs.snapshot, group) for group in work.groups])
    assert (
        texts.to_dicts() == before.select("text_sha256", "text").unique("text_sha256", maintain_order=True).to_dicts()
    )

    staged = build_bm25_indexes(inputs)
    chunk_index = LexicalIndex.load(staged.folder / "bm25", inputs.chunks.height)
    wax = before["doc_id"].to_list().index("wax.html")
    assert chunk_index.scores("beeswax melts").argmax() == wax
    assert chunk_index.scores("propolis drones").max() == 0, "nothing of the later version"
    shutil.rmtree(staged.folder)

    release_index_inputs(inputs.snapshot)
    assert not inputs.snapshot.root.exists() and load_chunks(inputs.paths).height == before.height + 1
    with pytest.raises(IndexMissing, match="was removed while it ran"):
        read_group_texts(inputs.snapshot, work.groups[0])


@pytest.mark.slow
def test_deleting_a_document_removes_its_chunks_and_index_entries(home, tmp_path):

    corpus = make_corpus(tmp_path / "corpus")
    ingest(home, corpus)
    index_flow(IndexConfig(collection="bees", home=home))
    paths = collection_paths(home, "bees")
    assert delete_documents(paths, ["wax.html"]) == ["wax.html"]
    index_flow(IndexConfig(collection="bees", home=home))
    assert "wax.html" not in load_chunks(paths)["doc_id"].to_list()
    hits = search_hits(home, ["bees"], "beeswax melts", search_type="fulltext")
    assert all(hit.doc_id != "wax.html" for hit in hits)
    assert read_table(paths.embeddings, embeddings_spec(384)).height == 5


@pytest.mark.slow
def test_beir_import_stores_documents_queries_and_qrels(home, tmp_path):
    dataset = tmp_path / "tiny-beir"
    (dataset / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Varroa", "text": "Mites feed on bees."},
        {"_id": "d2", "title": "", "text": "Wax melts at 63 degrees."},
    ]
    (dataset / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n", encoding="utf-8")
    queries = [{"_id": "q1", "text": "what feeds on bees"}, {"_id": "q2", "text": "train split query"}]
    (dataset / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n", encoding="utf-8")
    (dataset / "qrels" / "test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\n")
    report = ingest_flow(IngestConfig(collection="tiny", paths=(dataset,), format="beir", home=home))
    assert report.ingested == ["d1", "d2"] and report.queries == 1 and report.qrels == 1
    paths = collection_paths(home, "tiny")
    documents = load_documents(paths, with_text=True)
    assert documents.filter(pl.col("doc_id") == "d1")["text"].item() == "Varroa\n\nMites feed on bees."
    assert pl.read_parquet(paths.beir_qrels).to_dicts() == [{"query_id": "q1", "doc_id": "d1", "relevance": 1}]
    assert pl.read_parquet(paths.beir_queries)["query_id"].to_list() == ["q1"]

    # Read a document to a part: nothing changed, nothing staged, nothing rewritten.
    written = paths.documents.stat().st_mtime_ns
    again = ingest_flow(IngestConfig(collection="tiny", paths=(dataset,), format="beir", home=home, files_per_task=1))
    assert again.unchanged == ["d1", "d2"] and not again.ingested and paths.documents.stat().st_mtime_ns == written
    with (dataset / "corpus.jsonl").open("a", encoding="utf-8") as corpus_file:
        corpus_file.write(json.dumps({"_id": "d1", "text": "Another d1."}) + "\n")
    with pytest.raises(RagassayError, match=r"corpus.jsonl:3: '_id' 'd1' is also on line 1"):
        ingest_flow(IngestConfig(collection="tiny", paths=(dataset,), format="beir", home=home))
    assert load_documents(paths, with_text=True).equals(documents), "a refused import changes nothing"


@pytest.mark.slow
def test_a_local_onnx_folder_can_be_the_embedding_model(home, tmp_path):
    """Any folder with model.onnx and tokenizer files works; here a copy of the default model."""
    import shutil

    from ragassay.environment import models_dir
    from ragassay.search.dense import DEFAULT_MODEL_NAME, assemble_default_model

    folder = tmp_path / "my-model"
    shutil.copytree(assemble_default_model(models_dir()), folder)
    ingest(home, make_corpus(tmp_path / "corpus"))
    report = index_flow(IndexConfig(collection="bees", home=home, embedding_model=str(folder)))
    assert report.embedding_model_id.startswith(f"onnx:{folder}@") and report.embedded == 6
    hits = search_hits(home, ["bees"], "when does wax melt", search_type="semantic", k=1)
    assert hits[0].doc_id == "wax.html"
    assert DEFAULT_MODEL_NAME not in report.embedding_model_id


def test_embeddings_are_written_a_row_group_at_a_time_with_the_vectors_of_one_call(home, tmp_path):
    import pyarrow.parquet as pq

    from ragassay.config import DEFAULT_EMBEDDING_MODEL
    from ragassay.index.embedding import embed_chunks
    from ragassay.index.inputs import read_index_inputs
    from ragassay.resources import Resources

    ingest(home, make_corpus(tmp_path / "corpus"))
    inputs = read_index_inputs(home, "bees", DEFAULT_EMBEDDING_MODEL)
    embedder = Resources().embedders.get(inputs.spec)
    embedded = embed_chunks(inputs, embedder, batch_size=2, group_rows=4)
    assert (embedded.embedded, embedded.reused, embedded.dimension) == (6, 0, 384)
    # Six texts in groups of four: two row groups, each written when its texts were embedded.
    assert pq.ParquetFile(inputs.paths.embeddings).metadata.num_row_groups == 2
    cache = read_table(inputs.paths.embeddings, embeddings_spec(384))
    texts = load_chunks(inputs.paths).select("text_sha256", "text").unique("text_sha256", maintain_order=True)
    stored = dict(zip(cache["text_sha256"], cache["vector"].to_numpy()))
    at_once = embedder.embed(texts["text"].to_list(), batch_size=64)
    for sha, vector in zip(texts["text_sha256"], at_once):
        assert abs(stored[sha] - vector).max() < 1e-5
    # Unchanged texts: nothing embedded, the cache kept as it is.
    again = embed_chunks(inputs, embedder, batch_size=2, group_rows=4)
    assert (again.embedded, again.reused) == (0, 6) and read_table(
        inputs.paths.embeddings, embeddings_spec(384)
    ).height == 6


def test_batches_extracted_apart_reject_an_id_an_earlier_batch_has(home, tmp_path):
    from datetime import datetime

    from ragassay.ingest.documents import Chunker, IngestStaging, stage_part, store_staged
    from ragassay.ingest.files import combine_extractions, discover_files, extract_documents
    from ragassay.work_parts import in_parts

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "same.txt").write_text(f"Text of {folder}.", encoding="utf-8")
    (tmp_path / "a" / "other.txt").write_text("Other text.", encoding="utf-8")
    found = discover_files((tmp_path / "a", tmp_path / "b"))
    batches = in_parts(found, 2)
    assert [len(batch) for batch in batches] == [2, 1]
    paths, chunker = collection_paths(home, "twins", must_exist=False), Chunker(1200, 150)
    staging = IngestStaging.new(paths, datetime.now(UTC))

    def staged(batch):
        incoming, rejected = extract_documents(batch, None, {})
        return stage_part(staging, incoming, chunker), rejected

    parts, rejections = combine_extractions([staged(batch) for batch in batches])
    # b/same.txt has the id of a/same.txt ("same.txt", its path under its root): the first one wins.
    kept = pl.concat([part.documents for part in parts]).rows(named=True)
    assert [d["doc_id"] for d in kept] == ["other.txt", "same.txt"] and kept[1]["source_path"].endswith("a/same.txt")
    assert [(r.reason, Path(r.path).parent.name) for r in rejections] == [("duplicate_id", "b")]
    # The later batch's rows for that id stay in its part but are not merged in.
    assert store_staged(paths, staging, parts, chunker).rows() == [("other.txt", "ingested"), ("same.txt", "ingested")]
    stored = load_documents(paths, with_text=True)
    assert stored["text"].to_list() == ["Other text.", "Text of a."] and not staging.folder.exists()
