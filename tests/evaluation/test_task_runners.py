"""Retrieval and answer evaluation on a real Dask LocalCluster of two worker processes give the
numbers of the default thread runner: the same per-question rows, runs and means, the same answers
and verdicts."""

from __future__ import annotations

import pytest
from distributed import Client, LocalCluster
from polars.testing import assert_frame_equal

from flows.eval_answers import eval_answers_flow
from flows.eval_retrieval import eval_retrieval_flow
from flows.index import index_flow
from flows.ingest import ingest_flow
from ragassay import tracking
from ragassay.config import (
    AnswerEvalConfig,
    IndexConfig,
    IngestConfig,
    RetrievalEvalConfig,
    TaskRunnerConfig,
)
from ragassay.config_errors import parse_config
from ragassay.golden.store import add_from_file
from ragassay.metrics.names import ANSWER_METRICS
from tests.conftest import SAMPLE
from tests.helpers import build_collection

pytestmark = [
    pytest.mark.flows,
    pytest.mark.slow,
]  # every test here runs flows; each starts a Dask cluster whose workers load their models

CONFIGURATIONS = [
    {"label": "fulltext", "search_type": "fulltext"},
    {"label": "semantic", "search_type": "semantic"},
    {"label": "hybrid", "search_type": "hybrid", "fusion": {"k": 60}},
]


def test_a_dask_local_cluster_gives_the_numbers_of_the_thread_runner(home, tmp_path):
    build_collection(home, "sample", (SAMPLE / "corpus",))
    add_from_file(home, "sample", SAMPLE / "golden.jsonl")
    # A system under test too (a TREC run: each entry's expected documents, then one other).
    from ragassay.golden.store import load_golden
    from ragassay.store.workspace import collection_paths

    run_file = tmp_path / "run.trec"
    run_file.write_text(
        "".join(
            f"{row['entry_id']} Q0 {doc} {rank} {1 / (rank + 1)} t\n"
            for row in load_golden(collection_paths(home, "sample")).iter_rows(named=True)
            for rank, doc in enumerate([*row["expected_document_ids"][::-1], "not/a-document.txt"])
        )
    )
    configurations = [*CONFIGURATIONS, {"label": "baseline", "system": {"kind": "trec", "path": str(run_file)}}]
    settings = dict(collections=["sample"], configurations=configurations, home=home)
    threads = eval_retrieval_flow(parse_config(RetrievalEvalConfig, **settings))
    # A cluster the flow starts (workers: 2), and one already running that it is given the address of.
    started = eval_retrieval_flow(
        parse_config(RetrievalEvalConfig, **settings, task_runner={"kind": "dask", "workers": 2})
    )
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        given = eval_retrieval_flow(
            parse_config(
                RetrievalEvalConfig, **settings, task_runner={"kind": "dask", "address": cluster.scheduler_address}
            )
        )
        # The searches ran in the worker processes: those that ran one have loaded the worker's
        # resources and the search code (neither is loaded until a task runs there).
        ran = client.run(lambda: {"tasks.resources", "ragassay.search.run"} <= set(__import__("sys").modules))
    assert len(ran) == 2 and any(ran.values())
    for dask in (started, given):
        assert dask.questions == threads.questions == 30
        assert dask.means == threads.means and dask.comparisons == threads.comparisons
        for label in threads.run_ids:
            for table in ("per_question", "run"):
                assert_frame_equal(
                    tracking.download_table(home, dask.run_ids[label], table),
                    tracking.download_table(home, threads.run_ids[label], table),
                )


# What an answer's row holds besides its cost and timing, which differ from run to run.
ANSWER_COLUMNS = [
    "configuration",
    "query_id",
    "answerable",
    "outcome",
    "reason",
    "answer",
    "statements",
    "citations",
    "sources",
    "relevance",
    "implied_question",
    *ANSWER_METRICS,
]


