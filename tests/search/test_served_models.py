"""Embeddings from a served model (search/served_embeddings.py): a real HTTP server around the
bundled MiniLM (tests/embedding_server.py), indexed through the real index flow, searched, and
tried with the faults a production server shows."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import polars as pl
import pytest

from ragassay.errors import ConfigError, EmbeddingModelError
from tests.helpers import served_process

pytestmark = pytest.mark.flows

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "corpus"
SERVER = Path(__file__).resolve().parents[1] / "embedding_server.py"
KEY = "s3cr3t-embedding-key"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """The embedding server on loopback, asking for KEY; stopped after the module."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, str(SERVER), "--port", str(port), "--api-key", KEY]
    with served_process(command, f"{url}/stats", "the embedding server"):
        yield url


def control(url: str, **state) -> dict:
    # A request an earlier test gave up on (a hang past its timeout) may still be answered: it
    # would count in this test's most_in_flight.
    deadline = time.monotonic() + 30
    while httpx.get(f"{url}/stats").json()["in_flight"] and time.monotonic() < deadline:
        time.sleep(0.1)
    httpx.post(f"{url}/control", json={"reset": True, "model_name": "all-minilm-l6-v2", "hang_seconds": 0})
    httpx.post(f"{url}/control", json=state)
    return httpx.get(f"{url}/stats").json()


def served(url: str, **settings) -> dict:
    return {
        "backend": "openai",
        "url": url,
        "model": "all-minilm-l6-v2",
        "headers": {"Authorization": "Bearer ${EMBED_KEY}"},
        "batch_size": 8,
        "concurrency": 2,
    } | settings


def reranker(url: str, **settings) -> dict:
    """A served reranker's settings: the embedding ones but the batch size."""
    return {name: value for name, value in served(url, backend="cohere", **settings).items() if name != "batch_size"}


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv("EMBED_KEY", KEY)
    # Quick retries: what is tried is the number and order of attempts, not the waits.
    monkeypatch.setattr("ragassay.search.served_calls.RETRY_DELAYS", (0.05, 0.05, 0.05))


def cache_vectors(home: Path, collection: str) -> dict[str, np.ndarray]:
    from ragassay.store.workspace import collection_paths

    rows = pl.read_parquet(collection_paths(home, collection).embeddings)
    return dict(zip(rows["text_sha256"].to_list(), rows["vector"].to_numpy(), strict=True))


@pytest.mark.slow
def test_a_served_model_indexes_as_the_bundled_one_does_and_its_secret_stays_out_of_prefect(server, home, keyed):
    from prefect.client.orchestration import get_client

    from flows.index import index_flow
    from ragassay.config import IndexConfig
    from ragassay.environment import models_dir
    from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, resolve_model
    from ragassay.store.workspace import collection_paths, load_chunks
    from tests.helpers import ingest, search_hits

    ingest(home, "served", (SAMPLE,))
    control(server)
    # From the CLI's JSON text, as the pipeline file and Prefect parameters give it.
    report = index_flow(IndexConfig(collection="served", embedding_model=json.dumps(served(server)), home=home))
    assert report.embedding_model_id == f"openai:all-minilm-l6-v2@{server}/384"
    chunks = load_chunks(collection_paths(home, "served"))
    asked = httpx.get(f"{server}/stats").json()
    assert asked["texts"] == chunks["text_sha256"].n_unique() + 1, "every text once, and the probe"
    # The same model in process: the same vectors, to float tolerance.
    local = Embedder(resolve_model(DEFAULT_MODEL_NAME, models_dir()))
    vectors = cache_vectors(home, "served")
    texts = chunks.unique("text_sha256", keep="first").head(40)
    expected = local.embed(texts["text"].to_list())
    got = np.stack([vectors[digest] for digest in texts["text_sha256"].to_list()])
    np.testing.assert_allclose(got, expected, atol=2e-5)
    # Searching embeds the query through the server, and finds what the in-process index finds.
    hits = search_hits(home, ["served"], "How often should I water succulents?", k=3, search_type="semantic")
    assert hits and httpx.get(f"{server}/stats").json()["requests"] > asked["requests"]
    # The search probed the model (its id checked against the index's) and embedded the query;
    # reindexing asks the server for nothing but its probe.
    index_flow(IndexConfig(collection="served", embedding_model=served(server), home=home))
    assert httpx.get(f"{server}/stats").json()["texts"] == asked["texts"] + 2 + 1
    with get_client(sync_client=True) as client:
        stored = json.dumps([run.parameters for run in client.read_flow_runs()], default=str)
    assert "${EMBED_KEY}" in stored and KEY not in stored


