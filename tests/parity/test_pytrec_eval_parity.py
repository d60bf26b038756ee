"""Per-question metrics equal pytrec_eval's to 1e-9 on real runs of the product's search path.

Runs: the sample golden set under three configurations, and a slice of NFCorpus (graded qrels
1 and 2) read from ../shared/datasets, imported, indexed and searched like any collection.
pytrec_eval orders a run by score (ties by document id, descending), so each run is handed to it
with score = depth - rank, which is exactly our order.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from flows.eval_retrieval import eval_retrieval_flow
from flows.index import index_flow
from flows.ingest import ingest_flow
from ragassay import tracking
from ragassay.config import IndexConfig, IngestConfig, RetrievalEvalConfig
from ragassay.config_errors import parse_config
from ragassay.golden.store import add_from_file, import_beir
from tests.conftest import REPO, SAMPLE

pytestmark = pytest.mark.flows  # every test here runs flows

NFCORPUS = REPO.parent / "shared" / "datasets" / "nfcorpus"
KS = [1, 3, 5, 10, 20]
CONFIGURATIONS = [{"label": m, "search_type": m} for m in ("fulltext", "semantic", "hybrid")]


def nfcorpus_slice(target: Path, queries: int = 12, distractors: int = 60) -> Path:
    """The test queries with the fewest judged documents, their documents, and some others."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (NFCORPUS / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        query, doc, score = line.strip().split("\t")
        qrels.setdefault(query, {})[doc] = int(score)
    graded = [q for q, judged in qrels.items() if len(set(judged.values())) > 1 and len(judged) >= 3]
    chosen = sorted(graded, key=lambda q: (len(qrels[q]), q))[:queries]
    wanted = {doc for q in chosen for doc in qrels[q]}
    corpus_lines = (NFCORPUS / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    others = [line for line in corpus_lines if json.loads(line)["_id"] not in wanted][
        :: max(1, len(corpus_lines) // distractors)
    ][:distractors]
    kept = [line for line in corpus_lines if json.loads(line)["_id"] in wanted] + others
    (target / "qrels").mkdir(parents=True)
    (target / "corpus.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    (target / "queries.jsonl").write_text((NFCORPUS / "queries.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    rows = [f"{q}\t{d}\t{s}" for q in chosen for d, s in qrels[q].items()]
    (target / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n", encoding="utf-8"
    )
    return target


def assert_parity(home: Path, report, ks: list[int]) -> int:
    """Compare every configuration's per-question table with pytrec_eval on the same run."""
    checked = 0
    for label, run_id in report.run_ids.items():
        per_question = tracking.download_table(home, run_id, "per_question")
        run = tracking.download_table(home, run_id, "run")
        golden_rows = {}
        for collection in set(per_question["query_collection"]):
            from ragassay.golden.store import load_golden
            from ragassay.store.workspace import collection_paths

            for row in load_golden(collection_paths(home, collection)).iter_rows(named=True):
                golden_rows[row["entry_id"]] = {
                    f"{collection}/{d}": g for d, g in zip(row["expected_document_ids"], row["relevance"])
                }
        qrels = {q: golden_rows[q] for q in per_question["query_id"]}
        trec_run: dict[str, dict[str, float]] = {}
        for row in run.iter_rows(named=True):
            trec_run.setdefault(row["query_id"], {})[f"{row['collection']}/{row['doc_id']}"] = float(1000 - row["rank"])
        cut = ",".join(map(str, ks))
        reference = pytrec_eval.RelevanceEvaluator(
            qrels, {f"recall.{cut}", f"P.{cut}", f"ndcg_cut.{cut}", "recip_rank"}
        ).evaluate(trec_run)
        pairs = [
            (f"{family}@{k}", f"{trec}_{k}")
            for k in ks
            for family, trec in (("recall", "recall"), ("precision", "P"), ("ndcg", "ndcg_cut"))
        ]
        for ours_name, trec_name in [*pairs, ("mrr", "recip_rank")]:
            ours = per_question[ours_name].to_numpy()
            theirs = np.array([reference.get(q, {}).get(trec_name, 0.0) for q in per_question["query_id"]])
            assert np.max(np.abs(ours - theirs)) <= 1e-9, f"{label} {ours_name}"
            checked += len(ours)
    return checked


@pytest.mark.slow
def test_sample_runs_match_pytrec_eval(sample_home):
    add_from_file(sample_home, "sample", SAMPLE / "golden.jsonl")
    config = parse_config(
        RetrievalEvalConfig, collections=["sample"], configurations=CONFIGURATIONS, ks=KS, home=sample_home
    )
    assert assert_parity(sample_home, eval_retrieval_flow(config), KS) > 0


@pytest.mark.slow
@pytest.mark.skipif(not NFCORPUS.exists(), reason="../shared/datasets/nfcorpus is not present")
def test_graded_nfcorpus_runs_match_pytrec_eval(home, tmp_path):
    dataset = nfcorpus_slice(tmp_path / "nfcorpus-slice")
    ingest_flow(IngestConfig(collection="nf", paths=(dataset,), format="beir", home=home))
    index_flow(IndexConfig(collection="nf", home=home))
    assert import_beir(home, "nf").added
    config = parse_config(RetrievalEvalConfig, collections=["nf"], configurations=CONFIGURATIONS, ks=KS, home=home)
    report = eval_retrieval_flow(config)
    assert report.means["hybrid"]["ndcg@10"] > 0
    assert assert_parity(home, report, KS) > 0
