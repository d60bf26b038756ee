"""What a system under test or a served model sends is bounded (issue 58, case 1): a real HTTP
server on loopback answers with a gzip bomb, a body dripping a byte at a time, a chunked body
without end, a redirect loop and a ranking of a million ids. Each is that question's error row (or
a bounded record, or the model call's error), never memory, a hang or a crash."""

from __future__ import annotations

import json
import resource
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragassay.systems.calls import call_system
from ragassay.systems.http_system import MAX_LIST_ITEMS, HttpSystem


def _bomb(megabytes: int = 200) -> bytes:
    """A gzip body of `megabytes` MB of JSON-looking text once inflated, about 200 kB as sent
    (compressed a megabyte at a time: the test never holds it inflated either)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
    parts = [packer.compress(b'{"ids": ["')]
    parts += [packer.compress(b"a" * 1_000_000) for _ in range(megabytes)]
    return b"".join([*parts, packer.compress(b'"]}'), packer.flush()])


BODIES: dict[str, bytes] = {}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        route = self.path
        try:
            if route in ("/bomb", "/v1/chat/completions"):
                self._send(BODIES["bomb"], {"Content-Encoding": "gzip"})
            elif route == "/many":
                self._send(BODIES["many"])
            elif route == "/loop":
                self.send_response(307)
                self.send_header("Location", "/loop")
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif route == "/drip":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "100000")
                self.end_headers()
                for _ in range(100_000):  # a byte every 0.2 s: each read is quick, the whole is not
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)
            elif route == "/endless":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while True:
                    self.wfile.write(b"400\r\n" + b" " * 0x400 + b"\r\n")
                    self.wfile.flush()
                    time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: the bound's point

    def _send(self, body: bytes, headers: dict | None = None):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


@pytest.fixture(scope="module")
def hostile():
    BODIES["bomb"] = _bomb()
    BODIES["many"] = json.dumps({"ids": [f"doc-{n}" for n in range(1_000_000)]}).encode()
    server = _Server(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _call(url: str, **settings):
    system = HttpSystem(
        kind="http", url=url, body={"q": "{{question}}"}, response={"documents": "$.ids[*]"}, max_retries=0, **settings
    )
    started = time.monotonic()
    [record] = call_system(system, [("q1", "Which hive?")], cache=None)
    return record, time.monotonic() - started


def test_a_gzip_bomb_is_too_large_before_it_fills_memory(hostile):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    record, _ = _call(f"{hostile}/bomb", max_response_bytes=5_000_000)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert record.error_kind == "too_large" and "over 5,000,000 bytes (max_response_bytes)" in record.error
    assert grown < 100_000, f"{grown} KiB more at the peak: the bomb was inflated"


@pytest.mark.parametrize("route", ["drip", "endless"])
def test_a_body_that_never_ends_is_a_timeout_in_wall_time(hostile, route):
    record, seconds = _call(f"{hostile}/{route}", timeout_seconds=1.5)
    assert record.error_kind == "timeout" and "no whole response" in record.error
    assert seconds < 4, f"{seconds:.1f} s for a 1.5 s bound"


def test_a_redirect_loop_is_that_questions_error_not_a_crash(hostile):
    record, _ = _call(f"{hostile}/loop", follow_redirects=True)
    assert record.error_kind == "http_status" and "redirects in a loop" in record.error


def test_a_ranking_of_a_million_ids_is_read_to_a_bound_within_the_calls_time(hostile):
    record, seconds = _call(f"{hostile}/many", timeout_seconds=10)
    assert record.error is None and len(record.retrieved) == MAX_LIST_ITEMS
    assert [item.doc_id for item in record.retrieved[:2]] == ["doc-0", "doc-1"]
    assert seconds < 10


def test_a_served_models_gzip_bomb_is_an_error_before_it_fills_memory(hostile):
    from ragassay.llm.catalog import ModelError
    from ragassay.llm.registry import load_chat_model
    from ragassay.llm.settings import ChatModelConfig

    model = load_chat_model(ChatModelConfig(backend="openai", url=hostile, model="m", timeout_seconds=5))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ModelError, match="response is over 20,000,000 bytes"):
        model.complete([{"role": "user", "content": "Which hive?"}], None, 8, 0.0, 0)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000


def test_a_served_judges_oversized_response_is_one_unreadable_verdict_not_the_evaluations(hostile):
    """Issue 58, case 1, for served models: the bomb is that judgement's outcome (unreadable,
    "too_large", counted like any unreadable verdict), and the judge goes on."""
    from ragassay.judge.judge import Judge
    from ragassay.llm.registry import load_chat_model
    from ragassay.llm.settings import ChatModelConfig

    judge = Judge(load_chat_model(ChatModelConfig(backend="openai", url=hostile, model="m", timeout_seconds=5)))
    result = judge.support("The Warré hive has boxes.", "The Warré hive has boxes.")
    assert result.value is None and result.error.startswith("too_large: chat endpoint")
    assert result.usage.unparseable == 1
