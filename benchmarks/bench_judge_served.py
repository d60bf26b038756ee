"""A served judge's verdicts per second at concurrency 1, 2, 4 and 8: llama-cpp-python's own
OpenAI-compatible server (`llama_cpp.server`) with the default judge (Qwen2.5-Coder-1.5B Q4_K_M),
asked through ragassay's `openai` backend as an evaluation asks it (Judge.support_by_passage:
every statement against every passage, the question shown).

    .venv/bin/python benchmarks/bench_judge_served.py [--pairs 64] [--levels 1,2,4,8] [--gpu-layers -1]

On a GPU machine, build llama-cpp-python with CUDA first (RAGASSAY_LLAMA_CMAKE_ARGS=-DGGML_CUDA=ON
bash scripts/setup.sh) and pass --gpu-layers -1; the goal there is >= 50 verdicts/s on one H200.
Prints one line per level and writes the figures, dated, as JSON to --out (default
$OUT/bench_judge_served.json when $OUT is set), with whether each level's verdicts equal
concurrency 1's and the largest difference of P(supported): llama.cpp's server reuses the KV
prefix of the request before, so another order of requests can move P in its last digits (with a
state reset per request, as in tests/judge/test_served_concurrency.py, they are identical).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # ragassay; harness is beside this script
CORPUS = REPO / "data" / "sample" / "corpus"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=64, help="(passage, statement) verdicts per level")
    parser.add_argument("--levels", default="1,2,4,8")
    parser.add_argument("--gpu-layers", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="server CPU threads (default: llama.cpp's)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(os.environ["OUT"]) / "bench_judge_served.json" if os.environ.get("OUT") else None,
    )
    arguments = parser.parse_args()
    passages, statements = _pairs(arguments.pairs)
    port = _free_port()
    server = _start_server(port, arguments.gpu_layers, arguments.threads)
    try:
        rows = _measure(f"http://127.0.0.1:{port}", passages, statements, [int(x) for x in arguments.levels.split(",")])
    finally:
        server.terminate()
        server.wait(timeout=60)
    figures = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": _device(),
        "gpu_layers": arguments.gpu_layers,
        "verdicts_per_level": len(passages) * len(statements),
        "levels": rows,
    }
    print(json.dumps(figures, indent=2))
    if arguments.out is not None:
        arguments.out.parent.mkdir(parents=True, exist_ok=True)
        arguments.out.write_text(json.dumps(figures, indent=2) + "\n")


def _pairs(count: int) -> tuple[list[str], list[str]]:
    """Passages (one sample document's first 600 characters each) and statements (sentences of
    other documents), as many of each as make about `count` verdicts."""
    texts = [
        " ".join(p.read_text(encoding="utf-8").split())
        for p in sorted(CORPUS.rglob("*"))
        if p.suffix in (".md", ".txt")
    ]
    sentences = [s for text in texts for s in re.split(r"(?<=[.!?])\s+", text) if 40 <= len(s) <= 200]
    width = max(1, int(count**0.5))
    return [text[:600] for text in texts[:width]], sentences[: max(1, count // width)]


def _measure(url: str, passages: list[str], statements: list[str], levels: list[int]) -> list[dict]:
    from ragassay.judge.judge import Judge
    from ragassay.llm.registry import load_chat_model
    from ragassay.llm.settings import ChatModelConfig

    question = "What should a beekeeper know?"
    rows, first = [], None
    for level in levels:
        judge = Judge(
            load_chat_model(
                ChatModelConfig(backend="openai", url=url, model="judge", concurrency=level, context_size=4096)
            )
        )
        started = time.perf_counter()
        verdicts = judge.support_by_passage(passages, statements, question)
        seconds = time.perf_counter() - started
        values = [v.value for v in verdicts]
        first = values if first is None else first
        calls = len(passages) * len(statements)
        rows.append(
            {
                "concurrency": level,
                "seconds": round(seconds, 2),
                "verdicts_per_second": round(calls / seconds, 2),
                "same_verdicts_as_concurrency_1": [v.verdict for v in values] == [v.verdict for v in first],
                # llama.cpp's server reuses the KV prefix of the request before: another order of
                # requests evaluates a prompt in other pieces, and its P differs in the last digits.
                "max_p_difference_from_concurrency_1": max(
                    abs(a.p_supported - b.p_supported) for a, b in zip(values, first, strict=True)
                ),
            }
        )
        print(f"concurrency {level}: {calls} verdicts in {seconds:.1f} s, {calls / seconds:.2f} verdicts/s", flush=True)
    return rows


def _start_server(port: int, gpu_layers: int, threads: int | None) -> subprocess.Popen:
    from harness import start_judge_server

    return start_judge_server(
        port,
        *("--n_ctx", "4096", "--model_alias", "judge", "--logits_all", "true", "--n_gpu_layers", str(gpu_layers)),
        *(("--n_threads", str(threads)) if threads else ()),
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _device() -> str:
    try:
        return (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
            ).stdout.strip()
            or "cpu"
        )
    except (OSError, subprocess.SubprocessError):
        return f"cpu ({os.cpu_count()} cores)"


if __name__ == "__main__":
    main()
