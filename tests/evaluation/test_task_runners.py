"""Retrieval evaluation on a real Dask LocalCluster of two worker processes gives the numbers of the
default thread runner: the same per-question rows, runs and means."""

from __future__ import annotations

import pytest
from distributed import Client, LocalCluster
from polars.testing import assert_frame_equal

from flows.eval_retrieval import eval_retrieval_flow
from flows.index import index_flow
from flows.ingest import ingest_flow
from ragassay import tracking
from ragassay.config import IndexConfig, IngestConfig, RetrievalEvalConfig, TaskRunnerConfig, parse_config
from ragassay.golden.store import add_from_file
from tests.conftest import SAMPLE

CONFIGURATIONS = [
    {"label": "fulltext", "search_type": "fulltext"},
    {"label": "semantic", "search_type": "semantic"},
    {"label": "hybrid", "search_type": "hybrid", "fusion": {"k": 60}},
]


def test_a_dask_local_cluster_gives_the_numbers_of_the_thread_runner(home):
    ingest_flow(IngestConfig(collection="sample", paths=(SAMPLE / "corpus",), home=home))
    index_flow(IndexConfig(collection="sample", home=home))
    add_from_file(home, "sample", SAMPLE / "golden.jsonl")
    settings = dict(collections=["sample"], configurations=CONFIGURATIONS, home=home)
    threads = eval_retrieval_flow(parse_config(RetrievalEvalConfig, **settings))
    # A cluster the flow starts (workers: 2), and one already running that it is given the address of.
    started = eval_retrieval_flow(parse_config(RetrievalEvalConfig, **settings, task_runner={"kind": "dask", "workers": 2}))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        given = eval_retrieval_flow(parse_config(RetrievalEvalConfig, **settings, task_runner={"kind": "dask", "address": cluster.scheduler_address}))
        # The searches ran in the worker processes: those that ran one hold opened collections.
        opened = client.run(lambda: __import__("tasks.resources").resources.worker_resources.cache_info().currsize)
    assert len(opened) == 2 and sum(opened.values()) >= 1
    for dask in (started, given):
        assert dask.questions == threads.questions == 30
        assert dask.means == threads.means and dask.comparisons == threads.comparisons
        for label in threads.run_ids:
            for table in ("per_question", "run"):
                assert_frame_equal(tracking.download_table(home, dask.run_ids[label], table), tracking.download_table(home, threads.run_ids[label], table))


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
