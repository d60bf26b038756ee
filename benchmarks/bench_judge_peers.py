"""ragassay's support verdict side by side with RAGAS's and DeepEval's faithfulness metrics, on
MEMERAG-EXT's test half: agreement with the human labels of every sentence, and seconds per
answer, measured in one run on this machine with the same Qwen2.5-Coder-1.5B Q4_K_M GGUF.

    .venv/bin/python benchmarks/bench_judge_peers.py [--work DIR] [--answers N] [--tools ragassay ragas deepeval]

- ragassay: `calibrate_statements`, what `ragassay judge calibrate` and answer evaluation run
  (each sentence against each passage with the question, P(supported) >= 0.85), in process,
  every call asked (no completion cache).
- RAGAS (`ragas.metrics.collections.Faithfulness`) and DeepEval (`FaithfulnessMetric` with its
  `LocalModel`, JSON mode) in a virtualenv of their own under --work (never ragassay's
  dependencies), each calling llama-cpp-python's OpenAI-compatible server, started here on
  loopback with the same GGUF file, two threads. Each sentence is the response they score against
  the answer's passages; a sentence counts as supported when every claim the tool drew from it is
  (score 1.0), since people marked a partly supported sentence unsupported. AUC uses the score.
  A tool's failure on a sentence (unparseable output, no claims) is counted as unreadable.
- --answers N: a seeded sample of N answers of the test half (all their sentences), when the
  whole half would take too long.

Reads ../shared/datasets/memerag-ext-en (CC BY-NC 4.0; never copied into the project).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "datasets" / "memerag-ext-en"
SPLIT_FILE = Path(__file__).with_name("memerag_split.json")
# The peers' versions, installed together offline-capable from the package registry; langchain-
# community is held below 0.4 because ragas 0.4.3 imports its chat_models.vertexai, gone in 0.4.
PEERS = ["ragas==0.4.3", "deepeval==4.3.1", "langchain-community<0.4"]
THRESHOLD_SCORE = 1.0
SAMPLE_SEED = 26


def question_of(row_id: str) -> str:
    return row_id.rsplit("-", 1)[0]


def peers_python(work: Path) -> Path:
    """The peers' own virtualenv, made once under the work folder."""
    venv = work / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run(["python3.11", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
        installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEERS])
        if installed.returncode:
            raise SystemExit(f"installing {' '.join(PEERS)} into {venv} failed (exit {installed.returncode})")
    return python


def test_items(answers: int | None) -> tuple[list[dict], dict[str, bool]]:
    """The test half's labelled sentences as peer items (question, sentence, passages), and their labels."""
    rows = {
        f"memerag-ext-{row['query_id']}": row for row in map(json.loads, (DATA / "rows.jsonl").read_text().splitlines())
    }
    test = set(json.loads(SPLIT_FILE.read_text())["test"])
    if answers is not None:
        test = set(random.Random(SAMPLE_SEED).sample(sorted(test), answers))
    items, labels = [], {}
    for line in (DATA / "labelled_statements.jsonl").read_text().splitlines():
        row = json.loads(line)
        question = question_of(row["id"])
        if question in test:
            source = rows[question]
            items.append(
                {
                    "id": row["id"],
                    "question": source["query"],
                    "sentence": row["statement"],
                    "passages": [p["text"] for p in source["context"]],
                    "context": row["context"],
                }
            )
            labels[row["id"]] = row["label"] == "supported"
    return items, labels


def run_ragassay(items: list[dict], labels: dict[str, bool]) -> tuple[dict[str, float | None], float]:
    """P(supported) per sentence, and the judge's seconds in all."""
    from ragassay.judge.calibration.labelled_statements import LabelledStatement
    from ragassay.judge.calibration.support import calibrate_statements
    from ragassay.judge.judge import Judge
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig

    models = ChatModels()
    judge = Judge(models.get(ChatModelConfig(backend="qwen2.5-1.5b")))
    labelled = [
        LabelledStatement(item["id"], item["context"], item["sentence"], labels[item["id"]], item["question"])
        for item in items
    ]
    started = time.perf_counter()
    report = calibrate_statements(judge, labelled).model_dump()
    seconds = time.perf_counter() - started
    models.close()
    return {row["source"]: row["p_supported"] for row in report["rows"]}, seconds


