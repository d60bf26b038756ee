"""The golden-set generation flow: seeded pages, model-written questions, the quality gate."""

from __future__ import annotations

import random

from prefect import flow
from prefect.logging import get_run_logger

from ragassay.config import GenerateConfig
from ragassay.workspace import collection_paths
from tasks.generation_tasks import GenerationReport, generate_questions, log_generation_run


@flow(name="generate-golden", validate_parameters=True)
def generate_golden_flow(config: GenerateConfig) -> GenerationReport:
    """Grow a collection's golden set from its own pages; the seed used is reported."""
    seed = config.seed if config.seed is not None else random.SystemRandom().randrange(2**31)
    get_run_logger().info("generating with seed %d", seed)
    paths = collection_paths(config.home, config.collection)
    report, candidates = generate_questions(paths, config, seed)
    report.run_id = log_generation_run(config, report, candidates)
    return report
