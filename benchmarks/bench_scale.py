"""How time and memory grow with the corpus: 1x, 4x and 16x BEIR SciFact.

    .venv/bin/python benchmarks/bench_scale.py [--sizes 1 4 16] [--workdir DIR] [--keep]

Each size is SciFact's 5,183 documents copied that many times with renamed ids (copy c of `id` is
`id~c`; copy 0 keeps the original ids, so the test queries and qrels apply to it), in a workspace of
its own, chunked 1200/150 like bench_beir_retrieval.py. For each size, each stage runs in a fresh
Python process (so its peak RSS is its own), against one Prefect server, and reports wall seconds,
the process's RSS before the stage's work, and its peak RSS:

- ingest: the `ingest` flow importing the BEIR folder;
- bm25: BM25 over chunks and over whole documents (index/build.py), without embeddings;
- index: the `index` flow (BM25 + embeddings). Embedding every chunk of 16x would take hours on
  this machine, and the copies share their texts, so the embedding cache (keyed by text) is seeded
  with SciFact's vectors before the flow (from $RAGASSAY_BENCH_HOME if bench_beir_retrieval.py built
  them, else from the 1x run, which embeds them): the flow's seconds are everything but the
  embedding. The embedding cost is measured on a sample of chunk texts (chunks/s) and extrapolated
  to every chunk of the size as if all were distinct, printed separately and marked as such;
- search: `ragassay search`'s path (search.run.run_search, k 10, warm) for the 300 test queries
  one at a time, per search type: mean latency and queries per second;
- eval: the `eval retrieval` flow, 300 questions x 3 configurations (fulltext, semantic, hybrid RRF
  k 60, depth 100), with the default thread runner and with a Dask LocalCluster of two worker
  processes (whose peak RSS is the largest worker's); whether the means of both are identical.

The growth exponent k between two sizes is log(t2 / t1) / log(s2 / s1): 1 is linear growth.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import flow_engine

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact"
BENCH_HOME = Path(os.environ.get("RAGASSAY_BENCH_HOME", Path.home() / ".cache" / "ragassay-bench")).resolve()
CHUNKING = {"chunk_size": 1200, "chunk_overlap": 150}
MODES = ("fulltext", "semantic", "hybrid")
EMBED_SAMPLE = 512
STAGES = ("ingest", "bm25", "index", "search", "eval")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument(
        "--workdir", type=Path, help="where corpora and workspaces go (default: a temporary folder, removed)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the workdir")
    parser.add_argument("--stage", choices=[*STAGES, "embed-rate"], help=argparse.SUPPRESS)  # one stage in this process
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.stage:
        print("RESULT " + json.dumps(run_stage(arguments.stage, arguments.workdir, arguments.size)), flush=True)
        return
    workdir = (arguments.workdir or Path(tempfile.mkdtemp(prefix="ragassay-scale-"))).resolve()
    try:
        with flow_engine():
            from prefect.settings import get_current_settings

            api_url = str(get_current_settings().api.url)
            results = measure(workdir, arguments.sizes, api_url)
        (workdir / "results.json").write_text(json.dumps(results, indent=2))
        report(results, arguments.sizes)
    finally:
        if not arguments.keep and not arguments.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


def measure(workdir: Path, sizes: list[int], api_url: str) -> dict:
    results: dict = {"sizes": {}}
    for size in sizes:
        data = copies_of_scifact(workdir / f"scifact-x{size}", size)
        print(f"\n## {size}x SciFact ({data['documents']:,} documents)", flush=True)
        measured = {"documents": data["documents"]}
        for stage in STAGES:
            if stage == "index":
                seed_embedding_cache(workdir, size)
            measured[stage] = child(stage, workdir, size, api_url)
            print(f"{stage}: {json.dumps(measured[stage])}", flush=True)
        results["sizes"][str(size)] = measured
    results["embed_rate"] = child("embed-rate", workdir, sizes[0], api_url)
    print(f"embedding rate: {json.dumps(results['embed_rate'])}", flush=True)
    return results


def copies_of_scifact(folder: Path, size: int) -> dict:
    """A BEIR folder of `size` copies of SciFact's corpus (copy c of `id` is `id~c`), with SciFact's
    queries and test qrels."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    shutil.copy(SCIFACT / "queries.jsonl", folder / "queries.jsonl")
    shutil.copy(SCIFACT / "qrels" / "test.tsv", folder / "qrels" / "test.tsv")
    records = [
        json.loads(line) for line in (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for copy in range(size):
            for record in records:
                renamed = record if copy == 0 else {**record, "_id": f"{record['_id']}~{copy}"}
                out.write(json.dumps(renamed) + "\n")
    return {"documents": len(records) * size}


def home_of(workdir: Path, size: int) -> Path:
    return workdir / f"home-x{size}"


def collection_of(size: int) -> str:
    return f"scifact-x{size}"


def seed_embedding_cache(workdir: Path, size: int) -> None:
    """The copies share SciFact's chunk texts: put their vectors in the size's embedding cache
    (not timed), from the benchmark workspace or from the first size's workspace."""
    target = home_of(workdir, size) / "collections" / collection_of(size) / "embeddings.parquet"
    sources = [BENCH_HOME / "collections" / "scifact-1200" / "embeddings.parquet"]
    sources += sorted(workdir.glob("home-x*/collections/*/embeddings.parquet"))
    for source in sources:
        if source.is_file() and source != target:
            shutil.copy(source, target)
            return


def child(stage: str, workdir: Path, size: int, api_url: str) -> dict:
    """Run one stage in a fresh process against the parent's Prefect server; its RESULT line."""
    environment = {
        **os.environ,
        "PREFECT_API_URL": api_url,
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PYTHONPATH": str(REPO),
    }
    command = [sys.executable, __file__, "--stage", stage, "--workdir", str(workdir), "--size", str(size)]
    finished = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True)
    lines = [line for line in finished.stdout.splitlines() if line.startswith("RESULT ")]
    if finished.returncode != 0 or not lines:
        raise RuntimeError(
            f"stage {stage} at {size}x failed ({finished.returncode}):\n{finished.stdout[-3000:]}\n{finished.stderr[-5000:]}"
        )
    return json.loads(lines[-1].removeprefix("RESULT "))


def status_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status, in MB. VmHWM (peak RSS) is this
    process's own: getrusage's ru_maxrss survives fork and exec, so a child started from a large
    parent would report the parent's size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def run_stage(stage: str, workdir: Path, size: int) -> dict:
    """One stage's work in this process: its figures, with RSS before the work and peak RSS."""
    home, collection = home_of(workdir, size), collection_of(size)
    # Import what the stage uses before measuring the RSS it starts from.
    import flows.eval_retrieval
    import flows.index
    import flows.ingest  # noqa: F401
    from ragassay.resources import Resources

    before = status_mb("VmRSS")
    started = time.perf_counter()
    figures = globals()[f"stage_{stage.replace('-', '_')}"](home, collection, workdir, size, Resources())
    return {
        "seconds": round(time.perf_counter() - started, 2),
        **figures,
        "rss_before_mb": before,
        "peak_rss_mb": status_mb("VmHWM"),
    }


def stage_ingest(home: Path, collection: str, workdir: Path, size: int, resources) -> dict:
    from flows.ingest import ingest_flow
    from ragassay.config import IngestConfig

    report = ingest_flow(
        IngestConfig(
            collection=collection, paths=(workdir / f"scifact-x{size}",), format="beir", chunking=CHUNKING, home=home
        )
    )
    return {"documents": len(report.ingested) + len(report.unchanged) + len(report.replaced)}


def stage_bm25(home: Path, collection: str, workdir: Path, size: int, resources) -> dict:
    from ragassay.config import DEFAULT_EMBEDDING_MODEL
    from ragassay.index import build

    inputs = build.read_index_inputs(home, collection, DEFAULT_EMBEDDING_MODEL)
    staged = build.build_bm25_indexes(inputs)
    build.release_index_inputs(inputs.snapshot)
    disk = sum(f.stat().st_size for f in staged.folder.rglob("*") if f.is_file())
    shutil.rmtree(staged.folder)
    return {
        "chunks": inputs.chunks.height,
        "bm25_on_disk_mb": round(disk / 2**20, 1),
        "seconds_bm25": round(staged.seconds, 2),
    }


def stage_index(home: Path, collection: str, workdir: Path, size: int, resources) -> dict:
    from flows.index import index_flow
    from ragassay.config import IndexConfig

    report = index_flow(IndexConfig(collection=collection, home=home))
    matrix_mb = report.chunks * 384 * 4 / 2**20
    return {
        "chunks": report.chunks,
        "embedded": report.embedded,
        "reused": report.reused_embeddings,
        "seconds_embedding": report.seconds_embedding,
        "embedding_matrix_mb": round(matrix_mb, 1),
    }


def stage_embed_rate(home: Path, collection: str, workdir: Path, size: int, resources) -> dict:
    """Chunks per second of the embedding model, on an evenly spaced sample of the chunk texts."""
    from ragassay.config import DEFAULT_EMBEDDING_MODEL
    from ragassay.environment import models_dir
    from ragassay.search.dense import resolve_model
    from ragassay.store.workspace import collection_paths, load_chunks

    texts = load_chunks(collection_paths(home, collection))["text"].to_list()
    sample = texts[:: max(1, len(texts) // EMBED_SAMPLE)][:EMBED_SAMPLE]
    embedder = resources.embedders.get(resolve_model(DEFAULT_EMBEDDING_MODEL, models_dir()))
    embedder.embed(sample[:8])  # the first call's set-up is not the rate
    started = time.perf_counter()
    embedder.embed(sample, 64)
    seconds = time.perf_counter() - started
    return {"sample": len(sample), "chunks_per_second": round(len(sample) / seconds, 2)}


def stage_search(home: Path, collection: str, workdir: Path, size: int, resources) -> dict:
    from ragassay.evaluation.questions import gather_golden_questions
    from ragassay.golden.store import import_beir
    from ragassay.search.run import run_search
    from ragassay.search.settings import SearchSettings

    import_beir(home, collection)
    queries = [q.question for q in gather_golden_questions(home, (collection,), None, seed=0)[0]]
    figures = {}
    for mode in MODES:
        settings = SearchSettings(search_type=mode)
        run_search(resources, home, [collection], queries[0], settings)  # warm: opens the index, loads the model
        started = time.perf_counter()
        for query in queries:
            run_search(resources, home, [collection], query, settings)
        seconds = time.perf_counter() - started
        figures[mode] = {
            "ms_per_query": round(1000 * seconds / len(queries), 2),
            "qps": round(len(queries) / seconds, 1),
        }
    return {"queries": len(queries), **figures}


def stage_eval(home: Path, collection: str, workdir: Path, size: int, resources) -> dict:
    from distributed import Client, LocalCluster

    from flows.eval_retrieval import eval_retrieval_flow
    from ragassay.config import RetrievalEvalConfig
    from ragassay.config_errors import parse_config

    settings = dict(
        collections=[collection],
        configurations=[{"label": m, "search_type": m, "fusion": {"k": 60}} for m in MODES],
        home=home,
    )
    started = time.perf_counter()
    threads = eval_retrieval_flow(parse_config(RetrievalEvalConfig, **settings))
    seconds_threads = time.perf_counter() - started
    peak_threads = status_mb("VmHWM")
    # The cluster `task_runner: {kind: dask, workers: 2}` starts, started here so that the workers'
    # peak RSS can be read before it closes; its start is timed with the evaluation.
    started = time.perf_counter()
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        dask = eval_retrieval_flow(
            parse_config(
                RetrievalEvalConfig, **settings, task_runner={"kind": "dask", "address": cluster.scheduler_address}
            )
        )
        seconds_dask = time.perf_counter() - started
        workers_peak = client.run(status_mb, "VmHWM")
    return {
        "questions": threads.questions,
        "seconds_threads": round(seconds_threads, 2),
        "seconds_dask": round(seconds_dask, 2),
        "searching": {m: round(s, 2) for m, s in threads.seconds_searching.items()},
        "peak_rss_threads_mb": peak_threads,
        "peak_rss_dask_worker_mb": max(workers_peak.values()),
        "means_identical": threads.means == dask.means,
        "ndcg@10": {m: round(threads.means[m]["ndcg@10"], 4) for m in MODES},
    }


def exponent(small: float, large: float, ratio: float) -> str:
    return f"{math.log(large / small) / math.log(ratio):.2f}" if small > 0 and large > 0 else "n/a"


def report(results: dict, sizes: list[int]) -> None:
    """The Markdown table for BENCHMARKS.md: seconds and peak RSS per stage and size, with the
    growth exponents between consecutive sizes."""
    by_size = [results["sizes"][str(s)] for s in sizes]
    rate = results["embed_rate"]["chunks_per_second"]
    rows = [
        ("ingest s", [m["ingest"]["seconds"] for m in by_size]),
        ("index BM25 only s", [m["bm25"]["seconds"] for m in by_size]),
        ("index flow, embeddings cached s", [m["index"]["seconds"] for m in by_size]),
        (f"embedding every chunk s (extrapolated at {rate} chunks/s)", [m["index"]["chunks"] / rate for m in by_size]),
        *[(f"search {mode} ms/query", [m["search"][mode]["ms_per_query"] for m in by_size]) for mode in MODES],
        ("eval 300 q x 3 configs, threads s", [m["eval"]["seconds_threads"] for m in by_size]),
        ("eval, Dask 2 workers s", [m["eval"]["seconds_dask"] for m in by_size]),
        ("peak RSS ingest MB", [m["ingest"]["peak_rss_mb"] for m in by_size]),
        ("peak RSS BM25 build MB", [m["bm25"]["peak_rss_mb"] for m in by_size]),
        ("peak RSS index flow MB", [m["index"]["peak_rss_mb"] for m in by_size]),
        (
            "peak RSS embedding (sample, batches of 64; size-independent) MB",
            [results["embed_rate"]["peak_rss_mb"] for _ in by_size],
        ),
        ("peak RSS search MB", [m["search"]["peak_rss_mb"] for m in by_size]),
        ("peak RSS eval (threads) MB", [m["eval"]["peak_rss_threads_mb"] for m in by_size]),
        ("peak RSS eval, largest Dask worker MB", [m["eval"]["peak_rss_dask_worker_mb"] for m in by_size]),
        ("RSS before the stage's work MB (ingest)", [m["ingest"]["rss_before_mb"] for m in by_size]),
        ("BM25 indexes on disk MB", [m["bm25"]["bm25_on_disk_mb"] for m in by_size]),
        ("embedding matrix MB", [m["index"]["embedding_matrix_mb"] for m in by_size]),
    ]
    pairs = list(itertools.pairwise(sizes))
    print(
        "\n| | "
        + " | ".join(f"{s}x ({m['documents']:,} docs, {m['index']['chunks']:,} chunks)" for s, m in zip(sizes, by_size))
        + " | "
        + " | ".join(f"k {a}x→{b}x" for a, b in pairs)
        + " |"
    )
    print("|---" * (1 + len(sizes) + len(pairs)) + "|")
    for name, values in rows:
        ks = [exponent(values[sizes.index(a)], values[sizes.index(b)], b / a) for a, b in pairs]
        print(
            f"| {name} | "
            + " | ".join(f"{v:,.1f}" if v >= 10 else f"{v:.2f}" for v in values)
            + " | "
            + " | ".join(ks)
            + " |"
        )
    print(
        "\nmeans identical (threads vs Dask): "
        + ", ".join(f"{s}x {m['eval']['means_identical']}" for s, m in zip(sizes, by_size))
    )
    print(
        "nDCG@10 (threads): "
        + "; ".join(
            f"{s}x " + ", ".join(f"{k} {v}" for k, v in m["eval"]["ndcg@10"].items()) for s, m in zip(sizes, by_size)
        )
    )


if __name__ == "__main__":
    main()
