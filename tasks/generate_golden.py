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
from ragassay.golden.dialogue_generation import generate_dialogues
from ragassay.golden.generation import GenerationReport, generate_questions, generation_record
from ragassay.store.workspace import collection_paths
from ragassay.tracking import Batch
from tasks.publish import stage_batch
from tasks.resources import MODEL_SERVER_RETRIES, TRACKING_RETRIES, worker_resources


@task(name="choose-seed", cache_policy=NO_CACHE)
def choose_seed(config: GenerateConfig) -> int:
    """The configured seed, or a fresh one drawn and logged (it is also in the report and MLflow)."""
    seed = config.seed if config.seed is not None else random.SystemRandom().randrange(2**31)
    get_run_logger().info("generating with seed %d", seed)
    return seed


@task(name="generate-golden-questions", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def generate_golden_questions(config: GenerateConfig, seed: int) -> tuple[GenerationReport, pl.DataFrame]:
    """Draw pages, ask the model for a question (or a dialogue) on each, gate it, store it; the
    report and this call's candidates."""
    generate = generate_dialogues if config.dialogues else generate_questions
    return generate(worker_resources(), collection_paths(config.home, config.collection), config, seed)


@task(name="log-generation-run", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def log_generation_run(
    config: GenerateConfig, report: GenerationReport, candidates: pl.DataFrame, batch: Batch | None = None
) -> GenerationReport:
    """One MLflow run (in a batch of its own, or the pipeline's): seed, model, prompt version and
    count; acceptance and discards; candidates; the discards picture on the batch's parent.
    Returns the report with the run's id. Retried: the tracking server may be briefly unreachable;
    one that does not answer is TrackingStoreFailed naming it and its reason (the golden set is stored already)."""
    with tracking.store_failures_as_typed(config.home):
        batch = stage_batch(config.home, [config.collection], "generation", {}, batch, "ragassay golden generate")
        logged = tracking.log_batch_record(config.home, batch, generation_record(config, report, candidates))
    return report.model_copy(update={"run_id": next(iter(logged.run_ids.values()))})
