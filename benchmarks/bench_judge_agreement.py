"""How far the judge agrees with people on MEMERAG-EXT (human labels of real RAG answers that nobody
on the team wrote), on a seeded split by question: the development half (where prompts, strategy
and the support threshold were chosen) or the test half (reported once).

    .venv/bin/python benchmarks/bench_judge_agreement.py --half dev  [--model qwen2.5-1.5b] [--model smollm2]
    .venv/bin/python benchmarks/bench_judge_agreement.py --half test --model qwen2.5-1.5b --model smollm2

Reads ../shared/datasets/memerag-ext-en/labelled_statements.jsonl (CC BY-NC 4.0; never copied into
the project). The split puts each question's sentences in one half; benchmarks/memerag_split.json
lists the question ids of each half. Each model runs `calibrate_judge`, exactly what
`ragassay judge calibrate` runs, and prints balanced accuracy, kappa with its bootstrap 95%
interval, per-class recall, unreadable rate and seconds per verdict; with --sweep it also prints
balanced accuracy and kappa at other support thresholds (development half only: the threshold is
chosen there).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LABELS = REPO.parent / "shared" / "datasets" / "memerag-ext-en" / "labelled_statements.jsonl"
ROWS = LABELS.with_name("rows.jsonl")
# How a sentence is put to the judge (issue 26 tried the last three on the development half):
# the whole context as one prompt (shipped before), the same with the answer's question shown,
# one verdict per retrieved passage aggregated by the maximum (as MiniCheck and AlignScore chunk
# long contexts), and both.
STRATEGIES = ("whole", "question", "passages", "question+passages")
SPLIT_FILE = Path(__file__).with_name("memerag_split.json")
SPLIT_SEED = 2026


def question_of(row_id: str) -> str:
    """memerag-ext-3351-0 (question 3351, sentence 0) -> memerag-ext-3351."""
    return row_id.rsplit("-", 1)[0]


def split_questions(rows: list[dict]) -> dict[str, list[str]]:
    """Question ids shuffled with SPLIT_SEED; the first half (rounded down) is development."""
    questions = sorted({question_of(row["id"]) for row in rows})
    random.Random(SPLIT_SEED).shuffle(questions)
    middle = len(questions) // 2
    return {"dev": sorted(questions[:middle]), "test": sorted(questions[middle:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=("dev", "test"), required=True)
    parser.add_argument(
        "--model", action="append", help="smollm2, qwen2.5-1.5b or a .gguf path (repeatable; default qwen2.5-1.5b)"
    )
    parser.add_argument("--sweep", action="store_true", help="also print agreement at other thresholds (dev half only)")
    parser.add_argument("--out", type=Path, help="write each model's report (with every row) as JSON here")
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        help="try a way of putting the sentence to the judge (development half only; prints AUC and a sweep)",
    )
    arguments = parser.parse_args()
    if (arguments.sweep or arguments.strategy) and arguments.half != "dev":
        parser.error("--sweep and --strategy choose how to judge: only on the development half")

    from ragassay.judge.calibration.calibrate import calibrate_judge
    from ragassay.llm.registry import ChatModels
    from ragassay.metrics.agreement import agreement

    rows = [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]
    split = split_questions(rows)
    SPLIT_FILE.write_text(
        json.dumps({"source": "memerag-ext-en/labelled_statements.jsonl", "seed": SPLIT_SEED, **split}, indent=1) + "\n"
    )
    chosen = set(split[arguments.half])
    half_rows = [row for row in rows if question_of(row["id"]) in chosen]
    print(
        f"MEMERAG-EXT {arguments.half} half: {len(chosen)} questions, {len(half_rows)} sentences "
        f"({sum(r['label'] == 'unsupported' for r in half_rows)} unsupported); split in {SPLIT_FILE.name}"
    )
    if arguments.strategy:
        for name in arguments.model or ["qwen2.5-1.5b"]:
            try_strategy(_config(name), half_rows, arguments.strategy)
        return
    reports = {}
    with tempfile.TemporaryDirectory(prefix="ragassay-bench-judge-") as workdir:
        labels = Path(workdir) / f"memerag-{arguments.half}.jsonl"
        labels.write_text("".join(json.dumps(row) + "\n" for row in half_rows))
        for name in arguments.model or ["qwen2.5-1.5b"]:
            config = _config(name)
            models = ChatModels()
            report = calibrate_judge(models, config, labels).model_dump()
            models.close()
            reports[name] = report
            print(f"\n{report['judge_model']} ({report['prompt_version']}, threshold {report['support_threshold']}):")
            print(
                f"  balanced accuracy {_f(report['balanced_accuracy'])}  kappa {_f(report['kappa'])} "
                f"(95% CI {_f(report['kappa_ci_low'])} to {_f(report['kappa_ci_high'])})  accuracy {_f(report['accuracy'])}"
            )
            print(
                f"  recall supported {_f(report['recall_supported'])}  recall unsupported {_f(report['recall_unsupported'])}  "
                f"unreadable {report['unreadable_rate']:.1%}  too long {report['too_long']}  {_f(report['seconds_per_verdict'], 1)} s/verdict"
            )
            if arguments.sweep:
                scored = [
                    (row["label"] == "supported", row["p_supported"])
                    for row in report["rows"]
                    if row["p_supported"] is not None
                ]
                print(
                    f"    AUC {_f(auc(scored))} (threshold-free: P(a supported sentence scores above an unsupported one))"
                )
                for threshold in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.92, 0.95):
                    result = agreement([label for label, _ in scored], [p >= threshold for _, p in scored])
                    print(
                        f"    threshold {threshold:.2f}: balanced accuracy {_f(result.balanced_accuracy)}  kappa {_f(result.kappa)}"
                    )
    if arguments.out:
        arguments.out.write_text(json.dumps(reports, indent=1))


def _config(name: str):
    from ragassay.llm.settings import ChatModelConfig

    return ChatModelConfig(backend="gguf", path=Path(name)) if name.endswith(".gguf") else ChatModelConfig(backend=name)


def try_strategy(config, half_rows: list[dict], strategy: str) -> None:
    """P(supported) of every sentence of the half under one strategy: AUC, balanced accuracy and
    kappa at a sweep of thresholds, seconds per sentence. Sentences are judged question by
    question and, per passage, passage by passage, so consecutive prompts share their prefix."""
    import time

    from ragassay.judge.judge import Judge
    from ragassay.llm.registry import ChatModels
    from ragassay.metrics.agreement import agreement

    questions = {f"memerag-ext-{row['query_id']}": row for row in map(json.loads, ROWS.read_text().splitlines())}
    models = ChatModels()
    judge = Judge(models.get(config))
    by_question: dict[str, list[dict]] = {}
    for row in half_rows:
        by_question.setdefault(question_of(row["id"]), []).append(row)
    p_supported: dict[str, float | None] = {}
    started = time.perf_counter()
    for question_id, rows in by_question.items():
        source = questions[question_id]
        question = source["query"] if "question" in strategy else None
        passages = [p["text"] for p in source["context"]] if "passages" in strategy else [rows[0]["context"]]
        best: dict[str, float | None] = {row["id"]: 0.0 for row in rows}
        for passage in passages:
            for row in rows:
                result = judge.support(passage, row["statement"], question)
                if result.value is None or best[row["id"]] is None:
                    best[row["id"]] = None
                else:
                    best[row["id"]] = max(best[row["id"]], result.value.p_supported)
        p_supported.update(best)
        print(f"  {len(p_supported)}/{len(half_rows)} sentences", flush=True)
    seconds = time.perf_counter() - started
    models.close()
    scored = [
        (row["label"] == "supported", p_supported[row["id"]]) for row in half_rows if p_supported[row["id"]] is not None
    ]
    print(
        f"\n{judge.model_id}, strategy {strategy}: {len(scored)} of {len(half_rows)} readable, {seconds / len(half_rows):.1f} s per sentence"
    )
    print(f"  AUC {_f(auc(scored))}")
    for threshold in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.92, 0.95, 0.97, 0.98, 0.99):
        result = agreement([label for label, _ in scored], [p >= threshold for _, p in scored])
        print(
            f"  threshold {threshold:.2f}: balanced accuracy {_f(result.balanced_accuracy)}  kappa {_f(result.kappa)}"
        )
    print("  p_supported: " + json.dumps(p_supported))


def auc(scored: list[tuple[bool, float]]) -> float | None:
    """The probability that a supported sentence gets a higher P(supported) than an unsupported
    one, ties counted half (the area under the ROC curve)."""
    positives = [p for label, p in scored if label]
    negatives = [p for label, p in scored if not label]
    if not positives or not negatives:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def _f(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    main()
