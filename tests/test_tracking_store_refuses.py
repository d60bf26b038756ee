"""Issue 71, items 7-9: a tracking store that refuses what is logged. Whatever the store does (an
SQLite database another process keeps locked, a server answering 401 to the credentials in
MLFLOW_TRACKING_URI, an artifact folder that cannot be written), the computed results are printed
and kept in `unlogged/` with the command that logs them later, the exit is 2 with the store's own
reason, no batch is left RUNNING, and no form of a credential is shown."""

from __future__ import annotations

import base64
import http.server
import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.test_tracking_server_lost import kept_folder, ragassay, sample_workspace  # noqa: F401

USER, PASSWORD = "alice", "S3cret-tracking-pass"


class _RefusingServer(http.server.ThreadingHTTPServer):
    """A tracking server that answers 401 to every request, echoing the Authorization header it
    was sent (as careless servers do)."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _RefusingHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def url(self, credentials: str = "") -> str:
        return f"http://{credentials}127.0.0.1:{self.server_address[1]}"


class _RefusingHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _refuse(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps(
            {"error_code": "UNAUTHENTICATED", "message": f"bad credentials: {self.headers.get('Authorization')}"}
        ).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_DELETE = _refuse


def _no_credential_in(text: str) -> None:
    encoded = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    for form in (PASSWORD, encoded, encoded.rstrip("=")):
        assert form not in text


@pytest.mark.flows
@pytest.mark.slow
def test_a_server_answering_401_is_exit_2_with_results_kept_and_no_credential_shown(sample_workspace):  # noqa: F811
    server = _RefusingServer()
    try:
        uri = server.url(f"{USER}:{PASSWORD}@")
        result, _ = ragassay(
            "eval", "retrieval", "-c", "sample", "--mode", "fulltext", "--max-questions", "3",
            home=sample_workspace, tracking=uri,
        )  # fmt: skip
        listed, _ = ragassay("runs", "list", home=sample_workspace, tracking=uri)
    finally:
        server.shutdown()
    assert result.returncode == 2, result.stderr[-3000:]
    assert "recall@5" in result.stdout and "not in MLflow" in result.stdout
    assert "did not take the batch: it refused the credentials (401 Unauthorized)" in result.stderr
    assert "unexpected error" not in result.stderr
    _no_credential_in(result.stdout + result.stderr)
    folder = kept_folder(sample_workspace, result.stderr)
    kept = json.loads((folder / "batch.json").read_text())
    _no_credential_in(json.dumps(kept))
    assert listed.returncode == 2 and "did not list its runs: it refused the credentials" in listed.stderr
    _no_credential_in(listed.stdout + listed.stderr)
    # Nor in Prefect's database: its flow runs' state messages, logs and events.
    prefect_home = Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect"))
    for database in prefect_home.glob("*.db"):
        with sqlite3.connect(database) as connection:
            for table in ("flow_run", "log", "events", "task_run_state", "flow_run_state"):
                try:
                    rows = connection.execute(f"SELECT * FROM {table}").fetchall()
                except sqlite3.OperationalError:
                    continue
                _no_credential_in(repr(rows))


@pytest.mark.flows
@pytest.mark.slow
def test_a_store_locked_for_longer_than_its_retries_keeps_the_results_and_leaves_no_batch_running(
    sample_workspace,  # noqa: F811
):
    # The store made and a batch logged first, then another process holds SQLite's write lock.
    first, _ = ragassay("eval", "retrieval", "-c", "sample", "--mode", "fulltext", "--max-questions", "2",
                        home=sample_workspace, tracking=None)  # fmt: skip
    assert first.returncode == 0, first.stderr[-2000:]
    holder = subprocess.Popen(
        [
            sys.executable, "-c",
            "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
            "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(600)",
            str(sample_workspace / "mlflow.db"),
        ],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        result, _ = ragassay(
            "eval", "retrieval", "-c", "sample", "--mode", "fulltext", "--max-questions", "3",
            home=sample_workspace, tracking=None,
        )  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 2, result.stderr[-3000:]
    assert "its SQLite database is locked by another process" in result.stderr and "recall@5" in result.stdout
    kept_folder(sample_workspace, result.stderr)
    # Once the lock is gone, the next batch ends whatever the refused one left RUNNING.
    again, _ = ragassay("eval", "retrieval", "-c", "sample", "--mode", "fulltext", "--max-questions", "3",
                        home=sample_workspace, tracking=None)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    listed, _ = ragassay("runs", "list", "--json", home=sample_workspace, tracking=None)
    statuses = [row["status"] for row in json.loads(listed.stdout) if row["role"] == "batch"]
    assert "RUNNING" not in statuses, statuses


@pytest.mark.flows
@pytest.mark.skipif(
    os.geteuid() == 0 and not Path("/usr/bin/chattr").exists(), reason="needs chattr or a non-root user"
)
@pytest.mark.slow
def test_an_artifact_folder_that_cannot_be_written_ends_the_batch_failed_with_results_kept(
    sample_workspace,  # noqa: F811
):
    first, _ = ragassay("eval", "retrieval", "-c", "sample", "--mode", "fulltext", "--max-questions", "2",
                        home=sample_workspace, tracking=None)  # fmt: skip
    assert first.returncode == 0, first.stderr[-2000:]
    artifacts = sample_workspace / "mlartifacts"
    frozen = subprocess.run(["chattr", "-R", "+i", str(artifacts)], capture_output=True)
    if frozen.returncode != 0:
        pytest.skip(f"chattr +i refused here: {frozen.stderr.decode()[:200]}")
    try:
        result, _ = ragassay(
            "eval", "retrieval", "-c", "sample", "--mode", "fulltext", "--max-questions", "3",
            home=sample_workspace, tracking=None,
        )  # fmt: skip
    finally:
        subprocess.run(["chattr", "-R", "-i", str(artifacts)], check=True)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "did not take the batch: cannot use" in result.stderr and "recall@5" in result.stdout
    kept_folder(sample_workspace, result.stderr)
    listed, _ = ragassay("runs", "list", "--json", home=sample_workspace, tracking=None)
    rows = json.loads(listed.stdout)
    assert all(row["status"] != "RUNNING" for row in rows), [(r["role"], r["status"]) for r in rows]
