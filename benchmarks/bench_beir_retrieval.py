"""Retrieval quality and metric speed on BEIR SciFact and NFCorpus (from ../shared/datasets).

    .venv/bin/python benchmarks/bench_beir_retrieval.py [--datasets scifact nfcorpus] [--chunk-size 1200]
        [--served-bundled-model]

For each dataset: import (ingest --format beir), index, golden import, then `eval retrieval` with
fulltext, semantic and hybrid (RRF k=60) over all test queries, through the product's own flows.
Prints nDCG@10, recall@100 and MRR@10 beside pytrec_eval's values on the same runs, per-stage
times, and the time ragassay, pytrec_eval and ranx take to compute those metrics on one run.

--served-bundled-model indexes and searches through tests/embedding_server.py (the bundled MiniLM
behind OpenAI's /v1/embeddings on loopback), in a workspace of its own: the same model as in
process, so nDCG@10 should not move.

The workspace ($RAGASSAY_BENCH_HOME, default ~/.cache/ragassay-bench) is kept between runs, so a
second run reuses the cached embeddings and measures only what changed.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from harness import flow_engine, timed

REPO = Path(__file__).resolve().parent.parent
DATASETS = REPO.parent / "shared" / "datasets"
KS = [1, 3, 5, 10, 100]
MODES = ("fulltext", "semantic", "hybrid")
HEADLINE = [("ndcg@10", "ndcg_cut_10"), ("recall@100", "recall_100"), ("mrr@10", "recip_rank")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["scifact", "nfcorpus"])
    parser.add_argument("--chunk-size", type=int, default=1200)
    parser.add_argument("--chunk-overlap", type=int, default=150)
    parser.add_argument("--served-bundled-model", action="store_true", help="embed through a local HTTP server")
    arguments = parser.parse_args()
    home = Path(os.environ.get("RAGASSAY_BENCH_HOME", Path.home() / ".cache" / "ragassay-bench")).resolve()
    model, server = None, None
    if arguments.served_bundled_model:
        from bench_served_embeddings import local_server

        url, server = local_server()
        model = {"backend": "openai", "url": url, "model": "all-minilm-l6-v2", "batch_size": 32, "concurrency": 2}
        home = home.with_name(home.name + "-served")
    try:
        with flow_engine():
            for dataset in arguments.datasets:
                run_dataset(home, dataset, arguments.chunk_size, arguments.chunk_overlap, model)
    finally:
        if server is not None:
            server.terminate()


def run_dataset(home: Path, dataset: str, chunk_size: int, chunk_overlap: int, embedding_model=None) -> None:
    from flows.eval_retrieval import eval_retrieval_flow
    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay import tracking
    from ragassay.config import IndexConfig, IngestConfig, RetrievalEvalConfig
    from ragassay.config_errors import parse_config
    from ragassay.golden.store import import_beir

    collection = f"{dataset}-{chunk_size}"
    chunking = {"chunk_size": chunk_size, "chunk_overlap": chunk_overlap}
    report, seconds_import = timed(
        ingest_flow,
        IngestConfig(collection=collection, paths=(DATASETS / dataset,), format="beir", chunking=chunking, home=home),
    )
    served = {"embedding_model": embedding_model} if embedding_model else {}
    index_report, seconds_index = timed(index_flow, IndexConfig(collection=collection, home=home, **served))
    golden, seconds_golden = timed(import_beir, home, collection)
    config = parse_config(
        RetrievalEvalConfig,
        collections=[collection],
        configurations=[{"label": m, "search_type": m, "fusion": {"k": 60}} for m in MODES],
        ks=KS,
        assertions=[f"{m}:mrr@10>=0" for m in MODES],  # asks for MRR@10 beside the standard metrics
        home=home,
    )
    eval_report, seconds_eval = timed(eval_retrieval_flow, config)

    print(f"\n## {dataset} (chunks of {chunk_size} characters, overlap {chunk_overlap})")
    print(
        f"documents {len(report.ingested) + len(report.unchanged) + len(report.replaced)}, chunks {index_report.chunks}, "
        f"test queries {eval_report.questions} (golden entries added by this run: {len(golden.added)}; already present: {golden.size - len(golden.added)})"
    )
    print(
        f"times: import {seconds_import:.1f}s, index {seconds_index:.1f}s (embedded {index_report.embedded}, "
        f"cached {index_report.reused_embeddings}; embedding {index_report.seconds_embedding:.1f}s, BM25 {index_report.seconds_bm25:.1f}s), "
        f"golden import {seconds_golden:.2f}s, evaluation {seconds_eval:.1f}s "
        f"(searching: {', '.join(f'{k} {v:.1f}s' for k, v in eval_report.seconds_searching.items())})"
    )
    print(
        "| configuration | nDCG@10 | recall@100 | MRR@10 | pytrec_eval nDCG@10 | recall@100 | MRR@10 | max per-question difference |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for mode in MODES:
        per_question = tracking.download_table(home, eval_report.run_ids[mode], "per_question")
        run = tracking.download_table(home, eval_report.run_ids[mode], "run")
        qrels, trec_run = trec_inputs(home, collection, per_question, run, depth=10)
        reference = pytrec_eval_scores(qrels, trec_run)
        ours = [eval_report.means[mode][name] for name, _ in HEADLINE]
        theirs = [
            statistics.fmean(reference[q][trec] if q in reference else 0.0 for q in qrels) for _, trec in HEADLINE
        ]
        worst = max(
            abs(value - (reference.get(q, {}).get(trec, 0.0)))
            for name, trec in HEADLINE
            for q, value in zip(per_question["query_id"], per_question[name])
        )
        print(
            f"| {mode} | {ours[0]:.4f} | {ours[1]:.4f} | {ours[2]:.4f} | {theirs[0]:.4f} | {theirs[1]:.4f} | {theirs[2]:.4f} | {worst:.1e} |"
        )
    time_metric_computation(home, collection, eval_report)


def trec_inputs(home: Path, collection: str, per_question, run, depth: int | None = None):
    """qrels and run dicts for pytrec_eval; run scores follow our ranks exactly (score = 1000 - rank).

    With depth set, the run for MRR is cut at that depth (trec_eval's recip_rank has no cut-off).
    """
    from ragassay.golden.store import load_golden
    from ragassay.store.workspace import collection_paths

    golden = {
        row["entry_id"]: dict(zip(row["expected_document_ids"], row["relevance"]))
        for row in load_golden(collection_paths(home, collection)).iter_rows(named=True)
    }
    qrels = {q: golden[q] for q in per_question["query_id"]}
    trec_run: dict[str, dict[str, float]] = {}
    for query, doc, rank in run.select("query_id", "doc_id", "rank").iter_rows():
        trec_run.setdefault(query, {})[doc] = float(1000 - rank)
    return qrels, trec_run


def pytrec_eval_scores(qrels, trec_run):
    import pytrec_eval

    full = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(trec_run)
    cut_run = {q: {d: s for d, s in docs.items() if s >= 1000 - 10} for q, docs in trec_run.items()}
    for query, values in pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut_run).items():
        full.setdefault(query, {})["recip_rank"] = values["recip_rank"]
    return full


def time_metric_computation(home: Path, collection: str, eval_report) -> None:
    """nDCG@10, recall@100 and MRR@10 of the hybrid run, by each library, from its own input form."""
    import pytrec_eval
    from ranx import Qrels, Run, evaluate

    from ragassay import tracking
    from ragassay.metrics.names import parse_metric
    from ragassay.metrics.retrieval import judge_run

    per_question = tracking.download_table(home, eval_report.run_ids["hybrid"], "per_question")
    run = tracking.download_table(home, eval_report.run_ids["hybrid"], "run")
    qrels, trec_run = trec_inputs(home, collection, per_question, run)
    rankings = [list(trec_run.get(q, {})) for q in qrels]
    judgements = list(qrels.values())
    names = [parse_metric(n) for n in ("ndcg@10", "recall@100", "mrr@10")]

    def ours():
        judged = judge_run(rankings, judgements, depth=100)
        return [name.compute(judged) for name in names]

    def trec():
        return pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "recip_rank"}).evaluate(trec_run)

    ranx_qrels, ranx_run = Qrels(qrels), Run(trec_run)

    def ranx():
        return evaluate(ranx_qrels, ranx_run, ["ndcg@10", "recall@100", "mrr@10"], make_comparable=True)

    ranx()  # numba compiles on the first call; time the warm calls only
    timings = {}
    for label, function in (("ragassay", ours), ("pytrec_eval", trec), ("ranx", ranx)):
        timings[label] = min(timed(function)[1] for _ in range(20))
    print(
        f"metric computation on one run ({len(qrels)} queries, depth 100), best of 20: "
        + ", ".join(f"{k} {v * 1000:.2f} ms" for k, v in timings.items())
        + f"; pytrec_eval / ragassay = {timings['pytrec_eval'] / timings['ragassay']:.2f}x, "
        f"ranx / ragassay = {timings['ranx'] / timings['ragassay']:.2f}x"
    )


if __name__ == "__main__":
    main()
