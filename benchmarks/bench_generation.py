"""Golden-set generation: pages per minute, acceptance rate and discards by reason, and the share
of time spent outside the models.

    .venv/bin/python benchmarks/bench_generation.py [--count 10] [--seed 11] [--model smollm2|qwen2.5-1.5b]

Runs the generation flow on a fresh copy of the sample corpus with the given model writing
questions and the default judge (Qwen2.5 1.5B) making the gate's judged check (aim: under 10% of
the time outside the models). Prints every accepted question with its answer, to read.
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
    parser.add_argument("--model", default="smollm2")
    arguments = parser.parse_args()
    from flows.generate_golden import generate_golden_flow
    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay.config import GenerateConfig, IndexConfig, IngestConfig
    from ragassay.llm.settings import ChatModelConfig
    from tasks.resources import worker_resources

    with scratch_workspace("ragassay-bench-generation-") as workdir:
        home = workdir / "home"
        ingest_flow(IngestConfig(collection="sample", paths=(REPO / "data" / "sample" / "corpus",), home=home))
        index_flow(IndexConfig(collection="sample", home=home))
        config = GenerateConfig(
            collection="sample",
            count=arguments.count,
            seed=arguments.seed,
            model=ChatModelConfig(backend=arguments.model),
            home=home,
        )
        for model in (config.model, config.judge):
            worker_resources().chat_models.get(model)  # loading the models is not generation time
        report = generate_golden_flow(config)
        from ragassay.golden.store import load_golden
        from ragassay.store.workspace import collection_paths

        for row in load_golden(collection_paths(home, "sample")).iter_rows(named=True):
            print(f"  accepted: {row['question']}  ->  {row['reference_answer']}  [{row['expected_document_ids'][0]}]")
    outside = 1 - report.seconds_in_model / report.seconds
    print(
        f"generation ({report.model_id}, judged by {report.judge_model_id}, seed {report.seed}): {report.attempted} pages in {report.seconds:.1f}s = "
        f"{report.attempted / report.seconds * 60:.1f} pages/minute; accepted {len(report.accepted)} of {report.requested} requested "
        f"(acceptance rate {report.acceptance_rate:.0%}); time outside the model {outside:.1%} (aim < 10%); "
        f"discarded { ({k: v for k, v in report.discarded.items() if v}) }"
    )


if __name__ == "__main__":
    main()
