"""What logging each answered question as an MLflow trace costs, against the answer stage's own
time: 300 questions shaped like the sample corpus's answers (5 retrieved passages of ~700
characters, 1-3 statements, their faithfulness, citation and context-recall verdicts, every
metric's score as an assessment) logged into a fresh local store, as `eval answers` logs them.

The answer stage's time per question is the fastest one measured (SmolLM2 answering and judging,
8.66 s a question and configuration: BENCHMARKS.md, "Answer evaluation"); the default judge is
several times slower, which makes the share smaller. Goal: traces under 10% of the answer stage.

    .venv/bin/python benchmarks/bench_traces.py [--questions 300] [--answer-seconds 8.66]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from ragassay import tracking
from ragassay.answer.grounding import AnsweredStatement, Citation, GroundedAnswer, Source
from ragassay.evaluation.answer_summary import AnsweredQuestion
from ragassay.evaluation.answer_traces import TraceSettings, answer_traces
from ragassay.evaluation.questions import EvalQuestion
from ragassay.llm.structured import Usage
from ragassay.metrics.answer_metric import AnswerJudgement
from ragassay.metrics.answer_metrics.answer_correctness import answer_correctness
from ragassay.metrics.answer_metrics.answer_relevancy import answer_relevancy
from ragassay.metrics.answer_metrics.citation_precision import citation_precision
from ragassay.metrics.answer_metrics.context_recall import context_recall
from ragassay.metrics.answer_metrics.faithfulness import faithfulness
from ragassay.metrics.answer_metrics.mean_support import mean_support
from ragassay.metrics.answers import Scored

WORDS = [
    "hive",
    "smoke",
    "queen",
    "frame",
    "brood",
    "honey",
    "wax",
    "comb",
    "colony",
    "inspection",
    "apiary",
    "nectar",
    "pollen",
    "mite",
]


def _text(rng: random.Random, characters: int) -> str:
    words = []
    while sum(len(w) + 1 for w in words) < characters:
        words.append(rng.choice(WORDS))
    return " ".join(words).capitalize() + "."


def question(rng: random.Random, number: int) -> tuple[AnsweredQuestion, AnswerJudgement]:
    """One answered question and its judgement, shaped like the sample corpus's."""
    sources = [Source(n, "sample", f"doc{n}.md", f"doc{n}.md#{n}", 0, 700, None, _text(rng, 700)) for n in range(1, 6)]
    statements = [
        AnsweredStatement(_text(rng, 90), [Citation(n, f"doc{n}.md", f"doc{n}.md#{n}", 0, 90, "")])
        for n in rng.sample(range(1, 6), rng.randint(1, 3))
    ]
    answer = GroundedAnswer(f"Question {number}?", "answered", "answered", statements, sources)
    eval_question = EvalQuestion("sample", f"q{number}", answer.question, {("sample", "doc1.md"): 1}, _text(rng, 120))
    verdicts, flags = [], []
    for metric in ("faithfulness", "citation_precision"):
        for index, statement in enumerate(statements):
            supported = rng.random() < 0.8
            flags.append(supported)
            verdicts.append(
                {
                    "metric": metric,
                    "statement_index": index,
                    "statement": statement.text,
                    "source_number": statement.citations[0].number if metric == "citation_precision" else None,
                    "verdict": "supported" if supported else "unsupported",
                    "p_supported": rng.random(),
                    "error": None,
                }
            )
    relevancy = answer_relevancy(0.8, False)
    judgement = AnswerJudgement(
        {
            "faithfulness": faithfulness(flags[: len(statements)]),
            "context_recall": context_recall([True, False]),
            "citation_precision": citation_precision(flags[len(statements) :]),
            "answer_relevancy": Scored(relevancy.value, None, 1, answer.question),
            "mean_support": mean_support([0.9] * len(statements)),
            "answer_correctness": answer_correctness(rng.random(), 0.5),
        },
        verdicts,
    )
    usage = Usage(calls=1, prompt_tokens=1570, completion_tokens=90)
    return AnsweredQuestion(eval_question, True, answer, usage, 4.8), judgement


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--answer-seconds", type=float, default=8.66, help="the answer stage's seconds a question")
    arguments = parser.parse_args()
    rng = random.Random(0)
    made = [question(rng, number) for number in range(arguments.questions)]
    answered = [item for item, _ in made]
    judgements = {item.key: judgement for item, judgement in made}
    settings = TraceSettings("hybrid", "bench", "smollm2:x", "smollm2:x", 0.5, "support-probability/3")
    with tempfile.TemporaryDirectory(prefix="bench-traces-") as folder:
        home = Path(folder) / "workspace"
        mlflow_client = tracking.client(home)
        experiment_id = tracking.ensure_experiment(mlflow_client, home, ["sample"])
        run_id = mlflow_client.create_run(experiment_id, run_name="answers/hybrid").info.run_id
        started = time.perf_counter()
        traces = answer_traces(answered, judgements, {}, settings)
        built = time.perf_counter() - started
        tracking.log_traces(home, experiment_id, run_id, traces)
        seconds = time.perf_counter() - started
        found = len(tracking.find_traces(home, run_id))
    stage = arguments.answer_seconds * arguments.questions
    print(f"{arguments.questions} questions: traces built in {built:.2f} s, built and logged in {seconds:.1f} s")
    print(f"{seconds / arguments.questions * 1000:.0f} ms a question; {found} traces found by run")
    print(
        f"answer stage at {arguments.answer_seconds} s a question: {stage:.0f} s; "
        f"traces add {seconds / stage:.1%} (goal < 10%)"
    )


if __name__ == "__main__":
    main()
