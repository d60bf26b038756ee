"""The model layer's cost: overhead against llama-cpp-python called directly, and seconds per
grounded answer on the sample corpus.

    .venv/bin/python benchmarks/bench_models.py [--rounds 3]

1. The same prompts, schema, seed and settings through `generate_structured` and through
   `Llama.create_chat_completion` on one loaded SmolLM2: completion tokens per second of each,
   and the ratio of their times (aim: 1.05 or better).
2. `answer_question` over the sample golden questions and unanswerable questions: seconds per
   answer, model calls, how many were answered, declined before the model, or refused, and how
   many golden questions' answers cite one of their expected documents.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from harness import scratch_workspace

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    overhead(arguments.rounds)
    with scratch_workspace("ragassay-bench-models-") as workdir:
        answers(workdir)


def overhead(rounds: int) -> None:
    from ragassay.answer.grounding import AnswerOutput, Source, answer_messages, answer_schema
    from ragassay.llm.registry import load_chat_model
    from ragassay.llm.settings import ChatModelConfig
    from ragassay.llm.structured import generate_structured

    model = load_chat_model(ChatModelConfig())
    llama = model._llama  # the same loaded weights, called directly
    sources = [
        Source(1, "s", "wax.md", "wax.md#0", 0, 60, None, "Beeswax melts between 62 and 64 degrees Celsius."),
        Source(2, "s", "smoke.txt", "smoke.txt#0", 0, 60, None, "Cool smoke masks the alarm pheromone of guard bees."),
    ]
    prompts = [
        answer_messages(q, sources)
        for q in ("When does wax melt?", "Why use smoke?", "What calms bees?", "How hot is wax?")
    ]
    schema = answer_schema(len(sources))
    direct_seconds, direct_tokens, layer_seconds, layer_tokens = [], 0, [], 0
    for _ in range(rounds):
        for seed, messages in enumerate(prompts):
            # llama.cpp reuses the cached prefix of the previous prompt; reset so both start cold.
            llama.reset()
            started = time.perf_counter()
            response = llama.create_chat_completion(
                messages,
                response_format={"type": "json_object", "schema": schema},
                max_tokens=128,
                temperature=0.0,
                seed=seed,
            )
            direct_seconds.append(time.perf_counter() - started)
            direct_tokens += response["usage"]["completion_tokens"]
            llama.reset()
            started = time.perf_counter()
            result = generate_structured(
                model, messages, AnswerOutput, schema=schema, max_tokens=128, temperature=0.0, seed=seed
            )
            layer_seconds.append(time.perf_counter() - started)
            layer_tokens += sum(c.completion_tokens for c in result.completions)
    direct, layer = sum(direct_seconds), sum(layer_seconds)
    print(
        f"model layer vs llama-cpp-python direct ({len(direct_seconds)} calls each, SmolLM2, schema-constrained): "
        f"direct {direct_tokens / direct:.1f} tokens/s ({statistics.median(direct_seconds):.2f} s median), "
        f"layer {layer_tokens / layer:.1f} tokens/s ({statistics.median(layer_seconds):.2f} s median); "
        f"time ratio layer/direct {layer / direct:.3f} (aim <= 1.05); completion tokens {layer_tokens} vs {direct_tokens}"
    )


def answers(workdir: Path) -> None:
    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay.answer.answering import answer_question
    from ragassay.answer.settings import AnswerSettings
    from ragassay.config import IndexConfig, IngestConfig
    from ragassay.llm.structured import Usage
    from ragassay.resources import Resources

    home = workdir / "home"
    ingest_flow(IngestConfig(collection="sample", paths=(SAMPLE / "corpus",), home=home))
    index_flow(IndexConfig(collection="sample", home=home))
    rows = [
        json.loads(line)
        for name in ("golden.jsonl", "unanswerable.jsonl")
        for line in (SAMPLE / name).read_text().splitlines()
        if line.strip()
    ]
    questions = [row["question"] for row in rows]
    config = AnswerSettings()
    resources = Resources()
    answer_question(resources, home, ["sample"], questions[0], config)  # load models once before timing
    outcomes: dict[str, int] = {}
    usage = Usage()
    started = time.perf_counter()
    expected_cited = 0  # golden questions whose answer cites one of the expected documents
    for row in rows:
        answer = answer_question(resources, home, ["sample"], row["question"], config)
        usage = usage + answer.usage
        cited = {citation.doc_id for statement in answer.statements for citation in statement.citations}
        expected_cited += bool(cited & set(row.get("expected_document_ids", [])))
        kind = (
            answer.outcome
            if answer.outcome == "answered"
            else ("declined before the model" if answer.reason.startswith("nothing relevant") else "refused")
        )
        outcomes[kind] = outcomes.get(kind, 0) + 1
    seconds = time.perf_counter() - started
    print(
        f"grounded answers on the sample corpus: {len(questions)} questions in {seconds:.1f}s = {seconds / len(questions):.2f} s/answer; "
        f"model calls {usage.calls} ({usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens, "
        f"{usage.seconds:.1f}s in the model = {usage.seconds / seconds:.0%}), unparseable {usage.unparseable}; outcomes {outcomes}; "
        f"golden questions whose answer cites an expected document: {expected_cited} of {sum('expected_document_ids' in row for row in rows)}"
    )


if __name__ == "__main__":
    main()
