"""Systems under test, measured (BENCHMARKS.md, "Systems under test"):

1. ragassay's overhead over calling the same HTTP endpoint directly: a real server (stdlib,
   threaded) that answers each request after a fixed service time with ten sources; the same
   questions asked by a plain httpx client and by ragassay's `http` kind (body template,
   JSONPaths, record building, the retry wrapper; cache off so every call is made), at
   concurrency 1 and 4. Prints both wall times and the overhead as a share of the direct time
   (goal: at most 5%).
2. A nightly-style run: `ragassay eval retrieval` of the sample corpus with ragassay's own
   fulltext search served over HTTP as the system under test beside the built-in fulltext
   configuration (a fresh workspace, the CLI as a user runs it): seconds, and whether the two
   configurations' means agree.

    .venv/bin/python benchmarks/bench_systems.py [--calls 400] [--service-ms 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
RAGASSAY = str(Path(sys.executable).parent / "ragassay")


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


def fixed_time_server(service_seconds: float) -> tuple[ThreadingHTTPServer, str]:
    """A RAG endpoint stand-in whose own time per request is service_seconds."""
    sources = [{"doc_id": f"guides/doc-{n}.txt", "text": "Hive notes. " * 40, "score": 10.0 - n} for n in range(10)]
    payload = json.dumps({"answer": "On day 3.", "sources": sources}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(service_seconds)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = _Quiet(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/rag"


def direct(url: str, questions: list[tuple[str, str]], concurrency: int) -> float:
    import httpx

    client = httpx.Client(timeout=30)

    def one(item):
        query_id, question = item
        response = client.post(url, json={"query": question, "id": query_id, "top_k": 10})
        body = response.json()
        return [source["doc_id"] for source in body["sources"]]

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, questions))
    return time.perf_counter() - started


def through_ragassay(url: str, questions: list[tuple[str, str]], concurrency: int) -> float:
    from ragassay.systems.calls import call_system
    from ragassay.systems.http_system import HttpSystem

    system = HttpSystem(
        kind="http",
        url=url,
        body={"query": "{{question}}", "id": "{{query_id}}", "top_k": 10},
        response={"documents": "$.sources[*].doc_id", "contexts": "$.sources[*].text", "answer": "$.answer"},
        concurrency=concurrency,
        cache=False,
    )
    started = time.perf_counter()
    records = call_system(system, questions, None)
    seconds = time.perf_counter() - started
    assert all(record.answered and len(record.retrieved) == 10 for record in records)
    return seconds


def overhead(calls: int, service_ms: float) -> None:
    server, url = fixed_time_server(service_ms / 1000)
    questions = [(f"q{n}", f"When was hive {n} inspected, and by whom?") for n in range(calls)]
    print(f"\n{calls} calls to an endpoint whose own time is {service_ms:g} ms a call:")
    print(f"{'concurrency':>11} {'direct s':>9} {'ragassay s':>11} {'overhead':>9}")
    for concurrency in (1, 4):
        direct(url, questions[:20], concurrency)  # warm the connection pools
        through_ragassay(url, questions[:20], concurrency)
        plain = min(direct(url, questions, concurrency) for _ in range(3))
        ours = min(through_ragassay(url, questions, concurrency) for _ in range(3))
        print(f"{concurrency:>11} {plain:>9.2f} {ours:>11.2f} {(ours - plain) / plain:>9.1%}")
    server.shutdown()


SERVE_SEARCH = """
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from ragassay.resources import Resources
from ragassay.search.run import run_search
from ragassay.search.settings import SearchSettings

home, port = Path(sys.argv[1]), int(sys.argv[2])
resources = Resources()

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        hits = run_search(resources, home, ["sample"], request["query"], SearchSettings(search_type="fulltext"), 10).hits
        body = json.dumps({"sources": [{"doc_id": h.doc_id, "text": h.snippet, "score": h.score} for h in hits]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def nightly() -> None:
    import socket

    folder = Path(tempfile.mkdtemp(prefix="ragassay-bench-systems-"))
    env = {**os.environ, "RAGASSAY_HOME": str(folder / "workspace")}
    env.pop("PREFECT_API_URL", None)
    for command in (
        ["ingest", "-c", "sample", str(REPO / "data/sample/corpus")],
        ["index", "-c", "sample"],
        ["golden", "add", "-c", "sample", "--file", str(REPO / "data/sample/golden.jsonl")],
    ):
        subprocess.run([RAGASSAY, *command], env=env, cwd=REPO, check=True, capture_output=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-c", SERVE_SEARCH, env["RAGASSAY_HOME"], str(port)], env=env, cwd=REPO)
    try:
        time.sleep(4)  # the server loads the index on its first request; give it its start-up
        configs = folder / "configs.yaml"
        configs.write_text(
            "configurations:\n"
            "  - {label: fulltext, search_type: fulltext}\n"
            "  - label: served\n"
            "    system:\n"
            "      kind: http\n"
            f"      url: http://127.0.0.1:{port}/rag\n"
            '      body: {query: "{{question}}"}\n'
            '      response: {documents: "$.sources[*].doc_id", contexts: "$.sources[*].text"}\n'
            "      cache: false\n"
        )
        started = time.perf_counter()
        result = subprocess.run(
            [
                RAGASSAY,
                "eval",
                "retrieval",
                "-c",
                "sample",
                "--configs",
                str(configs),
                "--assert",
                "served:coverage>=0.98",
                "--json",
            ],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
    finally:
        server.terminate()
    report = json.loads(result.stdout)
    same = report["means"]["served"] | {"coverage": 0} == report["means"]["fulltext"] | {"coverage": 0}
    costs = report["model_costs"]["served"]
    print(
        f"\nnightly-style `eval retrieval` of the sample ({report['questions']} questions) against the served search: "
        f"{seconds:.1f} s end to end (exit {result.returncode}); coverage {costs['coverage']:.2f}, "
        f"p50 {costs['latency_p50_ms']:.1f} ms, p95 {costs['latency_p95_ms']:.1f} ms; "
        f"means equal to the built-in fulltext configuration's: {same}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--service-ms", type=float, default=20.0)
    arguments = parser.parse_args()
    overhead(arguments.calls, arguments.service_ms)
    nightly()


if __name__ == "__main__":
    main()
