"""Ingest and index costs, printed as rates and ratios (no pass/fail: these are measurements).

    .venv/bin/python benchmarks/bench_ingest_index.py [--dataset scifact] [--embed-limit 2000]

Reports:
- file ingest throughput: the sample corpus copied 20 times (every format), through the ingest flow;
- BEIR import throughput and index build time (embedding, BM25) on a dataset from ../shared/datasets;
- embedding throughput of the index path as a ratio to calling fastembed directly on the same chunk
  texts with the same batch size (1.0 is the limit; lower is better);
- the cost of re-indexing after one document changed, against the full build.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
from pathlib import Path

from harness import scratch_workspace, timed

REPO = Path(__file__).resolve().parent.parent
DATASETS = REPO.parent / "shared" / "datasets"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="scifact", help="folder name under ../shared/datasets")
    parser.add_argument("--embed-limit", type=int, default=2000, help="chunks used for the embedding ratio")
    parser.add_argument("--copies", type=int, default=20, help="copies of the sample corpus for file ingest")
    arguments = parser.parse_args()

    with scratch_workspace("ragassay-bench-") as workdir:
        run(arguments, workdir)


def run(arguments, workdir: Path) -> None:
    import polars as pl

    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay.config import IndexConfig, IngestConfig
    from ragassay.environment import models_dir
    from ragassay.search.dense import Embedder, load_model, resolve_model
    from ragassay.store.workspace import collection_paths, load_chunks

    home = workdir / "home"

    # File ingest: every format, through the flow.
    corpus = workdir / "files"
    for copy in range(arguments.copies):
        shutil.copytree(REPO / "data" / "sample" / "corpus", corpus / f"copy{copy:02d}")
    files = [p for p in corpus.rglob("*") if p.is_file()]
    megabytes = sum(p.stat().st_size for p in files) / 1e6
    report, seconds = timed(ingest_flow, IngestConfig(collection="files", paths=(corpus,), home=home))
    print(
        f"file ingest: {len(files)} files ({megabytes:.1f} MB) in {seconds:.2f}s = {len(files) / seconds:.0f} files/s, "
        f"{megabytes / seconds:.2f} MB/s (ingested {len(report.ingested)}, rejected {len(report.rejected)})"
    )
    _, seconds_again = timed(ingest_flow, IngestConfig(collection="files", paths=(corpus,), home=home))
    print(f"file re-ingest, nothing changed: {seconds_again:.2f}s")

    # BEIR import and index build.
    dataset = DATASETS / arguments.dataset
    report, seconds = timed(
        ingest_flow, IngestConfig(collection=arguments.dataset, paths=(dataset,), format="beir", home=home)
    )
    paths = collection_paths(home, arguments.dataset)
    chunks = load_chunks(paths)
    print(
        f"BEIR import ({arguments.dataset}): {len(report.ingested)} documents -> {chunks.height} chunks in {seconds:.2f}s "
        f"= {len(report.ingested) / seconds:.0f} docs/s"
    )
    index_report, seconds = timed(index_flow, IndexConfig(collection=arguments.dataset, home=home))
    print(
        f"index build: {seconds:.1f}s total, embedding {index_report.seconds_embedding:.1f}s "
        f"({index_report.embedded / index_report.seconds_embedding:.0f} chunks/s), BM25 {index_report.seconds_bm25:.2f}s"
    )

    # Embedding ratio: the index path's Embedder.embed versus fastembed called directly.
    spec = resolve_model("all-MiniLM-L6-v2-int8", models_dir())
    texts = chunks["text"].head(arguments.embed_limit).to_list()
    model = load_model(spec)
    embedder = Embedder(spec)
    model_direct_seconds, ours_seconds = [], []
    for _ in range(2):
        _, direct = timed(lambda: list(model.embed(texts, batch_size=64)))
        _, ours = timed(embedder.embed, texts, 64, lambda done, total: None)
        model_direct_seconds.append(direct)
        ours_seconds.append(ours)
    direct, ours = statistics.median(model_direct_seconds), statistics.median(ours_seconds)
    print(
        f"embedding {len(texts)} chunks: fastembed direct {direct:.2f}s ({len(texts) / direct:.0f}/s), "
        f"ragassay {ours:.2f}s; ratio {ours / direct:.3f} (limit 1.0, aim <= 1.1)"
    )

    # Re-index after one document changed.
    documents = pl.read_parquet(paths.documents)
    first = documents.row(0, named=True)
    changed_file = workdir / "changed.txt"
    changed_file.write_text(first["text"] + "\n\nAn added sentence changes this document.", encoding="utf-8")
    ingest_flow(IngestConfig(collection=arguments.dataset, paths=(changed_file,), doc_id=first["doc_id"], home=home))
    reindex, seconds_reindex = timed(index_flow, IndexConfig(collection=arguments.dataset, home=home))
    print(
        f"re-index after one document changed: {seconds_reindex:.2f}s, embedded {reindex.embedded} chunks, "
        f"reused {reindex.reused_embeddings}; {seconds_reindex / seconds:.3f} of the full build's time"
    )


if __name__ == "__main__":
    main()
