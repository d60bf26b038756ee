"""Judge-corrected faithfulness on answers nobody here wrote: MEMERAG-EXT's human labels of every
sentence of real RAG answers, split by question into a development half (its labels are the
correction's, and the bundled prior's) and a test half (scored by the judge, compared with what
people said).

    .venv/bin/python benchmarks/bench_judge_correction.py [--work DIR] [--model qwen2.5-1.5b]
    .venv/bin/python benchmarks/bench_judge_correction.py --labels OTHER.jsonl --rows OTHER_ROWS.jsonl

For each half, each labelled sentence is judged exactly as answer evaluation judges a statement
(`calibrate_statements`: against each passage with the question, the highest P(supported)); the
judge's calls are remembered in a completion cache under --work, so a second run reads them back
instead of asking again. Printed:
- the development half's agreement and its (label, verdict) counts: the prior's
  (ragassay/judge/calibration/measured_rates.py holds the same counts for the shipped judge; until 2026-12-05
  they were the bundled prior that corrected collections without labels);
- on the test half, per answer: faithfulness = supported sentences / labelled sentences, people's
  and the judge's; their means over the answers (the human rate, the raw judge estimate with its
  bootstrap 95% interval over answers) and the judge-corrected estimate with its 95% interval
  over answers and the development labels (metrics/judge_error.corrected_mean);
- goal: the human rate inside the corrected interval, and |corrected - human| at most half of
  |raw - human|.

Another dataset in the same shape (labelled statements with `id` = QUESTION-SENTENCE, `context`,
`statement`, `label`; rows with `query_id`, `query`) is split the same seeded way by question.
Reads ../shared/datasets/memerag-ext-en (CC BY-NC 4.0; never copied into the project).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "datasets" / "memerag-ext-en"
SPLIT_FILE = Path(__file__).with_name("memerag_split.json")
SPLIT_SEED = 2026


def question_of(row_id: str) -> str:
    """memerag-ext-3351-0 (question 3351, sentence 0) -> memerag-ext-3351."""
    return row_id.rsplit("-", 1)[0]


def halves(rows: list[dict], labels_path: Path) -> dict[str, set[str]]:
    """MEMERAG-EXT's stored split (benchmarks/memerag_split.json); another dataset's questions
    shuffled with SPLIT_SEED, the first half development."""
    if labels_path.resolve() == (DATA / "labelled_statements.jsonl").resolve():
        split = json.loads(SPLIT_FILE.read_text())
        return {"dev": set(split["dev"]), "test": set(split["test"])}
    questions = sorted({question_of(row["id"]) for row in rows})
    random.Random(SPLIT_SEED).shuffle(questions)
    middle = len(questions) // 2
    return {"dev": set(questions[:middle]), "test": set(questions[middle:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=Path, default=DATA / "labelled_statements.jsonl")
    parser.add_argument("--rows", type=Path, default=DATA / "rows.jsonl", help="the questions of the answers")
    parser.add_argument("--model", default="qwen2.5-1.5b", help="a catalog name or a .gguf path")
    parser.add_argument("--work", type=Path, help="folder of the completion cache (default: a temporary one)")
    parser.add_argument("--out", type=Path, help="write both halves' reports (every row) as JSON here")
    arguments = parser.parse_args()

    from ragassay.judge.calibration.labelled_statements import LabelledStatement
    from ragassay.judge.calibration.support import calibrate_statements
    from ragassay.judge.judge import Judge
    from ragassay.llm.cache import CompletionCache
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig
    from ragassay.metrics.averaging import mean_interval
    from ragassay.metrics.judge_error import corrected_mean, error_rates, simple_strata

    rows = [json.loads(line) for line in arguments.labels.read_text().splitlines() if line.strip()]
    questions = {
        f"memerag-ext-{row['query_id']}" if isinstance(row["query_id"], int) else str(row["query_id"]): row["query"]
        for row in map(json.loads, arguments.rows.read_text().splitlines())
    }
    split = halves(rows, arguments.labels)
    config = (
        ChatModelConfig(backend="gguf", path=Path(arguments.model))
        if arguments.model.endswith(".gguf")
        else ChatModelConfig(backend=arguments.model)
    )
    with tempfile.TemporaryDirectory(prefix="ragassay-bench-correction-") as temporary:
        work = arguments.work or Path(temporary)
        models = ChatModels()
        judge = Judge(models.get(config, CompletionCache(work / "completions.sqlite")))
        reports = {}
        for half in ("dev", "test"):
            labelled = [
                LabelledStatement(
                    row["id"],
                    row["context"],
                    row["statement"],
                    row["label"] == "supported",
                    row.get("question") or questions.get(question_of(row["id"])),
                )
                for row in rows
                if question_of(row["id"]) in split[half]
            ]
            reports[half] = calibrate_statements(judge, labelled).model_dump()
        models.close()
    if arguments.out:
        arguments.out.write_text(json.dumps(reports, indent=1))

    dev, test = reports["dev"], reports["test"]
    confusion = dev["confusion"]
    print(f"judge {dev['judge_model']} ({dev['prompt_version']}, threshold {dev['support_threshold']})")
    for half, report in reports.items():
        print(
            f"{half} half: {report['labelled']} sentences, balanced accuracy {_f(report['balanced_accuracy'])}, "
            f"kappa {_f(report['kappa'])} [{_f(report['kappa_ci_low'])}, {_f(report['kappa_ci_high'])}], "
            f"unreadable {report['unreadable_rate']:.1%}, {_f(report['seconds_per_verdict'], 1)} s per sentence"
        )
    print(f"development counts (the prior): {json.dumps(confusion)}")

    labels = [row["label"] == "supported" for row in dev["rows"] if row["verdict"] in ("supported", "unsupported")]
    verdicts = [row["verdict"] == "supported" for row in dev["rows"] if row["verdict"] in ("supported", "unsupported")]
    strata = simple_strata(labels, verdicts, "development half")
    rates = error_rates(strata)
    print(
        f"development error rates: sensitivity {_f(rates.sensitivity)} [{_f(rates.sensitivity_low)}, "
        f"{_f(rates.sensitivity_high)}], specificity {_f(rates.specificity)} [{_f(rates.specificity_low)}, "
        f"{_f(rates.specificity_high)}], balanced accuracy {_f(rates.balanced_accuracy)} "
        f"[{_f(rates.balanced_accuracy_low)}, {_f(rates.balanced_accuracy_high)}]"
    )

    per_answer: dict[str, dict[str, list[bool]]] = {}
    unreadable = 0
    for row in test["rows"]:
        if row["verdict"] not in ("supported", "unsupported"):
            unreadable += 1
            continue
        answer = per_answer.setdefault(question_of(row["source"]), {"human": [], "judge": []})
        answer["human"].append(row["label"] == "supported")
        answer["judge"].append(row["verdict"] == "supported")
    human = [sum(a["human"]) / len(a["human"]) for a in per_answer.values()]
    raw = [sum(a["judge"]) / len(a["judge"]) for a in per_answer.values()]
    human_rate, raw_rate = sum(human) / len(human), sum(raw) / len(raw)
    raw_low, raw_high = mean_interval(raw)
    corrected = corrected_mean(raw, strata)
    print(
        f"\ntest half: {len(per_answer)} answers ({unreadable} unreadable sentences left out); faithfulness per "
        "answer = supported sentences / labelled sentences, mean over answers"
    )
    print(f"  people:          {human_rate:.3f}")
    print(f"  judge, raw:      {raw_rate:.3f} [{raw_low:.3f}, {raw_high:.3f}]  error {raw_rate - human_rate:+.3f}")
    if corrected.estimate is None:
        print("  judge-corrected: none (the labels do not show the judge separating the classes) [0, 1]")
        return
    inside = corrected.low <= human_rate <= corrected.high
    ratio = abs(corrected.estimate - human_rate) / abs(raw_rate - human_rate) if raw_rate != human_rate else None
    print(
        f"  judge-corrected: {corrected.estimate:.3f} [{corrected.low:.3f}, {corrected.high:.3f}]  "
        f"error {corrected.estimate - human_rate:+.3f}"
    )
    print(
        f"  people's rate inside the corrected interval: {'yes' if inside else 'NO'}; corrected error / raw error "
        f"{_f(ratio)} (goal: inside, and at most 0.5)"
    )
    print(f"  raw interval covers people's rate: {'yes' if raw_low <= human_rate <= raw_high else 'no'}")


def _f(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


if __name__ == "__main__":
    main()