def test_an_answer_evaluation_on_a_dask_local_cluster_matches_the_thread_runner(home, tmp_path, monkeypatch):
    build_collection(home, "sample", (SAMPLE / "corpus",))
    add_from_file(home, "sample", SAMPLE / "golden.jsonl")
    reports = {}
    # Threads: a task per configuration; Dask: a task per question, as questions_per_task says.
    for name, runner, per_task in (("threads", {"kind": "threads"}, None), ("dask", {"kind": "dask", "workers": 2}, 1)):
        # A completion cache each, so that the Dask workers answer and judge for themselves instead
        # of reading what the thread runner's calls stored. (The workers are started after the
        # variable is set, and inherit it.)
        monkeypatch.setenv("RAGASSAY_CACHE", str(tmp_path / f"{name}-cache"))
        config = parse_config(
            AnswerEvalConfig,
            collections=["sample"],
            configurations=[
                {"label": "fulltext", "search_type": "fulltext", "k": 2, "max_answer_tokens": 128},
                {"label": "hybrid", "k": 2, "max_answer_tokens": 128},
            ],
            max_questions=1,
            judge={"backend": "smollm2"},
            questions_per_task=per_task,
            task_runner=runner,
            home=home,
        )
        reports[name] = eval_answers_flow(config)
    threads, dask = reports["threads"], reports["dask"]
    assert dask.judge_model == threads.judge_model and dask.questions == threads.questions == 1
    # The same wins and ties; the judge's cost differs (a judge remembers its judgements per process).
    assert [{k: v for k, v in t.model_dump().items() if not k.startswith("judge_")} for t in dask.pairwise] == [
        {k: v for k, v in t.model_dump().items() if not k.startswith("judge_")} for t in threads.pairwise
    ]
    for label in threads.run_ids:
        for metric in [
            *ANSWER_METRICS,
            *(f"{m}_scored" for m in ANSWER_METRICS),
            "false_refusal_rate",
        ]:
            assert dask.metrics[label].get(metric) == threads.metrics[label].get(metric), (label, metric)
        assert_frame_equal(
            tracking.download_table(home, dask.run_ids[label], "answers").select(ANSWER_COLUMNS),
            tracking.download_table(home, threads.run_ids[label], "answers").select(ANSWER_COLUMNS),
        )
        assert_frame_equal(
            tracking.download_table(home, dask.run_ids[label], "judgments"),
            tracking.download_table(home, threads.run_ids[label], "judgments"),
        )
        # The same model calls were asked, and the workers ran the models themselves. (Which calls
        # the shared completion cache serves depends on which worker asked first.)
        asked = {
            name: report.metrics[label]["answer_model_calls"] + report.metrics[label]["answer_model_cached_calls"]
            for name, report in (("threads", threads), ("dask", dask))
        }
        assert asked["dask"] == asked["threads"] >= 1
        assert dask.metrics[label]["answer_model_calls"] >= 1 and dask.metrics[label]["judge_calls"] >= 1


def test_ingest_and_index_on_a_dask_local_cluster_store_what_threads_store(tmp_path):
    stored = {}
    # One cluster, given to both flows by its address (a cluster the flow starts itself is tested above).
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        for name, runner in (
            ("threads", {"kind": "threads"}),
            ("dask", {"kind": "dask", "address": cluster.scheduler_address}),
        ):
            stored[name] = _ingested_and_indexed(tmp_path / name, runner)
    (documents, chunks, embeddings), (dask_documents, dask_chunks, dask_embeddings) = stored["threads"], stored["dask"]
    assert documents.height > 8
    assert_frame_equal(dask_documents, documents)
    assert_frame_equal(dask_chunks, chunks)
    assert dask_embeddings["text_sha256"].to_list() == embeddings["text_sha256"].to_list()
    assert abs(dask_embeddings["vector"].to_numpy() - embeddings["vector"].to_numpy()).max() < 1e-6


def _ingested_and_indexed(home, runner):
    """The sample corpus ingested and indexed on runner: its documents, chunks and embeddings."""
    import pyarrow.parquet as pq

    from ragassay.store.schemas import embeddings_spec
    from ragassay.store.tables import read_table
    from ragassay.store.workspace import collection_paths, load_chunks, load_documents

    # Small tasks, so that several run on each runner: 4 files an extraction task, 8 chunk texts
    # an embedding task (one row group of the embedding cache each).
    ingest_flow(
        IngestConfig(collection="sample", paths=(SAMPLE / "corpus",), files_per_task=4, task_runner=runner, home=home)
    )
    report = index_flow(IndexConfig(collection="sample", chunks_per_task=8, task_runner=runner, home=home))
    paths = collection_paths(home, "sample")
    assert pq.ParquetFile(paths.embeddings).metadata.num_row_groups == -(-report.embedded // 8) > 2
    # The groups' part files are gone once the cache is written.
    assert not list(paths.root.glob(".index-*"))
    return (
        load_documents(paths, with_text=True).drop("ingested_at"),
        load_chunks(paths),
        read_table(paths.embeddings, embeddings_spec(384)).sort("text_sha256"),
    )


def test_a_scheduler_address_needs_the_dask_kind():
    with pytest.raises(ValueError, match="set kind: dask"):
        TaskRunnerConfig(address="tcp://127.0.0.1:8786")
    with pytest.raises(ValueError, match="not both"):
        TaskRunnerConfig(kind="dask", address="tcp://127.0.0.1:8786", workers=2)


def test_the_cli_names_a_task_runner_it_does_not_know(home):
    from typer.testing import CliRunner

    from ragassay.cli.main import app

    result = CliRunner().invoke(app, ["eval", "retrieval", "-c", "sample", "--task-runner", "fibers"])
    assert result.exit_code == 2 and "task_runner.kind" in result.output, result.output
