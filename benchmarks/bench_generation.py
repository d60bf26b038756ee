"""Golden-set generation speed: pages per minute and the share of time spent outside the model.

    .venv/bin/python benchmarks/bench_generation.py [--count 10] [--seed 11]

Runs the generation flow with SmolLM2 on a fresh copy of the sample corpus (aim: under 10% of
the time outside the model).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import scratch_workspace

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--seed", type=int, default=11)
    arguments = parser.parse_args()
    from flows.generate_golden import generate_golden_flow
    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay.config import GenerateConfig, IndexConfig, IngestConfig
    from ragassay.llm.models import ChatModelConfig
    from tasks.resources import worker_resources

    with scratch_workspace("ragassay-bench-generation-") as workdir:
        home = workdir / "home"
        ingest_flow(IngestConfig(collection="sample", paths=(REPO / "data" / "sample" / "corpus",), home=home))
        index_flow(IndexConfig(collection="sample", home=home))
        worker_resources().chat_models.get(ChatModelConfig())  # loading the model is not generation time
        report = generate_golden_flow(GenerateConfig(collection="sample", count=arguments.count, seed=arguments.seed, home=home))
    outside = 1 - report.seconds_in_model / report.seconds
    print(f"generation (SmolLM2, seed {report.seed}): {report.attempted} pages in {report.seconds:.1f}s = "
          f"{report.attempted / report.seconds * 60:.1f} pages/minute; accepted {len(report.accepted)} of {report.requested} requested "
          f"(acceptance rate {report.acceptance_rate:.0%}); time outside the model {outside:.1%} (aim < 10%); "
          f"discarded {({k: v for k, v in report.discarded.items() if v})}")


if __name__ == "__main__":
    main()