def test_ollamas_shape_gives_the_same_vectors(server, keyed):
    from ragassay.environment import models_dir
    from ragassay.search.dense import Embedders, resolve_model

    control(server)
    spec = resolve_model(served(server, backend="ollama"), models_dir())
    assert spec.model_id.startswith("ollama:all-minilm-l6-v2@") and spec.dimension == 384
    openai = Embedders().get(resolve_model(served(server), models_dir()))
    texts = ["Bees dance to show where flowers are.", "Water succulents sparingly."]
    np.testing.assert_allclose(Embedders().get(spec).embed(texts), openai.embed(texts), atol=1e-6)


@pytest.mark.slow
def test_busy_and_failing_servers_are_retried_and_a_wrong_response_names_its_request(server, keyed):
    from ragassay.search.served_embeddings import ServedEmbeddingClient
    from ragassay.search.served_settings import ServedEmbeddingModel

    settings = ServedEmbeddingModel.model_validate(served(server, timeout_seconds=1.0))
    texts = [f"text number {i}" for i in range(20)]
    control(server, fail_next=2, status=429, retry_after="0")
    client = ServedEmbeddingClient(settings)
    assert client.embed_batches(texts, 384).shape == (20, 384) and client.calls == 3
    control(server, fail_next=3, status=503)
    assert ServedEmbeddingClient(settings).embed_batches(texts[:8], 384).shape == (8, 384)
    control(server, fail_next=10, status=500)
    with pytest.raises(EmbeddingModelError, match=r"request for texts 1-8: failed after 4 attempts: answered 500"):
        ServedEmbeddingClient(settings).embed_batches(texts[:8], 384)
    control(server, fail_next=1, status=429, retry_after="3600")
    with pytest.raises(EmbeddingModelError, match=r"asking to wait 3600 s"):
        ServedEmbeddingClient(settings).embed_batches(texts[:8], 384)
    control(server, wrong_width=True)
    with pytest.raises(
        EmbeddingModelError, match=r"request for texts 1-8: vectors of width \[383\] where the model's is 384"
    ):
        ServedEmbeddingClient(settings).embed_batches(texts, 384)
    control(server, hang_seconds=1.5)
    with pytest.raises(
        EmbeddingModelError, match=r"request for texts 1-2: failed after 4 attempts: (timed out|no whole response)"
    ):
        ServedEmbeddingClient(settings).embed_batches(texts[:2], 384)
    control(server)


def test_a_server_that_is_down_costs_milliseconds_and_secrets_never_show(server, keyed, monkeypatch):
    from ragassay.config import IndexConfig
    from ragassay.environment import models_dir
    from ragassay.search.dense import resolve_model

    started = time.monotonic()
    with pytest.raises(EmbeddingModelError, match=r"cannot connect .* after 1 attempt"):
        resolve_model(served(f"http://127.0.0.1:{free_port()}"), models_dir())
    assert time.monotonic() - started < 2
    with pytest.raises(EmbeddingModelError, match=r"http://\*\*\*@127.0.0.1") as refused:
        resolve_model(served(f"http://ann:pw-in-url-77@127.0.0.1:{free_port()}"), models_dir())
    assert "pw-in-url-77" not in str(refused.value)
    control(server)
    monkeypatch.setenv("EMBED_KEY", "wrong-key-9f8e")
    with pytest.raises(EmbeddingModelError, match=r"answered 401") as refused:
        resolve_model(served(server), models_dir())
    assert "wrong-key-9f8e" not in str(refused.value) and "***" in str(refused.value)
    monkeypatch.delenv("EMBED_KEY")
    with pytest.raises(ConfigError, match=r"\$\{EMBED_KEY\}, which is not set"):
        resolve_model(served(server), models_dir())
    with pytest.raises(ValueError, match=r"header 'Authorization' holds a secret written into the settings"):
        IndexConfig(collection="x", embedding_model=served(server, headers={"Authorization": f"Bearer {KEY}"}))


def test_searching_with_a_model_that_changed_is_refused_naming_both(server, home, keyed):
    from ragassay.search.collections import load_searchable
    from ragassay.search.dense import Embedders
    from ragassay.store.workspace import collection_paths
    from tests.helpers import ingest

    ingest(home, "renamed", (SAMPLE / "guides" / "equipment-checklist.txt",))
    control(server)
    from ragassay.index.build import build_index

    build_index(home, "renamed", Embedders().get, served(server))
    assert load_searchable(home, "renamed", True, Embedders()).embedding_model_id.startswith("openai:all-minilm")
    control(server, model_name="nomic-embed-text")
    with pytest.raises(EmbeddingModelError) as refused:
        load_searchable(home, "renamed", True, Embedders())
    message = str(refused.value)
    assert "indexed with embedding model openai:all-minilm-l6-v2@" in message
    assert "now gives openai:nomic-embed-text@" in message and "ragassay index --collection renamed" in message
    assert collection_paths(home, "renamed").index_dir.exists(), "nothing stored is touched"
    control(server)


