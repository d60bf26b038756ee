"""Answer evaluation cost: seconds and model calls per question for each configuration, the share
of time spent outside the model, and how close `--estimate` came.

    .venv/bin/python benchmarks/bench_answer_eval.py [--max-questions 30]

Runs the answer-evaluation flow with SmolLM2 (answers and judge) on a fresh copy of the sample
corpus: its golden questions and its five unanswerable ones, under two configurations (fulltext
and hybrid retrieval), with the pairwise comparison.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import scratch_workspace

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-questions", type=int, default=30)
    arguments = parser.parse_args()
    from flows.eval_answers import eval_answers_flow
    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay import tracking
    from ragassay.config import AnswerEvalConfig, IndexConfig, IngestConfig
    from ragassay.config_errors import parse_config
    from ragassay.evaluation.estimate import estimate_answer_eval
    from ragassay.golden.store import add_from_file
    from ragassay.llm.settings import ChatModelConfig
    from tasks.resources import worker_resources

    with scratch_workspace("ragassay-bench-answers-") as workdir:
        home = workdir / "home"
        ingest_flow(IngestConfig(collection="sample", paths=(SAMPLE / "corpus",), home=home))
        index_flow(IndexConfig(collection="sample", home=home))
        add_from_file(home, "sample", SAMPLE / "golden.jsonl")
        config = parse_config(
            AnswerEvalConfig,
            collections=["sample"],
            home=home,
            unanswerable=SAMPLE / "unanswerable.jsonl",
            max_questions=arguments.max_questions,
            configurations=[
                {"label": "fulltext", "search_type": "fulltext"},
                {"label": "hybrid", "search_type": "hybrid"},
            ],
        )
        estimate = estimate_answer_eval(config)
        worker_resources().chat_models.get(ChatModelConfig())  # loading the model is not evaluation time
        report = eval_answers_flow(config)
        answers = {label: tracking.download_table(home, run_id, "answers") for label, run_id in report.run_ids.items()}
    questions = report.questions + report.unanswerable
    in_model = sum(m["answer_model_seconds"] + m["judge_seconds"] for m in report.metrics.values())
    in_model += sum(p.judge_seconds for p in report.pairwise)
    print(
        f"answer evaluation (SmolLM2 answers and judge): {report.questions} golden + {report.unanswerable} unanswerable questions, "
        f"2 configurations, {report.seconds:.1f}s in all"
    )
    for label, m in report.metrics.items():
        answered = answers[label].filter(outcome="answered", answerable=True)
        print(
            f"  {label:<9} {(m['answer_seconds'] + m['judge_seconds']) / questions:.2f} s/question "
            f"(answering {m['answer_seconds'] / questions:.2f}, judging {m['judge_seconds'] / questions:.2f}); "
            f"model calls/question: answer {m['answer_model_calls'] / questions:.2f}, judge {m['judge_calls'] / questions:.2f}; "
            f"answered golden questions average {answered['statements'].mean() or 0:.2f} statements and {answered['citations'].mean() or 0:.2f} citations"
        )
    for p in report.pairwise:
        print(
            f"  pairwise {p.configuration_a} vs {p.configuration_b}: {p.judge_calls} judge calls, {p.judge_seconds:.1f}s"
        )
    print(f"time outside the model: {1 - in_model / report.seconds:.1%}")
    for label, m in report.metrics.items():
        scores = ", ".join(
            f"{name} {m[name]:.3f} ({m[f'{name}_scored']:.0f})" if name in m else f"{name} - (0)"
            for name in ("faithfulness", "context_recall", "answer_relevancy", "citation_precision")
        )
        print(
            f"  {label:<9} {scores}; refusal recall {m['refusal_recall']:.2f}, false-refusal rate {m['false_refusal_rate']:.2f}"
        )
    for p in report.pairwise:
        print(
            f"  pairwise: {p.wins_a} / {p.ties} / {p.wins_b} wins-ties-losses, {p.inconsistent} inconsistent "
            f"(share {p.inconsistent_share:.2f}), {p.unreadable} unreadable"
        )
    print(f"{len(report.warnings)} warnings")
    actual = sum(m["answer_model_calls"] + m["judge_calls"] for m in report.metrics.values()) + sum(
        p.judge_calls for p in report.pairwise
    )
    print(
        f"--estimate said {estimate.total_calls} model calls and {estimate.total_seconds}s ({estimate.judge_rate_basis}); "
        f"measured {actual} calls and {in_model:.1f}s in the model"
    )


if __name__ == "__main__":
    main()
