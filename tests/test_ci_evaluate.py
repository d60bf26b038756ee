"""scripts/ci_evaluate.py against the servers CI meets between it and Prefect (issue 71, item 13):
a login proxy answering HTML, JSON of another shape, a server that accepts and never answers, and
one 500 while a run goes on. Exit 1 is a failed assertion and nothing else; --timeout bounds the
whole wait."""

from __future__ import annotations

import importlib.util
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import REPO

spec = importlib.util.spec_from_file_location("ci_evaluate", REPO / "scripts" / "ci_evaluate.py")
ci_evaluate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ci_evaluate)


class FakePrefect(ThreadingHTTPServer):
    """Prefect's API as CI sees it through whatever stands in front of it: `mode` picks the fault."""

    def __init__(self, mode: str):
        self.mode, self.polls = mode, 0
        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/api"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        server: FakePrefect = self.server
        if server.mode == "login":
            self._send(200, b"<html><body>Sign in to continue</body></html>", "text/html")
        elif server.mode == "no-id":
            self._send(200, json.dumps({"name": "sample-pipeline-nightly"}).encode())
        elif self.path.startswith("/api/deployments/name/"):
            self._send(200, json.dumps({"id": "d1"}).encode())
        else:  # /api/flow_runs/r1: one 500 while the run goes on, then completed
            server.polls += 1
            if server.polls == 2:
                self._send(500, b'{"detail": "Internal Server Error"}')
                return
            state = "RUNNING" if server.polls < 3 else "COMPLETED"
            self._send(200, json.dumps({"id": "r1", "name": "run", "state": {"type": state}}).encode())

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.endswith("/create_flow_run"):
            self._send(201, json.dumps({"id": "r1", "name": "run"}).encode())
        else:  # /api/artifacts/filter
            self._send(200, b"[]")


def run(api: str, *extra: str) -> tuple[int, float]:
    started = time.monotonic()
    code = ci_evaluate.main(["--prefect-api", api, "--deployment", "pipeline/nightly", "--poll", "0.2", *extra])
    return code, time.monotonic() - started


@pytest.mark.parametrize(
    ("mode", "said"), [("login", "the answer is not JSON (it starts '<html>"), ("no-id", "has no 'id'")]
)
def test_an_answer_of_another_shape_is_exit_2_naming_it(mode, said, capsys):
    server = FakePrefect(mode)
    try:
        code, _ = run(server.api)
    finally:
        server.shutdown()
    assert code == ci_evaluate.EXIT_ERROR
    assert said in capsys.readouterr().err


def test_a_500_while_polling_is_tried_again_and_the_run_s_verdict_is_read(capsys):
    ci_evaluate.REQUEST_TIMEOUT = 5.0
    server = FakePrefect("ok")
    try:
        code, _ = run(server.api)
    finally:
        server.shutdown()
    printed = capsys.readouterr()
    assert code == ci_evaluate.EXIT_PASSED, printed.err
    assert "HTTP 500" in printed.err and "trying again" in printed.err
    assert json.loads(printed.out)["state"] == "COMPLETED"


def test_a_server_that_never_answers_costs_the_timeout_not_minutes(capsys):
    silent = socket.create_server(("127.0.0.1", 0))
    accepted = []
    threading.Thread(target=lambda: accepted.append(silent.accept()), daemon=True).start()
    try:
        code, seconds = run(f"http://127.0.0.1:{silent.getsockname()[1]}/api", "--timeout", "3")
    finally:
        silent.close()
    assert code == ci_evaluate.EXIT_ERROR
    assert seconds < 8, seconds
    assert "error:" in capsys.readouterr().err
