"""Prefect tasks of golden-set generation: choose the seed, generate (golden/generation.py stores
every result as it comes, so an interrupted run resumes where it stopped), log the run to MLflow."""

from __future__ import annotations

import random

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger

from ragassay import tracking
from ragassay.config import GenerateConfig
from ragassay.golden.generation import GenerationReport, generate_questions
from ragassay.store.workspace import collection_paths
from tasks.resources import worker_resources


@task(name="choose-seed", cache_policy=NO_CACHE)
def choose_seed(config: GenerateConfig) -> int:
    """The configured seed, or a fresh one drawn and logged (it is also in the report and MLflow)."""
    seed = config.seed if config.seed is not None else random.SystemRandom().randrange(2**31)
    get_run_logger().info("generating with seed %d", seed)
    return seed


@task(name="generate-golden-questions", cache_policy=NO_CACHE)
def generate_golden_questions(config: GenerateConfig, seed: int) -> tuple[GenerationReport, pl.DataFrame]:
    """Draw pages, ask the model for a question on each, gate it, store it; the report and this
    call's candidates."""
    return generate_questions(worker_resources(), collection_paths(config.home, config.collection), config, seed)


@task(name="log-generation-run", cache_policy=NO_CACHE)
def log_generation_run(config: GenerateConfig, report: GenerationReport, candidates: pl.DataFrame) -> GenerationReport:
    """One MLflow run: seed, model, prompt version and count; acceptance and discards; candidates.
    Returns the report with the run's id."""
    mlflow_client = tracking.client(config.home)
    experiment_id = tracking.ensure_experiment(mlflow_client, config.home, [config.collection])
    run = mlflow_client.create_run(
        experiment_id,
        run_name=f"generate-{report.seed}",
        tags={tracking.TAG_KIND: "generation", tracking.TAG_COLLECTIONS: config.collection, tracking.TAG_ROLE: "generation",
              tracking.TAG_BATCH: f"generation-{report.seed}"},
    )
    run_id = run.info.run_id
    tracking.log_values(
        mlflow_client,
        run_id,
        {"seed": str(report.seed), "model": report.model_id, "prompt_version": report.prompt_version, "count": str(report.requested),
         "judge_model": report.judge_model_id, "support_threshold": str(report.support_threshold),
         "collection": config.collection, "temperature": str(config.temperature)},
        {"acceptance_rate": report.acceptance_rate, "attempted": report.attempted, "accepted": len(report.accepted),
         **{f"discarded_{reason}": count for reason, count in report.discarded.items()}, **report.usage, **report.judge_usage},
    )
    tracking.log_tables(mlflow_client, run_id, {"candidates": candidates, "discarded": candidates.filter(~pl.col("accepted"))})
    tracking.finish(mlflow_client, run_id)
    return report.model_copy(update={"run_id": run_id})
