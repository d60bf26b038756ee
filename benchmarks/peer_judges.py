"""RAGAS's and DeepEval's faithfulness metrics on labelled sentences, for bench_judge_peers.py.

Runs under the peers' own virtualenv (the benchmark creates it in its work folder; neither tool
is a dependency of ragassay), against an OpenAI-compatible server:

    WORK/venv/bin/python benchmarks/peer_judges.py ragas|deepeval URL MODEL ITEMS.jsonl RESULTS.jsonl

Each item is one sentence of an answer: {id, question, sentence, passages}. The sentence is the
response the metric scores against the passages (the retrieved contexts); its score is the share
of the claims the tool extracted from it that it judged supported. One result line per item:
{id, score, seconds, error}; a failure (unparseable model output, no claims extracted) is kept
with its error, never dropped. Telemetry of both tools is switched off.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import time

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_UPDATE_WARNING_OPT_IN", "0")
os.environ.setdefault("DEEPEVAL_GRPC_LOGGING", "0")
# A CPU model takes minutes where a cloud API takes seconds: DeepEval's own timeouts would fail every item.
os.environ.setdefault("DEEPEVAL_DISABLE_TIMEOUTS", "1")
# Bounded outputs: a small model that never closes its JSON would otherwise write to the context end.
MAX_TOKENS = 512


def ragas_scorer(url: str, model: str):
    from openai import AsyncOpenAI
    from ragas.llms.base import llm_factory
    from ragas.metrics.collections import Faithfulness

    client = AsyncOpenAI(base_url=f"{url}/v1", api_key="local", max_retries=0, timeout=600)
    metric = Faithfulness(llm=llm_factory(model, client=client, temperature=0.0, max_tokens=MAX_TOKENS))
    # One event loop for every item: the async client's connections belong to the loop they were
    # opened in (a new loop per item fails every other call with "Connection error").
    loop = asyncio.new_event_loop()

    def score(item: dict) -> float:
        result = loop.run_until_complete(
            metric.ascore(user_input=item["question"], response=item["sentence"], retrieved_contexts=item["passages"])
        )
        return result.value

    return score


def deepeval_scorer(url: str, model: str):
    from deepeval.metrics import FaithfulnessMetric
    from deepeval.models import LocalModel
    from deepeval.test_case import LLMTestCase

    llm = LocalModel(
        model=model,
        api_key="local",
        base_url=f"{url}/v1",
        temperature=0.0,
        generation_kwargs={"max_tokens": MAX_TOKENS, "response_format": {"type": "json_object"}},
    )

    def score(item: dict) -> float:
        metric = FaithfulnessMetric(model=llm, include_reason=False, async_mode=False)
        case = LLMTestCase(input=item["question"], actual_output=item["sentence"], retrieval_context=item["passages"])
        return metric.measure(case)

    return score


def main() -> None:
    tool, url, model, items_path, results_path = sys.argv[1:6]
    score = {"ragas": ragas_scorer, "deepeval": deepeval_scorer}[tool](url, model)
    done = set()
    if os.path.exists(results_path):
        with open(results_path, encoding="utf-8") as handle:
            done = {json.loads(line)["id"] for line in handle if line.strip()}
    with open(items_path, encoding="utf-8") as handle:
        items = [json.loads(line) for line in handle if line.strip()]
    with open(results_path, "a", encoding="utf-8") as results:
        for number, item in enumerate(items, start=1):
            if item["id"] in done:
                continue
            started = time.perf_counter()
            try:
                value, error = score(item), None
                if value is None or (isinstance(value, float) and math.isnan(value)):
                    value, error = None, "no score (NaN: no claims extracted, or none judged)"
            except Exception as failure:  # the tool's own errors, kept per item
                value, error = None, f"{type(failure).__name__}: {str(failure)[:300]}"
            seconds = time.perf_counter() - started
            results.write(json.dumps({"id": item["id"], "score": value, "seconds": seconds, "error": error}) + "\n")
            results.flush()
            print(f"{tool} {number}/{len(items)} {seconds:.1f}s {error or value}", flush=True)


if __name__ == "__main__":
    main()
