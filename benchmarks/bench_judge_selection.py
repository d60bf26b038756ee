"""Which passages a statement needs to be judged against (issue 35): the cost of a support verdict
on a CPU, and what choosing passages does to agreement with people, on MEMERAG-EXT's development
half only (the test half has been looked at three times and is not used here).

    .venv/bin/python benchmarks/bench_judge_selection.py measure --out /tmp/selection.json
    .venv/bin/python benchmarks/bench_judge_selection.py choose /tmp/selection.json
    .venv/bin/python benchmarks/bench_judge_selection.py after
    .venv/bin/python benchmarks/bench_judge_selection.py sample --home WORKSPACE

`measure` judges every sentence of the half against every retrieved passage alone, with the
question shown (`support-probability/4`, what shipped before issue 35), passage by passage as
Judge.support_by_passage asks them, and writes each call's P(supported), prompt tokens and
seconds with the statement's similarity to each passage (MiniLM cosine, and the lexical score of
judge/passage_choice.py). `choose` reads that file and replays selection rules on the measured
calls: for each rule, the passages it would ask, its P(supported) (the highest over them), AUC and
balanced accuracy at the judge's threshold with bootstrap 95% intervals, and the share of calls and
prompt tokens it would pay. `after` is the real, timed run of the rule adopted: calibrate_statements (what
`ragassay judge calibrate` runs) on the development half, in the same sitting as `measure`. `sample` times both ways on the sample corpus's
own statements, read from an answer batch (the README's main command leaves one).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from bench_judge_agreement import LABELS, ROWS, auc, question_of, split_questions

THRESHOLD = 0.85
BOOTSTRAP_REPLICATES = 2000
BOOTSTRAP_SEED = 2026


def measure(out: Path) -> None:
    from ragassay.judge.judge import Judge
    from ragassay.judge.passage_choice import lexical_similarity
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig
    from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, resolve_model

    rows = [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]
    chosen = set(split_questions(rows)["dev"])
    half = [row for row in rows if question_of(row["id"]) in chosen]
    sources = {f"memerag-ext-{row['query_id']}": row for row in map(json.loads, ROWS.read_text().splitlines())}
    by_question: dict[str, list[dict]] = {}
    for row in half:
        by_question.setdefault(question_of(row["id"]), []).append(row)
    embedder = Embedder(resolve_model(DEFAULT_MODEL_NAME, Path(tempfile.mkdtemp(prefix="ragassay-bench-models-"))))
    models = ChatModels()
    judge = Judge(models.get(ChatModelConfig(backend="qwen2.5-1.5b")))
    measured = []
    started = time.perf_counter()
    for question_id, group in by_question.items():
        question = sources[question_id]["query"]
        passages = [p["text"] for p in sources[question_id]["context"]]
        passage_vectors = embedder.embed(passages)
        calls: dict[str, list[dict]] = {row["id"]: [] for row in group}
        for number, passage in enumerate(passages):
            for row in group:
                began = time.perf_counter()
                result = judge.support(passage, row["statement"], question)
                calls[row["id"]].append(
                    {
                        "passage": number,
                        "p": None if result.value is None else result.value.p_supported,
                        "prompt_tokens": result.usage.prompt_tokens,
                        "seconds": time.perf_counter() - began,
                    }
                )
        for row in group:
            cosines = passage_vectors @ embedder.embed_query(row["statement"])
            lexical = lexical_similarity(row["statement"], passages)
            for call in calls[row["id"]]:
                call["cosine"] = float(cosines[call["passage"]])
                call["lexical"] = lexical[call["passage"]]
            measured.append({"id": row["id"], "label": row["label"], "calls": calls[row["id"]]})
        print(f"  {len(measured)}/{len(half)} sentences, {time.perf_counter() - started:.0f} s", flush=True)
    models.close()
    seconds = time.perf_counter() - started
    out.write_text(json.dumps({"seconds": seconds, "model": judge.model_id, "sentences": measured}, indent=1))
    print(f"{len(measured)} sentences in {seconds:.0f} s: {seconds / len(measured):.1f} s per sentence; {out}")


def after(out: Path | None = None) -> None:
    """The shipped path (calibrate_statements, Judge.support_by_passage) on the development half,
    timed: what a team's verdicts now cost, and their agreement with people. out: where to write
    each sentence's (id, label, P) with the judge and its threshold (bench_judge_heldout.py)."""
    from ragassay.judge.calibration.labelled_statements import LabelledStatement
    from ragassay.judge.calibration.support import calibrate_statements
    from ragassay.judge.judge import Judge
    from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION, passages_of
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig

    rows = [json.loads(line) for line in LABELS.read_text().splitlines() if line.strip()]
    chosen = set(split_questions(rows)["dev"])
    questions = {
        f"memerag-ext-{row['query_id']}": row["query"] for row in map(json.loads, ROWS.read_text().splitlines())
    }
    labelled = [
        LabelledStatement(
            row["id"], row["context"], row["statement"], row["label"] == "supported", questions[question_of(row["id"])]
        )
        for row in rows
        if question_of(row["id"]) in chosen
    ]
    models = ChatModels()
    judge = Judge(models.get(ChatModelConfig(backend="qwen2.5-1.5b")))
    judge.support(passages_of(labelled[0].context)[0], "warm-up")  # load the model outside the timing
    started = time.perf_counter()
    report = calibrate_statements(judge, labelled).model_dump()
    seconds = time.perf_counter() - started
    models.close()
    scored = [
        (row["label"] == "supported", row["p_supported"]) for row in report["rows"] if row["p_supported"] is not None
    ]
    ba_low, ba_high, auc_low, auc_high = bootstrap(scored)
    usage = report["usage"]
    print(
        f"{SUPPORT_PROMPT_VERSION}, threshold {report['support_threshold']}: {len(labelled)} sentences in {seconds:.0f} s, "
        f"{seconds / len(labelled):.1f} s per sentence, {usage['calls']} calls "
        f"({usage['calls'] / len(labelled):.2f} per sentence), {usage['prompt_tokens']} prompt tokens"
    )
    print(
        f"  AUC {auc(scored):.3f} ({auc_low:.3f}-{auc_high:.3f})  balanced accuracy {report['balanced_accuracy']:.3f} "
        f"({ba_low:.3f}-{ba_high:.3f})  kappa {report['kappa']:.3f}  unreadable {report['unreadable_rate']:.1%}"
    )
    print(f"  (label, verdict) counts, the prior: {json.dumps(report['confusion'])}")
    if out is not None:
        rows = [(row["source"], row["label"], row["p_supported"]) for row in report["rows"]]
        written = {"model": judge.model_id, "support_threshold": report["support_threshold"], "rows": rows}
        out.write_text(json.dumps(written, indent=1))