def test_an_interrupted_build_resumes_asking_the_server_only_for_what_is_missing(server, home, keyed):
    from flows.index import index_flow
    from ragassay.config import IndexConfig
    from ragassay.store.workspace import collection_paths, load_chunks
    from tests.helpers import ingest

    ingest(home, "resumed", (SAMPLE,))
    model = served(server, concurrency=1)
    distinct = load_chunks(collection_paths(home, "resumed"))["text_sha256"].n_unique()
    control(server, fail_after_texts=17)  # the probe and two groups of 8, then every call fails
    with pytest.raises(EmbeddingModelError, match=r"answered 500"):
        index_flow(IndexConfig(collection="resumed", embedding_model=model, chunks_per_task=8, home=home))
    parts = list((collection_paths(home, "resumed").root / ".embedding-parts").glob("group-*.parquet"))
    assert len(parts) == 2
    control(server)
    report = index_flow(IndexConfig(collection="resumed", embedding_model=model, chunks_per_task=8, home=home))
    asked = httpx.get(f"{server}/stats").json()["texts"]
    assert asked == 1 + distinct - 16, "the probe, and only the texts no finished group held"
    assert (report.embedded, report.reused_embeddings) == (distinct - 16, 16)
    assert len(cache_vectors(home, "resumed")) == distinct
    assert not (collection_paths(home, "resumed").root / ".embedding-parts").exists()


@pytest.mark.slow
def test_a_local_dask_cluster_drives_one_server_within_its_concurrency(server, home, keyed):
    """Two worker processes embed groups at once; together they keep within the setting's
    concurrency (each its share, llm/threads.process_share), not twice it."""
    from flows.index import index_flow
    from ragassay.config import IndexConfig
    from ragassay.environment import models_dir
    from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, resolve_model
    from ragassay.store.workspace import collection_paths, load_chunks
    from tests.helpers import ingest

    ingest(home, "clustered", (SAMPLE,))
    control(server, hang_seconds=0.3)  # each request takes a while, so the workers' requests overlap
    report = index_flow(
        IndexConfig(
            collection="clustered",
            # Four requests a group: each worker alone could keep both of the setting's in flight.
            embedding_model=served(server, concurrency=2, batch_size=2),
            chunks_per_task=8,
            task_runner={"kind": "dask", "workers": 2},
            home=home,
        )
    )
    asked = httpx.get(f"{server}/stats").json()
    control(server)
    assert 1 <= asked["most_in_flight"] <= 2, asked
    chunks = load_chunks(collection_paths(home, "clustered")).unique("text_sha256", keep="first")
    assert report.embedded == chunks.height == asked["texts"] - 1, "every text once, and the probe"
    vectors = cache_vectors(home, "clustered")
    expected = Embedder(resolve_model(DEFAULT_MODEL_NAME, models_dir())).embed(chunks["text"].to_list())
    np.testing.assert_allclose(np.stack([vectors[d] for d in chunks["text_sha256"].to_list()]), expected, atol=2e-5)


