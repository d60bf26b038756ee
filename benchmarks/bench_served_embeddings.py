"""Served embeddings against in-process ones: chunks a second against concurrency, and whether
the vectors are the same.

    .venv/bin/python benchmarks/bench_served_embeddings.py [--texts 1000] [--url http://gpu-host:8080 --model NAME]

Embeds the first --texts SciFact abstracts (../shared/datasets/scifact/corpus.jsonl, title and
text as one passage) with the bundled MiniLM in this process, then through an OpenAI-compatible
server at concurrency 1, 2, 4 and 8 (batch 32). Without --url the server is tests/embedding_server.py
on loopback: the same model behind a real HTTP API, on the same cores, so it measures what HTTP
and batching cost, not a speed-up. With --url (a GPU machine running Text Embeddings Inference,
vLLM or llama.cpp's server with --embeddings) it measures what serving buys; the vectors then
match only when the server runs the same model. Prints chunks a second, the ratio to in-process,
the peak resident memory of this process, and the largest difference from the in-process vectors.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact" / "corpus.jsonl"


def texts(count: int) -> list[str]:
    rows = (json.loads(line) for line in SCIFACT.read_text().splitlines()[:count])
    return [f"{row['title']}. {row['text']}".strip() for row in rows]


def local_server() -> tuple[str, subprocess.Popen]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "embedding_server.py"), "--port", str(port)], stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            httpx.get(f"{url}/stats", timeout=2)
            return url, process
        except httpx.HTTPError:
            time.sleep(0.5)
    raise SystemExit("the embedding server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--url")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    arguments = parser.parse_args()
    from ragassay.environment import models_dir
    from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, resolve_model
    from ragassay.search.served_embeddings import ServedEmbeddingClient
    from ragassay.search.served_settings import ServedEmbeddingModel

    passages = texts(arguments.texts)
    local = Embedder(resolve_model(DEFAULT_MODEL_NAME, models_dir()))
    started = time.perf_counter()
    expected = local.embed(passages)
    in_process = len(passages) / (time.perf_counter() - started)
    print(f"{len(passages)} SciFact abstracts; in process: {in_process:.1f} chunks/s")
    url, process = (arguments.url, None) if arguments.url else local_server()
    try:
        for concurrency in (1, 2, 4, 8):
            settings = ServedEmbeddingModel(
                backend="openai", url=url, model=arguments.model, batch_size=32, concurrency=concurrency
            )
            client = ServedEmbeddingClient(settings)
            started = time.perf_counter()
            got = client.embed_batches(passages, expected.shape[1])
            rate = len(passages) / (time.perf_counter() - started)
            print(
                f"served, concurrency {concurrency}: {rate:.1f} chunks/s ({rate / in_process:.2f}x in process), "
                f"largest difference from in-process {float(np.abs(got - expected).max()):.2e}"
            )
    finally:
        if process is not None:
            process.terminate()
    print(f"peak resident memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
