"""The golden-set generation flow: seeded pages, model-written questions, the quality gate."""

from __future__ import annotations

from prefect import flow

from flows.finished import finished
from flows.run_names import run_name
from ragassay.config import GenerateConfig
from ragassay.golden.generation import GenerationReport
from ragassay.tracking import Batch
from tasks.generate_golden import choose_seed, generate_golden_questions, log_generation_run
from tasks.resources import locate_models


@flow(name="generate-golden", flow_run_name=run_name, validate_parameters=True)
def generate_golden_flow(config: GenerateConfig, batch: Batch | None = None) -> GenerationReport:
    """Grow a collection's golden set from its own pages; the seed used is reported. Logged as a
    batch of its own, or into the pipeline's batch."""
    locate_models(config.chat_models())
    seed = choose_seed(config)
    report, candidates = generate_golden_questions(config, seed)
    return finished(log_generation_run(config, report, candidates, batch))
