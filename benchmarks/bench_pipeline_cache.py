"""Work only where something changed: the sample pipeline (data/sample/pipeline.yaml) run three
times, each as the user runs it (`ragassay run --config ... --json`, a fresh process):

1. cold: an empty workspace (models already assembled);
2. unchanged: the same again (goal: under 10% of the cold run);
3. one document changed: a paragraph added to one of the corpus's 20 documents (goal: work in
   proportion to what changed: that document's chunks re-embedded, the answers whose retrieved
   passages changed asked again, the rest from cache).

    .venv/bin/python benchmarks/bench_pipeline_cache.py [--document health/varroa-mites.md]

Prints each run's wall time (process start to exit, Prefect's temporary server included), the
flow's own time, every stage's time, and what each stage took from cache; then the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


def run_pipeline(config: Path, env: dict[str, str]) -> tuple[dict, float]:
    started = time.perf_counter()
    result = subprocess.run(
        [str(Path(sys.executable).parent / "ragassay"), "run", "--config", str(config), "--json"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if result.returncode not in (0, 1):
        sys.exit(f"ragassay run failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return json.loads(result.stdout), seconds


def model_calls(report: dict) -> tuple[int, int]:
    """(asked, from cache) over answers, judge and generation."""
    asked = cached = 0
    for metrics in report["answers"]["metrics"].values():
        asked += metrics["answer_model_calls"] + metrics["judge_calls"]
        cached += metrics["answer_model_cached_calls"] + metrics["judge_cached_calls"]
    generation = report["golden"]["generation"]
    if generation:
        asked += generation["usage"]["calls"] + generation["judge_usage"]["calls"]
        cached += generation["usage"]["cached_calls"] + generation["judge_usage"]["cached_calls"]
    return int(asked), int(cached)


def describe(name: str, report: dict, wall: float) -> None:
    asked, cached = model_calls(report)
    stages = ", ".join(f"{stage} {seconds:.1f}s" for stage, seconds in report["stage_seconds"].items())
    print(f"{name:<10} wall {wall:6.1f}s  flow {report['seconds']:6.1f}s  ({stages})")
    counts, index = report["ingest"]["counts"], report["index"]
    print(
        f"{'':<10} documents {counts['ingested']} new, {counts['replaced']} replaced, {counts['unchanged']} unchanged; "
        f"embeddings {index['embedded']} computed, {index['reused_embeddings']} reused; model calls {asked} asked, {cached} from cache"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--document", default="health/varroa-mites.md", help="The corpus document the third run changes."
    )
    arguments = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ragassay-bench-pipeline-"))
    try:
        corpus = folder / "corpus"
        shutil.copytree(SAMPLE / "corpus", corpus)
        config = folder / "pipeline.yaml"
        config.write_text(
            (SAMPLE / "pipeline.yaml").read_text().replace("paths: [data/sample/corpus]", f"paths: [{corpus}]")
        )
        env = {**os.environ, "RAGASSAY_HOME": str(folder / "home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        env.setdefault(
            "RAGASSAY_MODELS", str(Path(os.environ.get("RAGASSAY_HOME", Path.home() / ".ragassay")) / "models")
        )

        cold, cold_wall = run_pipeline(config, env)
        describe("cold", cold, cold_wall)
        warm, warm_wall = run_pipeline(config, env)
        describe("unchanged", warm, warm_wall)
        changed_file = corpus / arguments.document
        changed_file.write_text(
            changed_file.read_text(encoding="utf-8")
            + "\n\nTreat colonies in late summer, after the honey harvest, when mite numbers peak.\n",
            encoding="utf-8",
        )
        changed, changed_wall = run_pipeline(config, env)
        describe("1 changed", changed, changed_wall)

        documents = cold["ingest"]["counts"]["ingested"]
        asked_cold, _ = model_calls(cold)
        asked_changed, cached_changed = model_calls(changed)
        print()
        print(
            f"unchanged re-run: {warm_wall / cold_wall:.1%} of the cold run's wall time ({warm['seconds'] / cold['seconds']:.1%} of its flow time); goal < 10%"
        )
        print(
            f"one of {documents} documents changed ({1 / documents:.0%}): {changed_wall / cold_wall:.1%} of the cold wall time; "
            f"{changed['index']['embedded']} of {changed['index']['chunks']} chunks re-embedded; "
            f"{asked_changed} of {asked_changed + cached_changed} model calls asked again ({asked_changed / max(1, asked_cold):.0%} of the cold run's calls)"
        )
        names = (
            "faithfulness",
            "context_recall",
            "answer_relevancy",
            "citation_precision",
            "refusal_recall",
            "false_refusal_rate",
        )

        def same_metrics(one: dict, other: dict) -> bool:
            return all(
                one["answers"]["metrics"][label].get(name) == other["answers"]["metrics"][label].get(name)
                for label in one["answers"]["metrics"]
                for name in names
            )

        print(
            f"answer metrics of the unchanged re-run equal the cold run's: {same_metrics(warm, cold)}; "
            f"after the change they {'stayed the same' if same_metrics(changed, warm) else 'moved'}"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
