"""Retrieval evaluation's searching against the libraries under it, side by side on the same queries.

    .venv/bin/python benchmarks/bench_eval_search.py [--dataset scifact] [--rounds 3]

Uses the workspace of bench_beir_retrieval.py ($RAGASSAY_BENCH_HOME, default
~/.cache/ragassay-bench), importing and indexing the dataset there first if needed. For each of
fulltext, semantic and hybrid (RRF k 60, depth 100), the golden questions (BEIR test queries) are
searched at depth 100:

- product: `evaluation.retrieval_scoring.search_questions`, what `eval retrieval` runs per configuration
  (the ranking, and the run table it stores);
- direct: the libraries called by hand on the same index and vectors: bm25s `BM25.retrieve` on the
  saved whole-document index with bm25s' tokenizer (stopwords, PyStemmer); fastembed `embed` of all
  queries, one numpy product with the chunk vectors, max-passage per document by
  `np.maximum.reduceat`, top 100 by `argpartition`; hybrid: both and RRF in a dict.

Then the whole `eval retrieval` flow with threads and with a Dask LocalCluster of two worker
processes: seconds and whether the means agree.

Both sides are warm (index loaded, model loaded); the best of --rounds is printed, with the ratio
and how many rankings are identical, and identical up to the order of documents whose scores are
within 1e-5 (bm25s' results with score 0 are dropped, as search drops them).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from harness import flow_engine

REPO = Path(__file__).resolve().parent.parent
DATASETS = REPO.parent / "shared" / "datasets"
DEPTH = 100
RRF_K = 60
MODES = ("fulltext", "semantic", "hybrid")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    home = Path(os.environ.get("RAGASSAY_BENCH_HOME", Path.home() / ".cache" / "ragassay-bench")).resolve()
    collection = f"{arguments.dataset}-1200"
    with flow_engine():
        prepare(home, arguments.dataset, collection)
        compare(home, collection, arguments.rounds)
        runners(home, collection)


def runners(home: Path, collection: str) -> None:
    """The whole `eval retrieval` flow (3 configurations, MLflow logging included) with the default
    thread runner and with a Dask LocalCluster of two worker processes: seconds, and whether every
    mean is the same."""
    from flows.eval_retrieval import eval_retrieval_flow
    from ragassay.config import RetrievalEvalConfig
    from ragassay.config_errors import parse_config

    settings = dict(
        collections=[collection],
        configurations=[{"label": m, "search_type": m, "fusion": {"k": RRF_K}} for m in MODES],
        home=home,
    )
    eval_retrieval_flow(
        parse_config(RetrievalEvalConfig, **settings)
    )  # warm: the flow's first run loads what later runs reuse
    timings, means = {}, {}
    for name, runner in (
        ("threads", {"kind": "threads"}),
        ("dask, 2 worker processes", {"kind": "dask", "workers": 2}),
    ):
        started = time.perf_counter()
        report = eval_retrieval_flow(parse_config(RetrievalEvalConfig, **settings, task_runner=runner))
        timings[name], means[name] = time.perf_counter() - started, report.means
    (a, b) = timings
    print(
        f"\neval retrieval flow, 3 configurations: {a} {timings[a]:.1f}s, {b} {timings[b]:.1f}s "
        f"(ratio {timings[b] / timings[a]:.2f}; the Dask run starts its cluster and each worker loads the index and model); "
        f"means identical: {means[a] == means[b]}"
    )


def prepare(home: Path, dataset: str, collection: str) -> None:
    """Import, index and load the golden set where bench_beir_retrieval.py has not already."""
    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay.config import IndexConfig, IngestConfig
    from ragassay.golden.store import import_beir

    ingest_flow(
        IngestConfig(
            collection=collection,
            paths=(DATASETS / dataset,),
            format="beir",
            chunking={"chunk_size": 1200, "chunk_overlap": 150},
            home=home,
        )
    )
    index_flow(IndexConfig(collection=collection, home=home))
    import_beir(home, collection)


def compare(home: Path, collection: str, rounds: int) -> None:
    from ragassay.config import RetrievalConfiguration
    from ragassay.evaluation.questions import gather_golden_questions
    from ragassay.evaluation.retrieval_scoring import search_questions
    from ragassay.resources import Resources

    questions, _ = gather_golden_questions(home, (collection,), None, seed=0)
    queries = [q.question for q in questions]
    resources = Resources()
    direct = DirectLibraries(home, collection, resources)
    print(f"{collection}: {len(queries)} questions, depth {DEPTH}, best of {rounds} rounds, warm")
    print(
        f"{'configuration':<14} {'product s':>9} {'direct s':>9} {'ratio':>6} {'identical rankings':>18} {'up to near-ties':>17}"
    )
    for mode in MODES:
        configuration = RetrievalConfiguration(label=mode, search_type=mode, fusion={"k": RRF_K}, depth=DEPTH)
        search_questions(
            resources, home, (collection,), questions, configuration, DEPTH
        )  # warm: opens the index, loads the model
        product_seconds, product = best_of(
            rounds,
            lambda configuration=configuration: search_questions(
                resources, home, (collection,), questions, configuration, DEPTH
            ),
        )
        direct_seconds, theirs = best_of(rounds, lambda mode=mode: direct.rank(mode, queries))
        ours = product.run.group_by("query_id", maintain_order=True).agg("doc_id", "score")
        by_query = {row["query_id"]: list(zip(row["doc_id"], row["score"])) for row in ours.iter_rows(named=True)}
        verdicts = [same_ranking(by_query.get(q.query_id, []), ranking) for q, ranking in zip(questions, theirs)]
        identical, near = sum(v[0] for v in verdicts), sum(v[1] for v in verdicts)
        print(
            f"{mode:<14} {product_seconds:>9.3f} {direct_seconds:>9.3f} {product_seconds / direct_seconds:>6.2f} "
            f"{identical:>11} of {len(queries)} {near:>14} of {len(queries)}"
        )


def best_of(rounds: int, function):
    best, result = float("inf"), None
    for _ in range(rounds):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def same_ranking(
    ours: list[tuple[str, float]], theirs: list[tuple[str, float]], tolerance: float = 1e-5
) -> tuple[bool, bool]:
    """(identical, identical up to near-ties): the same documents in the same order; or the same
    scores rank by rank (to `tolerance`) and the same documents, where documents whose scores are
    within `tolerance` may come in either order (numpy's matrix product rounds a block of queries
    differently from one query's product, by up to 7e-7) and the last near-tie may be cut at the
    depth differently."""
    if [doc for doc, _ in ours] == [doc for doc, _ in theirs]:
        return True, True
    if len(ours) != len(theirs) or any(abs(a - b) > tolerance for (_, a), (_, b) in zip(ours, theirs)):
        return False, False
    tail = ours[-1][1] if ours else 0.0
    head = {doc for doc, score in ours if score > tail + tolerance}
    return False, head == {doc for doc, score in theirs if score > tail + tolerance}


class DirectLibraries:
    """bm25s, fastembed and numpy called by hand on the collection's own index files and vectors."""

    def __init__(self, home: Path, collection: str, resources):
        import bm25s
        import Stemmer

        from ragassay.environment import models_dir
        from ragassay.search.dense import load_model, resolve_model
        from ragassay.store.workspace import collection_paths, read_manifest

        paths = collection_paths(home, collection)
        opened = resources.collections.open(home, collection, True)  # its chunk vectors and ids, as stored
        self.doc_ids = opened.doc_ids
        self.dense = opened.dense
        self.model = load_model(
            resolve_model(read_manifest(paths)["embedding_model"], models_dir())
        )  # a fastembed TextEmbedding
        self.bm25 = bm25s.BM25.load(str(paths.bm25_documents_dir), mmap=False)
        self.stemmer = Stemmer.Stemmer("english")
        self.order = np.argsort(opened.chunk_doc, kind="stable")
        grouped = opened.chunk_doc[self.order]
        self.starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
        self.run_documents = grouped[self.starts]

    def rank(self, mode: str, queries: list[str]) -> list[list[tuple[str, float]]]:
        if mode == "fulltext":
            return self.fulltext(queries)
        if mode == "semantic":
            return self.semantic(queries)
        lexical, semantic = self.fulltext(queries), self.semantic(queries)
        fused = []
        for one, two in zip(lexical, semantic):
            scores: dict[str, float] = {}
            for ranking in (one, two):
                for rank, (doc, _) in enumerate(ranking, start=1):
                    scores[doc] = scores.get(doc, 0.0) + 1.0 / (RRF_K + rank)
            fused.append(
                sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:DEPTH]
            )  # ties by doc id, as search
        return fused

    def fulltext(self, queries: list[str]) -> list[list[tuple[str, float]]]:
        import bm25s

        tokens = bm25s.tokenize(
            queries, lower=True, stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False
        )
        documents, scores = self.bm25.retrieve(tokens, k=DEPTH, show_progress=False, n_threads=1)
        # Ties by document position (doc id order), as search orders them; bm25s' own order differs.
        return [
            [
                (self.doc_ids[d], float(s))
                for d, s in sorted(zip(row_docs.tolist(), row_scores.tolist()), key=lambda pair: (-pair[1], pair[0]))
                if s > 0
            ]
            for row_docs, row_scores in zip(documents, scores)
        ]

    def semantic(self, queries: list[str]) -> list[list[tuple[str, float]]]:
        vectors = np.asarray(list(self.model.embed(queries, batch_size=64)), dtype=np.float32)
        per_document = np.maximum.reduceat((vectors @ self.dense.T)[:, self.order], self.starts, axis=1)
        top = np.argpartition(-per_document, DEPTH, axis=1)[:, :DEPTH]
        ranked = []
        for row, columns in zip(per_document, top):
            columns = columns[np.argsort(-row[columns], kind="stable")]
            ranked.append([(self.doc_ids[self.run_documents[c]], float(row[c])) for c in columns])
        return ranked


if __name__ == "__main__":
    main()
