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
    arguments = parser.parse_args()
    if arguments.sweep and arguments.half != "dev":
        parser.error("--sweep chooses a threshold: only on the development half")

    from ragassay.judge.calibration import calibrate_judge
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig
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
    reports = {}
    with tempfile.TemporaryDirectory(prefix="ragassay-bench-judge-") as workdir:
        labels = Path(workdir) / f"memerag-{arguments.half}.jsonl"
        labels.write_text("".join(json.dumps(row) + "\n" for row in half_rows))
        for name in arguments.model or ["qwen2.5-1.5b"]:
            config = (
                ChatModelConfig(backend="gguf", path=Path(name))
                if name.endswith(".gguf")
                else ChatModelConfig(backend=name)
            )
            models = ChatModels()
            report = calibrate_judge(models, config, labels)
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