def sample(home: Path, label: str) -> None:
    """The sample corpus's own statements (faithfulness and context recall of one configuration of
    the newest answer batch in `home`, e.g. after the README's main command), judged twice by
    fresh judges without a completion cache: every passage (support-probability/4, asked as
    Judge.support_by_passage asked them, passage by passage) and the shipped rule."""
    import polars as pl

    from ragassay import tracking
    from ragassay.judge.judge import Judge
    from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION, passages_of
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig

    run = next(
        r
        for r in tracking.find_runs(home, role="configuration")
        if r.data.tags.get(tracking.TAG_KIND) == "answers" and r.data.tags.get(tracking.TAG_LABEL) == label
    )
    answers = tracking.download_table(home, run.info.run_id, "answers").select("query_id", "question")
    judged = (
        tracking.download_table(home, run.info.run_id, "judgments")
        .filter(pl.col("metric").is_in(["faithfulness", "context_recall"]))
        .join(answers, on="query_id")
    )
    groups: dict[tuple[str, str], list[str]] = {}
    for row in judged.iter_rows(named=True):
        statements = groups.setdefault((row["context"], row["question"]), [])
        if row["statement"] not in statements:
            statements.append(row["statement"])
    statements = sum(len(group) for group in groups.values())
    models = ChatModels()
    model = models.get(ChatModelConfig(backend="qwen2.5-1.5b"))
    Judge(model).support("warm-up passage", "warm-up")
    every, every_judge = {}, Judge(model)
    started = time.perf_counter()
    for (context, question), group in groups.items():
        passages = passages_of(context)
        for passage in passages:
            for statement in group:
                result = every_judge.support(passage, statement, question)
                p = result.value.p_supported if result.value else 0.0  # unreadable: none here so far
                every[(context, statement)] = max(every.get((context, statement), 0.0), p)
    every_seconds = time.perf_counter() - started
    chosen, chosen_judge = {}, Judge(model)
    started = time.perf_counter()
    for (context, question), group in groups.items():
        for statement, result in zip(group, chosen_judge.support_by_passage(passages_of(context), group, question)):
            chosen[(context, statement)] = result.value.p_supported if result.value else 0.0
    chosen_seconds = time.perf_counter() - started
    models.close()
    threshold = chosen_judge.support_threshold
    differ = sum((every[key] >= threshold) != (chosen[key] >= threshold) for key in every)
    print(
        f"sample corpus, configuration {label} of batch {run.data.tags[tracking.TAG_BATCH]}: {statements} statements "
        f"in {len(groups)} contexts"
    )
    print(
        f"  every passage (support-probability/4): {every_seconds:.0f} s, {every_seconds / statements:.2f} s per statement"
    )
    print(f"  {SUPPORT_PROMPT_VERSION}: {chosen_seconds:.0f} s, {chosen_seconds / statements:.2f} s per statement")
    print(f"  {every_seconds / chosen_seconds:.1f}x cheaper; verdicts that differ: {differ} of {statements}")


