"""Prefect tasks of retrieval evaluation: gather golden questions, search them, score, log to MLflow."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from ragassay.config import RetrievalConfiguration, RetrievalEvalConfig
from ragassay.errors import RagassayError
from ragassay.golden_service import load_golden
from ragassay.search_service import run_search
from ragassay.workspace import collection_paths, load_documents, read_manifest
from tasks import tracking
from tasks.golden import golden_digest
from tasks.metrics import MetricName
from tasks.models import Usage
from tasks.progress import ProgressReporter
from tasks.reranking import RerankStats
from tasks.schemas import RUN
from tasks.scoring import DocKey, EvalQuestion, per_question_frame, sample_questions, score_rankings


class GoldenContext(BaseModel):
    """The questions of an evaluation and what identifies the data they came from."""

    questions: list[dict]
    warnings: list[str]
    golden_digests: dict[str, str]
    golden_sizes: dict[str, int]
    index_digests: dict[str, str]
    embedding_models: dict[str, str]


@task(name="load-golden-questions", cache_policy=NO_CACHE)
def load_golden_questions(config: RetrievalEvalConfig) -> tuple[list[EvalQuestion], GoldenContext]:
    """Golden entries of every collection, sampled when max_questions is set; problems become warnings."""
    return gather_golden_questions(config.home, config.collections, config.max_questions, config.seed)


def gather_golden_questions(
    home: Path, collections: tuple[str, ...], max_questions: int | None, seed: int
) -> tuple[list[EvalQuestion], GoldenContext]:
    """The golden questions of an evaluation (seeded sample) and what identifies their data."""
    questions: list[EvalQuestion] = []
    warnings: list[str] = []
    digests, sizes, index_digests, models = {}, {}, {}, {}
    for name in collections:
        paths = collection_paths(home, name)
        golden = load_golden(paths)
        manifest = read_manifest(paths) or {}
        digests[name], sizes[name] = golden_digest(golden), golden.height
        index_digests[name] = str(manifest.get("index_digest"))
        models[name] = str(manifest.get("embedding_model_id"))
        known = set(load_documents(paths)["doc_id"].to_list())
        for row in golden.iter_rows(named=True):
            if not row["expected_document_ids"]:
                warnings.append(f"{name}/{row['entry_id']}: no expected documents; excluded from every metric")
                continue
            gone = sorted(set(row["expected_document_ids"]) - known)
            if gone:
                warnings.append(f"{name}/{row['entry_id']}: expected documents no longer in the collection: {', '.join(gone)}")
            questions.append(
                EvalQuestion(
                    query_collection=name,
                    query_id=row["entry_id"],
                    question=row["question"],
                    judgements={(name, doc): grade for doc, grade in zip(row["expected_document_ids"], row["relevance"])},
                    reference_answer=row["reference_answer"],
                )
            )
    if not questions:
        raise RagassayError(
            f"no golden questions in {', '.join(collections)}; add some with `ragassay golden add` or `golden import`"
        )
    sampled = sample_questions(questions, max_questions, seed)
    context = GoldenContext(
        questions=[{"collection": q.query_collection, "id": q.query_id} for q in sampled],
        warnings=warnings,
        golden_digests=digests,
        golden_sizes=sizes,
        index_digests=index_digests,
        embedding_models=models,
    )
    return sampled, context


@task(name="search-golden-questions", cache_policy=NO_CACHE)
def search_golden_questions(
    home: Path, collections: tuple[str, ...], questions: list[EvalQuestion], configuration: RetrievalConfiguration, depth: int
) -> tuple[list[list[DocKey]], pl.DataFrame, dict[str, float]]:
    """Each question through `ragassay search`'s code path at depth max(ks); the run as a table,
    and the cost of any model calls (reranking) with the reranker's fallbacks."""
    search_config = configuration.search_config(depth)
    usage, rerank_stats = Usage(), RerankStats()
    rankings: list[list[DocKey]] = []
    rows: list[dict] = []
    with ProgressReporter(f"searching {len(questions)} questions ({configuration.label})") as progress:
        for done, question in enumerate(questions, start=1):
            hits = run_search(home, list(collections), question.question, search_config, usage, rerank_stats)
            rankings.append([(hit.collection, hit.doc_id) for hit in hits])
            rows.extend(
                {
                    "configuration": configuration.label,
                    "query_collection": question.query_collection,
                    "query_id": question.query_id,
                    "collection": hit.collection,
                    "doc_id": hit.doc_id,
                    "rank": hit.rank,
                    "score": hit.score,
                }
                for hit in hits
            )
            progress(done, len(questions))
    costs = {**usage.as_metrics(), **rerank_stats.as_metrics()} if configuration.rerank != "off" else {}
    return rankings, pl.DataFrame(rows, schema=RUN.schema), costs


@task(name="score-configuration", cache_policy=NO_CACHE)
def score_configuration(
    label: str, questions: list[EvalQuestion], rankings: list[list[DocKey]], metrics: list[MetricName], depth: int
) -> pl.DataFrame:
    return per_question_frame(label, questions, rankings, score_rankings(questions, rankings, metrics, depth))


@task(name="log-retrieval-batch", cache_policy=NO_CACHE)
def log_retrieval_batch(
    config: RetrievalEvalConfig,
    batch_id: str,
    context: GoldenContext,
    runs: dict[str, pl.DataFrame],
    per_question: dict[str, pl.DataFrame],
    means: dict[str, dict[str, float]],
    comparisons: pl.DataFrame,
    costs: dict[str, dict[str, float]],
) -> tuple[str, dict[str, str]]:
    """One parent run for the batch and one child run per configuration. Returns their ids."""
    collections = list(config.collections)
    mlflow_client = tracking.client(config.home)
    experiment_id = tracking.ensure_experiment(mlflow_client, config.home, collections)
    shared = {
        "collections": list(config.collections),
        "ks": list(config.ks),
        "max_questions": config.max_questions,
        "seed": config.seed,
        "questions": len(context.questions),
        "index_digest": context.index_digests,
        "golden_digest": context.golden_digests,
        "golden_size": context.golden_sizes,
        "embedding_model": context.embedding_models,
    }
    parent = tracking.start_batch(
        mlflow_client, experiment_id, batch_id, "retrieval", collections, tracking.flatten_params(shared)
    )
    child_ids = {}
    for configuration in config.configurations:
        label = configuration.label
        child_ids[label] = tracking.log_configuration_run(
            mlflow_client,
            experiment_id,
            parent,
            batch_id,
            "retrieval",
            collections,
            label,
            params=tracking.flatten_params({**shared, "config": configuration.model_dump()}),
            metrics={**means[label], **costs[label], "questions_scored": per_question[label].height},
            artifacts={"per_question": per_question[label], "run": runs[label]},
        )
    warnings = pl.DataFrame({"warning": context.warnings}, schema={"warning": pl.String})
    tracking.log_tables(mlflow_client, parent, {"comparisons": comparisons, "warnings": warnings})
    tracking.finish(mlflow_client, parent)
    return parent, child_ids