def test_a_served_reranker_reorders_by_its_scores_and_a_failure_keeps_the_fused_order_with_a_warning(
    server, sample_home, keyed
):
    from ragassay.environment import models_dir
    from ragassay.resources import Resources
    from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, resolve_model
    from ragassay.search.run import run_search
    from ragassay.search.settings import SearchSettings

    query = "How often should I water succulents?"
    resources = Resources()
    fused = run_search(resources, sample_home, ["sample"], query, SearchSettings(), 5).hits
    control(server)
    for backend in ("cohere", "tei"):
        settings = SearchSettings(rerank=json.dumps(reranker(server) | {"backend": backend}), rerank_candidates=5)
        result = run_search(resources, sample_home, ["sample"], query, settings, 5)
        # The server's model is the bundled MiniLM: its scores are the passages' cosines with the query.
        local = Embedder(resolve_model(DEFAULT_MODEL_NAME, models_dir()))
        passages = {hit.chunk_id: hit for hit in fused}
        collection = resources.collections.open(sample_home, "sample", False)
        texts = [collection.chunk_text[collection.chunk_position(h.chunk_id)] for h in fused]
        cosines = local.embed(texts) @ local.embed_query(query)
        expected = [fused[i].chunk_id for i in sorted(range(len(fused)), key=lambda i: -cosines[i])]
        assert [h.chunk_id for h in result.hits] == expected, backend
        assert result.hits[0].score == pytest.approx(float(cosines.max()), abs=1e-5)
        assert set(passages) == {h.chunk_id for h in result.hits}
        assert (result.rerank.queries, result.rerank.fallbacks) == (1, 0)
    for fault, why in (
        ({"fail_next": 10, "status": 503}, "failed after 4 attempts: answered 503"),
        ({"rerank_shape": "shuffled"}, "scores for 4 of 5 passages"),
    ):
        control(server, **fault)
        settings = SearchSettings(rerank=reranker(server), rerank_candidates=5)
        result = run_search(resources, sample_home, ["sample"], query, settings, 5)
        assert [h.chunk_id for h in result.hits] == [h.chunk_id for h in fused], "the fused order, kept"
        assert result.rerank.fallbacks == 1 and why in result.rerank.failure
        assert result.rerank.failure.startswith(f"rerank server {server} (all-minilm-l6-v2), 5 passages")
    control(server)


@pytest.mark.slow
def test_a_retrieval_evaluation_says_when_its_served_reranker_fell_back(server, home, keyed, tmp_path):
    from typer.testing import CliRunner

    from ragassay.cli.main import app
    from ragassay.golden.store import add_from_file
    from tests.helpers import build_collection

    build_collection(home, "sample", (SAMPLE,))
    add_from_file(home, "sample", SAMPLE.parent / "golden.jsonl")
    control(server, fail_next=1000, status=500)
    configs = tmp_path / "configs.json"
    reranked = {"label": "served-rerank", "search_type": "hybrid", "rerank": reranker(server), "rerank_candidates": 3}
    configs.write_text(json.dumps({"configurations": [reranked]}))
    shown = CliRunner().invoke(
        app,
        ["eval", "retrieval", "-c", "sample", "--configs", str(configs), "--max-questions", "2"],
        env={"RAGASSAY_HOME": str(home), "COLUMNS": "200"},
    )
    control(server)
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "reranking fell back to the fused order on 2 of 2 questions (first: rerank server" in text
    assert "answered 500" in text


@pytest.mark.slow
def test_an_answer_evaluation_says_when_its_served_reranker_fell_back(server, home, keyed):
    from flows.eval_answers import eval_answers_flow
    from ragassay.config import AnswerEvalConfig
    from ragassay.config_errors import parse_config
    from ragassay.golden.store import add_from_file
    from tests.helpers import build_collection

    build_collection(home, "sample", (SAMPLE,))
    add_from_file(home, "sample", SAMPLE.parent / "golden.jsonl")
    smollm2 = {"backend": "smollm2"}
    reranked = {"label": "served-rerank", "search_type": "hybrid", "rerank": reranker(server), "rerank_candidates": 3}
    configuration = reranked | {"k": 2, "max_answer_tokens": 64, "model": smollm2}
    config = parse_config(
        AnswerEvalConfig,
        collections=["sample"],
        configurations=[configuration],
        max_questions=2,
        judge=smollm2,
        home=home,
    )
    control(server, fail_next=1000, status=503)
    report = eval_answers_flow(config)
    control(server)
    said = [w for w in report.warnings if w.configuration == "served-rerank" and w.metric == "rerank"]
    assert len(said) == 1, report.warnings
    assert said[0].reason.startswith("reranking fell back to the fused order on 2 of 2 questions (first: rerank server")
    assert "answered 503" in said[0].reason and KEY not in said[0].reason


def test_vectors_a_cosine_cannot_use_or_cannot_be_placed_are_the_servers_error_named(server, home, keyed):
    from ragassay.index.build import build_index
    from ragassay.search.dense import Embedders
    from ragassay.search.served_embeddings import ServedEmbeddingClient
    from ragassay.search.served_settings import ServedEmbeddingModel
    from tests.helpers import ingest

    ingest(home, "faulty", (SAMPLE / "guides" / "equipment-checklist.txt",))
    client = ServedEmbeddingClient(ServedEmbeddingModel(**served(server)))
    try:
        control(server, vectors="zero")
        with pytest.raises(EmbeddingModelError, match=r"the probe: 1 of 1 vectors have no direction"):
            client.probe()
        with pytest.raises(EmbeddingModelError, match=r"texts 1-3: 3 of 3 vectors have no direction \(length 0"):
            client.embed_batches(["a", "b", "c"], 384)
        with pytest.raises(EmbeddingModelError, match="no direction"):
            build_index(home, "faulty", Embedders().get, served(server))
        control(server, vectors="same_index")
        with pytest.raises(EmbeddingModelError) as misplaced:
            client.embed_batches(["a", "b", "c"], 384)
        assert "indices [0, 0, 0] are not the request's positions 0-2, each once" in str(misplaced.value)
    finally:
        client.close()
        control(server)


