"""Indexing SciFact copies through a served embedding model: seconds, chunks a second, and the
peak memory of the index build and of the server, at each size.

    .venv/bin/python benchmarks/bench_served_scale.py [--sizes 1 4] [--concurrency 2] [--workers 1]
        [--url http://gpu-host:8080 --model NAME] [--workdir DIR]

Each size is SciFact's corpus copied that many times (benchmarks/bench_scale.py's copies), but every
copy after the first has its texts changed a little (its title and each sentence end marked with
the copy's number), so that no chunk of one copy is another's: the embedding cache, keyed by
text, cannot serve the copies, and every chunk goes through the server. The corpus is ingested
(chunks 1200/150), then the `index` flow runs in a fresh process with the served model
(batch 32, --concurrency requests in flight; --workers > 1: a Dask LocalCluster of that many
worker processes sharing them). Without --url the server is tests/embedding_server.py on loopback:
the bundled MiniLM behind a real HTTP API, on this machine's cores. Prints, per size: chunks,
texts embedded, embedding seconds, chunks a second, the index process's peak RSS (VmHWM) and the
server's, and the growth exponent of the embedding seconds between sizes (1: linear).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_scale import SCIFACT, copies_of_scifact, status_mb
from bench_served_embeddings import local_server
from harness import flow_engine

REPO = Path(__file__).resolve().parent.parent
CHUNKING = {"chunk_size": 1200, "chunk_overlap": 150}
SENTENCE_END = re.compile(r"\. ")


def distinct_copies(folder: Path, size: int) -> int:
    """bench_scale's copies, with copy c's title and sentence ends marked [c] so no text repeats."""
    documents = copies_of_scifact(folder, size)["documents"]
    corpus = folder / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    with corpus.open("w", encoding="utf-8") as out:
        for row in rows:
            copy = row["_id"].partition("~")[2]
            if copy:
                row = {
                    **row,
                    "title": f"{row['title']} [{copy}]",
                    "text": SENTENCE_END.sub(f". [{copy}] ", row["text"]),
                }
            out.write(json.dumps(row) + "\n")
    return documents


def peak_rss_of(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--url")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--stage-index", nargs=2, help=argparse.SUPPRESS)  # home, settings JSON: in this process
    arguments = parser.parse_args()
    if arguments.stage_index:
        print("RESULT " + json.dumps(index_here(Path(arguments.stage_index[0]), arguments.stage_index[1])), flush=True)
        return
    if not (SCIFACT / "corpus.jsonl").is_file():
        raise SystemExit(f"SciFact is not at {SCIFACT}")
    workdir = (arguments.workdir or Path(tempfile.mkdtemp(prefix="ragassay-served-scale-"))).resolve()
    url, server = (arguments.url, None) if arguments.url else local_server()
    results = []
    try:
        with flow_engine():
            from prefect.settings import get_current_settings

            from flows.ingest import ingest_flow
            from ragassay.config import IngestConfig

            api_url = str(get_current_settings().api.url)
            for size in arguments.sizes:
                home = workdir / f"home-x{size}"
                documents = distinct_copies(workdir / f"scifact-x{size}", size)
                ingest_flow(
                    IngestConfig(
                        collection="scifact",
                        paths=(workdir / f"scifact-x{size}",),
                        format="beir",
                        chunking=CHUNKING,
                        home=home,
                    )
                )
                model = {
                    "backend": "openai",
                    "url": url,
                    "model": arguments.model,
                    "batch_size": 32,
                    "concurrency": arguments.concurrency,
                }
                settings = {"embedding_model": model, "chunks_per_task": 4096}
                if arguments.workers > 1:
                    settings["task_runner"] = {"kind": "dask", "workers": arguments.workers}
                measured = child(home, settings, api_url)
                measured |= {"size": size, "documents": documents}
                if server is not None:
                    measured["server_peak_rss_mb"] = peak_rss_of(server.pid)
                results.append(measured)
                print(json.dumps(measured), flush=True)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    report(results, arguments)
    if not arguments.workdir:
        shutil.rmtree(workdir, ignore_errors=True)


def child(home: Path, settings: dict, api_url: str) -> dict:
    """The index flow in a fresh process (its peak RSS is its own) against the parent's Prefect server."""
    environment = {
        **os.environ,
        "PREFECT_API_URL": api_url,
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PYTHONPATH": str(REPO),
    }
    command = [sys.executable, __file__, "--stage-index", str(home), json.dumps(settings)]
    finished = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True)
    lines = [line for line in finished.stdout.splitlines() if line.startswith("RESULT ")]
    if finished.returncode != 0 or not lines:
        raise RuntimeError(f"the index flow failed ({finished.returncode}):\n{finished.stderr[-5000:]}")
    return json.loads(lines[-1].removeprefix("RESULT "))


def index_here(home: Path, settings: str) -> dict:
    import flows.index
    from ragassay.config import IndexConfig

    before = status_mb("VmRSS")
    started = time.perf_counter()
    report = flows.index.index_flow(IndexConfig(collection="scifact", home=home, **json.loads(settings)))
    return {
        "chunks": report.chunks,
        "embedded": report.embedded,
        "seconds": round(time.perf_counter() - started, 1),
        "seconds_embedding": report.seconds_embedding,
        "chunks_per_second": round(report.embedded / report.seconds_embedding, 2),
        "rss_before_mb": before,
        "peak_rss_mb": status_mb("VmHWM"),
    }


def report(results: list[dict], arguments) -> None:
    where = arguments.url or "tests/embedding_server.py on loopback (this machine's cores)"
    print(f"\nserver: {where}; concurrency {arguments.concurrency}, batch 32, workers {arguments.workers}\n")
    print(
        "| size | documents | chunks | embedded | index flow s | embedding s | chunks/s | peak RSS index MB | peak RSS server MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['size']}x | {r['documents']:,} | {r['chunks']:,} | {r['embedded']:,} | {r['seconds']:,.1f} | "
            f"{r['seconds_embedding']:,.1f} | {r['chunks_per_second']:.1f} | {r['peak_rss_mb']:,.0f} | "
            f"{r.get('server_peak_rss_mb', float('nan')):,.0f} |"
        )
    for small, large in itertools.pairwise(results):
        k = math.log(large["seconds_embedding"] / small["seconds_embedding"]) / math.log(large["size"] / small["size"])
        print(f"embedding seconds grow {small['size']}x→{large['size']}x with exponent {k:.2f} (1: linear)")


if __name__ == "__main__":
    main()
