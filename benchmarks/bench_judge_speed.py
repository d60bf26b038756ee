"""The judge's speed on 2 cores: threads, prompt and generation tokens per second, and what reusing
llama.cpp's KV prefix saves when the statements of one answer share their context.

    .venv/bin/python benchmarks/bench_judge_speed.py [--model qwen2.5-1.5b] [--documents 4] [--skip-threads]

1. Threads: prompt processing (a ~950-token MEMERAG-like context from the sample corpus) and
   generation tokens/s at 1 and 2 threads, on an idle machine and beside one busy process
   (a Python loop standing in for another job on the machine).
2. Prefix reuse: for each sample-corpus document, a ~900-token context (its first 3,600
   characters) and four statements (its first sentences), judged with `Judge.support` one after
   another (what `judge_answer` does: the prompt is instructions, context, then statement, so
   consecutive verdicts share everything but the statement), against the same verdicts each
   from a cold cache (llama.cpp's state reset before every call, as when calls that share a
   context are not run back to back). Prints seconds per verdict of each and their ratio.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "data" / "sample" / "corpus"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--documents", type=int, default=4)
    parser.add_argument("--skip-threads", action="store_true")
    arguments = parser.parse_args()
    contexts = _contexts(arguments.documents)
    if not arguments.skip_threads:
        threads(arguments.model, contexts[0][0])
    prefix_reuse(arguments.model, contexts)


def _contexts(count: int) -> list[tuple[str, list[str]]]:
    """Contexts of ~3,600 characters (the sample documents are short: each context is one document
    followed by the next ones, as retrieved sources are), with the first document's first four
    sentences as the statements of an answer."""
    texts = [
        " ".join(p.read_text(encoding="utf-8").split())
        for p in sorted(CORPUS.rglob("*"))
        if p.suffix in (".md", ".txt")
    ]
    found = []
    for index, text in enumerate(texts):
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if 40 <= len(s) <= 300][:4]
        if len(sentences) == 4:
            found.append((" ".join(texts[index:] + texts[:index])[:3600], sentences))
    return found[:count]


def threads(name: str, context: str) -> None:
    from llama_cpp import Llama

    from ragassay.llm.catalog import verified_model_path

    path = verified_model_path(name)
    for load in ("idle", "one busy process"):
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load != "idle" else None
        try:
            for count in (1, 2):
                llama = Llama(model_path=str(path), n_ctx=4096, n_threads=count, n_threads_batch=count, verbose=False)
                tokens = llama.tokenize(context.encode())[:900]
                started = time.perf_counter()
                llama.eval(tokens)
                prompt_rate = len(tokens) / (time.perf_counter() - started)
                started = time.perf_counter()
                output = llama.create_completion("Bees", max_tokens=48, temperature=0.0, seed=0)
                generated = output["usage"]["completion_tokens"] / (time.perf_counter() - started)
                print(
                    f"{load}: threads {count}: prompt {prompt_rate:.1f} tokens/s, generation {generated:.1f} tokens/s"
                )
                del llama
        finally:
            if busy is not None:
                busy.kill()


def prefix_reuse(name: str, contexts: list[tuple[str, list[str]]]) -> None:
    from ragassay.judge.judge import Judge
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig

    models = ChatModels()
    model = models.get(ChatModelConfig(backend=name))
    llama = model._llama  # the loaded weights, to empty llama.cpp's cache for the cold runs
    cold, warm, prompt_tokens = [], [], 0
    for context, statements in contexts:
        for statement in statements:
            llama.reset()
            started = time.perf_counter()
            result = Judge(model).support(context, statement)  # a fresh Judge: nothing remembered
            cold.append(time.perf_counter() - started)
            prompt_tokens += result.usage.prompt_tokens
        llama.reset()
        judge = Judge(model)
        for statement in statements:
            started = time.perf_counter()
            judge.support(context, statement)
            warm.append(time.perf_counter() - started)
    models.close()
    cold_mean, warm_mean = sum(cold) / len(cold), sum(warm) / len(warm)
    print(
        f"{name} support verdicts, {len(contexts)} contexts x 4 statements, ~{prompt_tokens / len(cold):.0f} prompt tokens each "
        f"(threads {model.threads}): cold cache {cold_mean:.2f} s/verdict, context reused {warm_mean:.2f} s/verdict "
        f"(first of each context {sum(warm[::4]) / len(warm[::4]):.2f} s, later ones {sum(w for i, w in enumerate(warm) if i % 4) / (len(warm) * 3 / 4):.2f} s); "
        f"speed-up {cold_mean / warm_mean:.1f}x"
    )


if __name__ == "__main__":
    main()