def choose(path: Path) -> None:
    from ragassay.metrics.agreement import agreement

    data = json.loads(path.read_text())
    sentences = data["sentences"]
    all_calls = sum(len(s["calls"]) for s in sentences)
    all_tokens = sum(c["prompt_tokens"] for s in sentences for c in s["calls"])
    print(
        f"{len(sentences)} sentences, {all_calls} calls, {data['seconds']:.0f} s measured "
        f"({data['seconds'] / len(sentences):.1f} s per sentence), threshold {THRESHOLD}"
    )
    for rule in RULES:
        picked = [rule(s["calls"]) for s in sentences]
        scored = [
            (s["label"] == "supported", None if any(c["p"] is None for c in calls) else max(c["p"] for c in calls))
            for s, calls in zip(sentences, picked)
        ]
        readable = [(label, p) for label, p in scored if p is not None]
        ba = agreement([label for label, _ in readable], [p >= THRESHOLD for _, p in readable]).balanced_accuracy
        ba_low, ba_high, auc_low, auc_high = bootstrap(readable)
        calls = sum(len(c) for c in picked)
        tokens = sum(c["prompt_tokens"] for calls_ in picked for c in calls_)
        print(
            f"{rule.__doc__:<58} AUC {auc(readable):.3f} ({auc_low:.3f}-{auc_high:.3f})  "
            f"BA {ba:.3f} ({ba_low:.3f}-{ba_high:.3f})  calls {calls / all_calls:.2f}  tokens {tokens / all_tokens:.2f}"
        )


def _ranked(calls: list[dict], key: str) -> list[dict]:
    return sorted(calls, key=lambda c: (-c[key], c["passage"]))


def _sequential(calls: list[dict], key: str, limit: int) -> list[dict]:
    """Most similar first; stop at the first supported verdict, or after `limit` passages."""
    asked = []
    for call in _ranked(calls, key)[:limit]:
        asked.append(call)
        if call["p"] is None or call["p"] >= THRESHOLD:
            break
    return asked


def every_passage(calls):
    """every passage (support-probability/4)"""
    return calls


def _rule(doc: str, function):
    function.__doc__ = doc
    return function


RULES = [
    every_passage,
    *(
        _rule(f"top {k} by {key}", lambda calls, key=key, k=k: _ranked(calls, key)[:k])
        for key in ("cosine", "lexical")
        for k in (1, 2, 3)
    ),
    *(
        _rule(f"by {key}, stop when supported, at most {k}", lambda calls, key=key, k=k: _sequential(calls, key, k))
        for key in ("cosine", "lexical")
        for k in (2, 3, 5)
    ),
    *(
        _rule(
            f"by lexical, stop when supported, at most {k}, at least {share} of the first's similarity",
            lambda calls, k=k, share=share: _sequential(
                [c for c in calls if c["lexical"] >= share * max(x["lexical"] for x in calls)], "lexical", k
            ),
        )
        for k in (2, 3, 5)
        for share in (0.5, 0.8)
    ),
]


def bootstrap(scored: list[tuple[bool, float]]) -> tuple[float, float, float, float]:
    """95% percentile intervals of balanced accuracy and AUC over sentences resampled with replacement."""
    from ragassay.metrics.agreement import agreement

    generator = random.Random(BOOTSTRAP_SEED)
    bas, aucs = [], []
    for _ in range(BOOTSTRAP_REPLICATES):
        sample = [scored[generator.randrange(len(scored))] for _ in scored]
        if len({label for label, _ in sample}) < 2:
            continue
        bas.append(agreement([label for label, _ in sample], [p >= THRESHOLD for _, p in sample]).balanced_accuracy)
        aucs.append(auc(sample))
    bas.sort()
    aucs.sort()

    def interval(values):
        return values[int(0.025 * len(values))], values[int(0.975 * len(values)) - 1]

    return (*interval(bas), *interval(aucs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    measuring = commands.add_parser("measure")
    measuring.add_argument("--out", type=Path, required=True)
    choosing = commands.add_parser("choose")
    choosing.add_argument("path", type=Path)
    after_parser = commands.add_parser("after")
    after_parser.add_argument("--out", type=Path, help="write each sentence's (id, label, P) here")
    on_sample = commands.add_parser("sample")
    on_sample.add_argument("--home", type=Path, required=True, help="a workspace holding an answer batch")
    on_sample.add_argument("--label", default="hybrid")
    arguments = parser.parse_args()
    if arguments.command == "measure":
        measure(arguments.out)
    elif arguments.command == "choose":
        choose(arguments.path)
    elif arguments.command == "sample":
        sample(arguments.home, arguments.label)
    else:
        after(arguments.out)


if __name__ == "__main__":
    main()
