"""The default judge's P(supported) on a seeded, stratified sample of MEMERAG's multilingual pool,
asked as evaluations ask it (each passage alone, with the question; judge calibrate's path), for
fitting and measuring the learned verdict's judge input (benchmarks/fit_learned_verdict.py).

    .venv/bin/python benchmarks/judge_pool_verdicts.py --per-language 60 --out ~/.cache/ragassay/judge-pool.json

Reads ../shared/datasets/memerag-multilingual/labelled_statements.jsonl (CC BY-NC 4.0; never copied
into the project). Verdicts go through a completion cache under ~/.cache/ragassay/, so a rerun (or
a larger sample) asks only what was not asked before. Writes {id: P(supported) or null}.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
POOL = REPO.parent / "shared" / "datasets" / "memerag-multilingual" / "labelled_statements.jsonl"
SAMPLE_SEED = 59


def stratified_sample(rows: list[dict], per_language: int) -> list[dict]:
    """per_language sentences of each language, drawn with SAMPLE_SEED (all of a smaller one)."""
    chosen = []
    for language in sorted({row["language"] for row in rows}):
        of_language = sorted((row for row in rows if row["language"] == language), key=lambda row: row["id"])
        random.Random(f"{SAMPLE_SEED}:{language}").shuffle(of_language)
        chosen += of_language[:per_language]
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-language", type=int, default=60)
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--out", type=Path, required=True)
    arguments = parser.parse_args()

    from ragassay.judge.calibration.calibrate import calibrate_judge
    from ragassay.llm.cache import CompletionCache
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig

    rows = [json.loads(line) for line in POOL.read_text().splitlines() if line.strip()]
    sample = stratified_sample(rows, arguments.per_language)
    cache = CompletionCache(Path.home() / ".cache" / "ragassay" / "judge-pool-cache.sqlite")
    with tempfile.TemporaryDirectory(prefix="ragassay-judge-pool-") as workdir:
        labels = Path(workdir) / "pool.jsonl"
        labels.write_text("".join(json.dumps(row) + "\n" for row in sample))
        models = ChatModels()
        report = calibrate_judge(models, ChatModelConfig(backend=arguments.model), labels, cache=cache)
        models.close()
    by_line = {f"{labels}:{index + 1}": row["id"] for index, row in enumerate(sample)}
    p_supported = {by_line.get(row.source, row.source): row.p_supported for row in report.rows}
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps({"model": report.judge_model, "p_supported": p_supported}, indent=0))
    print(f"{len(p_supported)} verdicts, balanced accuracy {report.balanced_accuracy:.3f} -> {arguments.out}")


if __name__ == "__main__":
    main()
