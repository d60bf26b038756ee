"""ragassay's own search as a team would expose its RAG system: a Python callable, and the same
callable served over HTTP by a real server (stdlib http.server on a free port), with faults a
real service has on demand."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ragassay.search.run import run_search
from ragassay.search.settings import SearchSettings
from tests.helpers import SESSION_RESOURCES

# The workspace and collection searched (the test sets them); depth as the evaluation's max rank.
HOME: Path | None = None
COLLECTION = "sample"
DEPTH = 100


def search(question: str, query_id: str) -> dict:
    """The `python` kind's target: the question searched as `ragassay search --mode fulltext`."""
    hits = run_search(
        SESSION_RESOURCES, HOME, [COLLECTION], question, SearchSettings(search_type="fulltext"), DEPTH
    ).hits
    return {"retrieved": [{"doc_id": hit.doc_id, "text": hit.snippet, "score": hit.score} for hit in hits]}


async def search_async(question: str) -> dict:
    """The same, as a coroutine function without query_id."""
    return search(question, "")


def search_failing(question: str, query_id: str) -> dict:
    """The same search, failing on the questions in FAILING (a system that is down for some)."""
    if query_id in FAILING:
        raise RuntimeError("the index shard behind the system is down")
    return search(question, query_id)


def nothing(question: str) -> dict:
    """A system whose every answer comes back without a document (its ids are mapped wrong)."""
    return {"retrieved": [{"text": "some passage", "score": 1.0}]}


def hang(question: str) -> dict:
    """A blocking target that never returns in time (a synchronous call stuck on a dead socket)."""
    time.sleep(30)
    return {"retrieved": []}


def exits(question: str, query_id: str) -> dict:
    """A target that ends its process for one question, or is interrupted inside, as some CLIs
    wrapped as libraries do."""
    if query_id.endswith("1"):
        raise SystemExit(3)
    if query_id.endswith("2"):
        raise KeyboardInterrupt
    return search(question, query_id)


class Faults:
    """What the server does wrong, by question id: statuses to answer before it answers properly
    (with a Retry-After header when retry_after is set), ids it answers too slowly, or with a body
    that is not JSON, or without its `sources` field, or with none found, or with a body of the
    test's own; ids whose documents get a prefix the collection does not use; ids it redirects
    (307 to the same endpoint under /moved, which answers properly); ids whose error page echoes
    the request's headers, as some debug pages and gateways do."""

    def __init__(self):
        self.failures_before_success: dict[str, list[int]] = {}
        self.retry_after: str | None = None
        self.slow: set[str] = set()
        self.malformed: set[str] = set()
        self.without_sources: set[str] = set()
        self.empty_sources: set[str] = set()
        self.bodies: dict[str, dict] = {}
        self.unknown_ids: set[str] = set()
        self.redirected: set[str] = set()
        self.echo_headers: set[str] = set()
        self.die_after: int | None = None  # requests answered before the server goes away
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that timed out closed its end: the slow fault's point, not news


class SearchServer:
    """The served search on 127.0.0.1:port; POST /rag {"query", "id"} → {"sources": [...], "answer"}."""

    def __init__(self, faults: Faults | None = None):
        self.faults = faults or Faults()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: the test reads the results, not the access log
                pass

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers: dict[str, str] = {}
                if request["id"] in server.faults.redirected and self.path != "/moved":
                    status, body, headers = 307, b"", {"Location": server.url.removesuffix("/rag") + "/moved"}
                elif request["id"] in server.faults.echo_headers:
                    echoed = (
                        f"Authorization={self.headers.get('Authorization')} X-Tenant={self.headers.get('X-Tenant')}"
                    )
                    status, body = 200, f"<pre>debug: upstream refused {echoed}</pre>".encode()
                else:
                    status, body = server.respond(request)
                    if status == 429 and server.faults.retry_after is not None:
                        headers["Retry-After"] = server.faults.retry_after
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

        self.http = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/rag"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def respond(self, request: dict) -> tuple[int, dict | bytes]:
        query_id, faults = request["id"], self.faults
        with faults.lock:
            faults.calls[query_id] = faults.calls.get(query_id, 0) + 1
            if faults.die_after is not None and sum(faults.calls.values()) == faults.die_after:
                # The last answer, then the server stops listening: later calls cannot connect.
                threading.Thread(target=self.stop_listening, daemon=True).start()
            pending = faults.failures_before_success.get(query_id, [])
            status = pending.pop(0) if pending else None
        if status is not None:
            return status, {"error": "try again"}
        if query_id in faults.slow:
            time.sleep(3)
        if query_id in faults.malformed:
            return 200, b"<html>gateway error</html>"
        if query_id in faults.without_sources:
            return 200, {"answer": "no sources today"}
        if query_id in faults.empty_sources:
            return 200, {"sources": []}
        if query_id in faults.bodies:
            return 200, faults.bodies[query_id]
        result = search(request["query"], query_id)
        prefix = "kb://" if query_id in faults.unknown_ids else ""
        sources = [
            {"doc_id": prefix + item["doc_id"], "text": item["text"], "score": item["score"]}
            for item in result["retrieved"]
        ]
        return 200, {"sources": sources}

    def stop_listening(self) -> None:
        self.http.shutdown()
        self.http.server_close()

    def __enter__(self) -> SearchServer:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        if self.http.socket.fileno() != -1:
            self.stop_listening()


# What the answering system does, by question id: raise, or answer without returning contexts.
FAILING: set[str] = set()
WITHOUT_CONTEXTS: set[str] = set()


def answer(question: str, query_id: str) -> dict:
    """The `python` kind's target for answer evaluation: the top search hit's text as the answer
    (a crude but honest RAG system), its contexts and the document it cites; the unanswerable
    questions (ids u…) declined, as the system says."""
    if query_id in FAILING:
        raise RuntimeError("the model server behind the system is down")
    if query_id.startswith("u"):
        return {"answer": "I cannot answer that from the documents.", "refused": True, "retrieved": []}
    found = search(question, query_id)["retrieved"][:2]
    first_sentence = found[0]["text"].split(". ")[0].strip().rstrip(".") + "."
    record = {"answer": first_sentence, "citations": [found[0]["doc_id"]], "refused": False}
    if query_id not in WITHOUT_CONTEXTS:
        record["retrieved"] = found
    return record
