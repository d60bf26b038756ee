"""Issue 58, case 5: a tracking server that goes away. MLflow retried for minutes and the command
ended "unexpected error MlflowException", exit 3, printing none of the results it had computed.
Now the wait is seconds, the results are printed and kept in the workspace, the exit is 2 naming
the server and how to log the batch again, and rerunning the command logs it."""

from __future__ import annotations

import http.client
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import REPO, SAMPLE

RAGASSAY = str(Path(sys.executable).parent / "ragassay")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ragassay(*arguments: str, home: Path, tracking: str | None, extra_env: dict | None = None):
    env = {key: value for key, value in os.environ.items() if key != "MLFLOW_TRACKING_URI"}
    env |= {"RAGASSAY_HOME": str(home), **(extra_env or {})}
    if tracking is not None:
        env["MLFLOW_TRACKING_URI"] = tracking
    started = time.monotonic()
    result = subprocess.run([RAGASSAY, *arguments], env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    return result, time.monotonic() - started


@pytest.fixture
def sample_workspace(tmp_path) -> Path:
    from ragassay.golden.store import add_from_file
    from tests.helpers import build_collection

    home = tmp_path / "workspace"
    build_collection(home, "sample", (SAMPLE / "corpus",))
    add_from_file(home, "sample", SAMPLE / "golden.jsonl")
    return home


def kept_folder(home: Path, stderr: str) -> Path:
    folders = list((home / "unlogged").glob("*/retrieval"))
    assert len(folders) == 1, stderr
    return folders[0]


@pytest.mark.flows
@pytest.mark.slow
def test_an_evaluation_whose_tracking_server_is_gone_prints_keeps_and_exits_2_then_a_rerun_logs_it(
    sample_workspace,
):
    dead = f"http://127.0.0.1:{free_port()}"
    result, seconds = ragassay(
        "eval", "retrieval", "-c", "sample", "--mode", "fulltext", "--max-questions", "3", "--assert",
        "fulltext:mrr>=0.5", home=sample_workspace, tracking=dead,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    # The results are printed, and the error names the server, why, where they are and what to do.
    assert "recall@5" in result.stdout and "not in MLflow" in result.stdout
    assert f"the MLflow tracking server {dead} did not answer (Connection refused" in result.stderr
    assert "run the same command again" in result.stderr and "unexpected error" not in result.stderr
    # MLflow's own defaults waited about four minutes a request; bounded, it is seconds.
    assert seconds < 90, seconds
    folder = kept_folder(sample_workspace, result.stderr)
    assert str(folder) in result.stderr
    per_question = pl.read_parquet(folder / "configuration-1" / "per_question.parquet")
    assert per_question.height == 3 and per_question["mrr"].mean() > 0
    kept = json.loads((folder / "batch.json").read_text())
    assert kept["verdict"] == "passed" and kept["not_logged"].startswith("the MLflow tracking server")
    assert json.loads((folder / "configuration-1.json").read_text())["label"] == "fulltext"
    assert "**not in MLflow**" in (folder / "report.md").read_text()

    # Once a store answers, the same command logs the batch (the workspace's store here).
    again, _ = ragassay(
        "eval", "retrieval", "-c", "sample", "--mode", "fulltext", "--max-questions", "3", "--json",
        home=sample_workspace, tracking=None,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    logged = json.loads(again.stdout)
    assert logged["not_logged"] is None and logged["parent_run_id"]
    assert logged["means"]["fulltext"]["mrr"] == pytest.approx(per_question["mrr"].mean())


class _SilentServer:
    """A tracking server that accepts connections and never answers (hung, or a dead network)."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.socket.getsockname()[1]}"

    def _accept(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self):
        self.socket.close()
        for connection in self.accepted:
            connection.close()


@pytest.mark.flows
@pytest.mark.slow
def test_a_tracking_server_that_never_answers_costs_its_timeout_not_minutes(sample_workspace):
    server = _SilentServer()
    try:
        result, seconds = ragassay(
            "eval", "retrieval", "-c", "sample", "--mode", "fulltext", "--max-questions", "2",
            home=sample_workspace, tracking=server.url, extra_env={"MLFLOW_HTTP_REQUEST_TIMEOUT": "2"},
        )  # fmt: skip
    finally:
        server.close()
    assert result.returncode == 2, result.stderr[-3000:]
    assert "did not answer (timed out after 2 s" in result.stderr and "recall@5" in result.stdout
    assert seconds < 120, seconds  # four tries of 2 s and their backoff, not 4 x 120 s
    kept_folder(sample_workspace, result.stderr)


class _DyingProxy(http.server.ThreadingHTTPServer):
    """A real MLflow server behind a proxy that dies (stops listening, drops what it holds) when
    the request that would create the run numbered `die_at` arrives: the server killed mid-run."""

    def __init__(self, upstream: str, die_at: int):
        self.upstream, self.die_at, self.created = upstream, die_at, 0
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def die(self):
        threading.Thread(target=self.shutdown, daemon=True).start()
        self.socket.close()


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _forward(self):
        proxy: _DyingProxy = self.server
        if self.path.startswith("/api/2.0/mlflow/runs/create"):
            proxy.created += 1
            if proxy.created >= proxy.die_at:
                proxy.die()
                self.close_connection = True
                return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        host, port = proxy.upstream.removeprefix("http://").split(":")
        upstream = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        upstream.request(self.command, self.path, body=body or None, headers=headers)
        response = upstream.getresponse()
        payload = response.read()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_DELETE = _forward


@pytest.fixture
def mlflow_server(tmp_path):
    port = free_port()
    store = tmp_path / "mlflow-server"
    store.mkdir()
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port),
            "--workers", "1", "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}",
            "--default-artifact-root", (store / "artifacts").as_uri(),
        ],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(240):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.25)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.flows
def test_a_pipeline_whose_tracking_server_dies_mid_run_prints_and_keeps_each_evaluation(tmp_path, mlflow_server):
    """The pipeline's batch and its ingest and index runs reach the server; it dies as the
    retrieval stage logs. The retrieval results and the pipeline's report are printed and kept,
    the flow run ends Failed saying so, the exit is 2."""
    proxy = _DyingProxy(mlflow_server, die_at=4)  # the batch, ingest, index; dies at retrieval's run
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(
        f"collection: sample\ningest: {{paths: [{SAMPLE / 'corpus'}]}}\n"
        f"golden: {{file: [{SAMPLE / 'golden.jsonl'}], generate: false}}\n"
        "retrieval:\n  configurations: [{label: fulltext, search_type: fulltext}]\n  max_questions: 5\n"
        "answers: {enabled: false}\n"
    )
    home = tmp_path / "workspace"
    try:
        result, _ = ragassay("run", "--config", str(pipeline), home=home, tracking=proxy.url)
    finally:
        proxy.die()
    assert result.returncode == 2, result.stderr[-3000:]
    assert "recall@5" in result.stdout and "not in MLflow" in result.stdout
    assert f"the MLflow tracking server {proxy.url} did not answer" in result.stderr
    batch_folder = kept_folder(home, result.stderr).parent
    assert pl.read_parquet(batch_folder / "retrieval" / "configuration-1" / "per_question.parquet").height == 5
    assert "**not in MLflow**" in (batch_folder / "report.md").read_text()
    # What reached the server before it died is there: the batch, its ingest and index runs.
    from mlflow.tracking import MlflowClient

    runs = MlflowClient(mlflow_server).search_runs(
        [e.experiment_id for e in MlflowClient(mlflow_server).search_experiments()]
    )
    assert sorted(r.info.run_name.split("-")[0] for r in runs) == ["index/sample", "ingest/sample", "pipeline"]