def start_server(port: int) -> subprocess.Popen:
    from harness import start_judge_server

    return start_judge_server(port, "--n_ctx", "8192", "--n_threads", "2", "--model_alias", "qwen2.5-1.5b", timeout=180)


def run_peer(python: Path, tool: str, url: str, items: list[dict], work: Path) -> dict[str, dict]:
    items_path, results_path = work / "items.jsonl", work / f"{tool}-results.jsonl"
    items_path.write_text(
        "".join(json.dumps({k: v for k, v in item.items() if k != "context"}) + "\n" for item in items)
    )
    results_path.unlink(missing_ok=True)
    subprocess.run(
        [
            *(str(python), str(Path(__file__).with_name("peer_judges.py")), tool, url, "qwen2.5-1.5b"),
            *(str(items_path), str(results_path)),
        ],
        check=True,
    )
    return {row["id"]: row for row in map(json.loads, results_path.read_text().splitlines())}


def summary(
    name: str, scores: dict[str, float | None], labels: dict[str, bool], cut: float, seconds: float, answers: int
):
    from benchmarks.bench_judge_agreement import auc
    from ragassay.metrics.agreement import agreement

    ids = list(labels)
    verdicts = [None if scores.get(i) is None else scores[i] >= cut for i in ids]
    result = agreement([labels[i] for i in ids], verdicts)
    scored = [(labels[i], scores[i]) for i in ids if scores.get(i) is not None]
    return {
        "tool": name,
        "balanced_accuracy": result.balanced_accuracy,
        "kappa": result.kappa,
        "kappa_ci": (result.kappa_ci_low, result.kappa_ci_high),
        "auc": auc(scored),
        "unreadable": result.unreadable_rate,
        "seconds_per_answer": seconds / answers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragassay-bench-peers"))
    parser.add_argument("--answers", type=int, help="a seeded sample of this many test-half answers")
    parser.add_argument("--tools", nargs="+", default=["ragassay", "ragas", "deepeval"])
    parser.add_argument("--port", type=int, default=8093)
    arguments = parser.parse_args()
    arguments.work.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(REPO))

    items, labels = test_items(arguments.answers)
    answers = len({question_of(item["id"]) for item in items})
    print(
        f"MEMERAG-EXT test half: {answers} answers, {len(items)} sentences ({sum(not v for v in labels.values())} unsupported)"
    )
    rows = []
    if "ragassay" in arguments.tools:
        scores, seconds = run_ragassay(items, labels)
        (arguments.work / "ragassay-results.json").write_text(json.dumps({"seconds": seconds, "scores": scores}))
        rows.append(summary("ragassay (support-probability/4, P >= 0.85)", scores, labels, 0.85, seconds, answers))
    peers = [tool for tool in arguments.tools if tool != "ragassay"]
    if peers:
        python = peers_python(arguments.work)
        server = start_server(arguments.port)
        try:
            for tool in peers:
                results = run_peer(python, tool, f"http://127.0.0.1:{arguments.port}", items, arguments.work)
                scores = {key: row["score"] for key, row in results.items()}
                errors = sorted({row["error"].split(":")[0] for row in results.values() if row["error"]})
                seconds = sum(row["seconds"] for row in results.values())
                rows.append(summary(tool, scores, labels, THRESHOLD_SCORE, seconds, answers) | {"errors": errors})
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a server busy with a request does not stop on SIGTERM
                server.kill()
    print("\n| judge | balanced accuracy | Cohen's kappa (95% CI) | AUC | unreadable | s / answer |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        low, high = row["kappa_ci"]
        print(
            f"| {row['tool']} | {_f(row['balanced_accuracy'])} | {_f(row['kappa'])} ({_f(low)} to {_f(high)}) | "
            f"{_f(row['auc'])} | {row['unreadable']:.1%} | {row['seconds_per_answer']:.1f} |"
        )
        if row.get("errors"):
            print(f"  {row['tool']} failures: {', '.join(row['errors'])}")
    (arguments.work / "summary.json").write_text(json.dumps(rows, indent=1))


def _f(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    main()