def test_a_server_serving_another_model_or_changing_vectors_under_the_same_name_is_refused(server, home, keyed):
    from ragassay.index.build import build_index
    from ragassay.search.collections import load_searchable
    from ragassay.search.dense import Embedders
    from tests.helpers import ingest

    ingest(home, "drifting", (SAMPLE / "guides" / "equipment-checklist.txt",))
    control(server)
    build_index(home, "drifting", Embedders().get, served(server))
    assert load_searchable(home, "drifting", True, Embedders()).embedding_model_id.startswith("openai:all-minilm")
    for fault in ("other_model", "noisy"):
        control(server, vectors=fault)
        with pytest.raises(EmbeddingModelError) as refused:
            load_searchable(home, "drifting", True, Embedders())
        message = str(refused.value)
        assert "gives the probe text another vector (cosine distance" in message, fault
        assert message.count("openai:all-minilm-l6-v2@") == 2 and "ragassay index --collection drifting" in message
    control(server)
    assert load_searchable(home, "drifting", True, Embedders()), "the same model again: searched as before"


def test_a_reranker_score_no_float_holds_keeps_the_fused_order_and_a_reranker_that_is_down_stops_being_asked(
    server, sample_home, keyed
):
    from ragassay.resources import Resources
    from ragassay.search.rerank import MAX_FAILURES_IN_A_ROW
    from ragassay.search.run import run_search
    from ragassay.search.settings import SearchSettings

    query = "How often should I water succulents?"
    resources = Resources()
    fused = [h.chunk_id for h in run_search(resources, sample_home, ["sample"], query, SearchSettings(), 5).hits]
    settings = SearchSettings(rerank=reranker(server), rerank_candidates=5)
    control(server, rerank_score="1" + "0" * 400)
    result = run_search(resources, sample_home, ["sample"], query, settings, 5)
    assert [h.chunk_id for h in result.hits] == fused and result.rerank.fallbacks == 1
    assert "relevance_score '10000000000" in result.rerank.failure and "is not a finite number" in result.rerank.failure
    control(server)
    assert run_search(resources, sample_home, ["sample"], query, settings, 5).rerank.fallbacks == 0
    # Down: each question pays its retries until MAX_FAILURES_IN_A_ROW in a row, then none.
    before = control(server, fail_next=1000, status=503)["posts"]
    stats = [run_search(resources, sample_home, ["sample"], query, settings, 5).rerank for _ in range(5)]
    assert all(s.fallbacks == 1 for s in stats)
    assert [s.not_asked for s in stats] == [0] * MAX_FAILURES_IN_A_ROW + [1] * (5 - MAX_FAILURES_IN_A_ROW)
    total = sum(stats[1:], stats[0])
    assert f"the reranker was not asked for {5 - MAX_FAILURES_IN_A_ROW} more questions" in total.fallback_reason()
    posted = httpx.get(f"{server}/stats").json()["posts"] - before
    assert posted == MAX_FAILURES_IN_A_ROW * 4, "each failed question's four attempts, then no request"
    control(server)


def test_an_openai_style_base_url_ending_in_v1_works_and_a_wrong_path_says_what_was_called(server, home, keyed):
    from ragassay.search.served_calls import ServedCalls
    from ragassay.search.served_embeddings import ServedEmbeddingClient
    from ragassay.search.served_settings import ServedEmbeddingModel

    control(server)
    for url in (server, f"{server}/v1", f"{server}/v1/"):
        client = ServedEmbeddingClient(ServedEmbeddingModel(**served(url)))
        try:
            assert client.probe()[1].shape == (384,), url
        finally:
            client.close()
    calls = ServedCalls(
        ServedEmbeddingModel(**served(f"{server}/embeddings-api")), "embedding server", EmbeddingModelError
    )
    try:
        with pytest.raises(EmbeddingModelError) as wrong:
            calls.post("/v1/embeddings", {"input": ["a"], "model": "x"}, "the probe")
    finally:
        calls.close()
    message = str(wrong.value)
    assert "answered 404" in message and f"called {server}/embeddings-api/v1/embeddings" in message
    assert "http://host:port/v1" in message
