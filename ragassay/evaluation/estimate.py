"""`ragassay eval answers --estimate`: model calls, tokens and time of an answer evaluation, before
anything runs. Reads the golden sets and the unanswerable file; loads no model.

Calls are counted from the evaluation's shape, with the work each question causes:
- answering: one call per question (a question declined before the model costs none; a retry
  after unreadable output costs one more), plus rerank_candidates calls per question when the
  configuration reranks with the model, and one per dialogue follow-up it rewrites
  (`followup_query: rewrite`); a dialogue's turns count as questions (its unanswerable turns as
  unanswerable ones);
- judging, per answerable question: a support verdict's calls per reference-answer sentence
  (context recall) and per statement of an answered question (faithfulness), and per citation (at
  most one: citation precision), as judge/support_rules.support_calls says for the judge (one for the default
  judge, whose learned verdict reads its odds against the most similar passage; none for a
  learned verdict that reads no judge output, unless --judge-odds asks for its P; for another
  judge its own rule's passages, ~1.4), one for the implied question (answer relevancy) and, when it has a
  reference answer, one grading (answer correctness). Sources: the configuration's `k`; a system
  under test's TYPICAL_SOURCES;
- pairwise: two gradings per answerable question and pair of configurations, none expected for a
  question with a reference answer (answer correctness graded both answers already; at most
  counts them all).
"expected" assumes every answerable question is answered, with the statements and citations an
answer typically has; "at most" uses the limits of the answer schema (6 statements, 4 citations
each) and one retry for every call.

Seconds and tokens per call come from the newest answer evaluation in this workspace that used
the same model (over all its configurations), else from the figures of the named models (SmolLM2, Qwen2.5 1.5B) measured on the
2-core reference machine (BENCHMARKS.md), else they are unknown and only calls are estimated. An
answer call's rate is scaled from the passages it was measured with to the configuration's k
(at_sources): reading the passages is most of an answer's time.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from ragassay import tracking
from ragassay.config import AnswerEvalConfig
from ragassay.evaluation.questions import gather_golden_questions, gather_unanswerable
from ragassay.judge.support_rules import support_calls
from ragassay.llm.settings import ChatModelConfig, model_id_of
from ragassay.llm.threads import default_threads
from ragassay.metrics.answers import split_statements
from ragassay.metrics.declared import DECLARED_METRICS
from ragassay.systems.settings import SystemConfiguration

# Statements and citations of an answered question, measured on the sample corpus with SmolLM2
# (benchmarks/bench_answer_eval.py, BENCHMARKS.md). The expected count assumes every answerable
# question is answered; refusals make the real count smaller.
TYPICAL_STATEMENTS = 1.0
TYPICAL_CITATIONS = 1.0
# The passages a system under test returns, when nothing says how many (built-in: its k).
TYPICAL_SOURCES = 5
MAX_STATEMENTS, MAX_CITATIONS_PER_STATEMENT = 6, 4


@dataclass(frozen=True)
class CallRate:
    """Seconds and tokens (prompt + completion) of one call, where the figures come from, and for
    an answer call the passages its prompt held where it was measured (k; None: not known)."""

    seconds: float
    tokens: float
    basis: str
    sources: float | None = None


# Tokens of an answer call that do not grow with its passages: the instruction with its two examples,
# the question and the answer written; and of those, the instruction and examples llama.cpp keeps
# from the previous answer call (read once, counted in every call's prompt tokens). Measured on the
# sample's demo questions with Qwen2.5 1.5B, 2026-12-06: 1,507 tokens a call at k 5, 1,023 at k 3.
ANSWER_FIXED_TOKENS = 305
ANSWER_KEPT_TOKENS = 205


def at_sources(rate: CallRate | None, sources: int) -> CallRate | None:
    """An answer call's rate with `sources` passages in its prompt, from one measured with
    rate.sources of them: tokens t' = F + sources * (t - F) / rate.sources, and seconds
    s' = s * (t' - K) / (t - K) (F: ANSWER_FIXED_TOKENS, what does not grow with the passages; K:
    ANSWER_KEPT_TOKENS, what an in-process model does not read again; reading the prompt is most of
    an answer call's time). Unchanged where the measured passages are not known."""
    if rate is None or not rate.sources or rate.sources == sources:
        return rate
    per_source = max(rate.tokens - ANSWER_FIXED_TOKENS, 0.0) / rate.sources
    tokens = ANSWER_FIXED_TOKENS + sources * per_source
    seconds = rate.seconds * max(tokens - ANSWER_KEPT_TOKENS, 1.0) / max(rate.tokens - ANSWER_KEPT_TOKENS, 1.0)
    return CallRate(seconds, tokens, f"{rate.basis}, scaled to {sources} passages", sources)


# Named models on the 2-core reference machine (BENCHMARKS.md). SmolLM2: an answer call reads
# ~1,500 prompt tokens and writes ~90; a judge call reads ~1,000 (part of it a prefix cached from
# the previous call on the same answer) and writes ~10. Qwen2.5 1.5B (benchmarks/bench_judge_speed.py):
# prompts at 101 tokens/s and generation at 31 tokens/s on 2 idle threads, so an answer (1,570 +
# 90 tokens) takes ~18.4 s; a support verdict generates nothing, costs 10.7 s for the first
# statement of a ~1,000-token context and 0.5 s for each later one, and with the citation and
# implied-question calls of an answer a judge call averages ~3.5 s. Measured again with one call
# per statement and passage (support-probability/4; the sample pipeline, 2026-12-02): 104 judge
# calls, 3.4 s and 480 tokens each (a passage alone is shorter than the whole context).
_REFERENCE = "figures measured on the 2-core reference machine"
REFERENCE_RATES = {
    "smollm2": {
        "answer": CallRate(4.5, 1570, f"SmolLM2 {_REFERENCE}", sources=5),
        "judge": CallRate(1.7, 1030, f"SmolLM2 {_REFERENCE}"),
    },
    "qwen2.5-1.5b": {
        "answer": CallRate(18.4, 1660, f"Qwen2.5 1.5B {_REFERENCE}", sources=5),
        "judge": CallRate(3.5, 480, f"Qwen2.5 1.5B {_REFERENCE}"),
    },
}


def _history_rate(config: AnswerEvalConfig, model_id: str, role: str) -> CallRate | None:
    """Seconds and tokens per call of the model over every configuration of the newest answer
    batch that used it: one configuration alone can be its batch's cheap one (its verdicts reused
    from another's), and its rate would make the estimate too low. An answer rate keeps the
    passages (k) its calls held, weighted by calls, so that at_sources can scale it."""
    param, prefix = ("answer_model_id", "answer_model") if role == "answer" else ("judge_model_id", "judge")
    used = [
        run
        for run in tracking.find_runs(config.home, role="configuration")
        if run.data.tags.get(tracking.TAG_KIND) == "answers"
        and run.data.params.get(param) == model_id
        and run.data.metrics.get(f"{prefix}_calls", 0)
    ]
    if not used:
        return None
    batch = used[0].data.tags.get(tracking.TAG_BATCH)
    in_batch = [run for run in used if run.data.tags.get(tracking.TAG_BATCH) == batch]
    metrics = [run.data.metrics for run in in_batch]
    calls = sum(m[f"{prefix}_calls"] for m in metrics)
    seconds = sum(m[f"{prefix}_seconds"] for m in metrics)
    tokens = sum(m.get(f"{prefix}_prompt_tokens", 0) + m.get(f"{prefix}_completion_tokens", 0) for m in metrics)
    passages = [(run.data.metrics[f"{prefix}_calls"], run.data.params.get("config.k")) for run in in_batch]
    sources = (
        sum(n * float(k) for n, k in passages) / calls if role == "answer" and all(k for _, k in passages) else None
    )
    return CallRate(seconds / calls, tokens / calls, f"measured in batch {batch}", sources)


class CallCost(BaseModel):
    """Model calls of one part of an evaluation: expected, at most, and the tokens and seconds
    the expected calls take (None where no rate is known)."""

    model_config = ConfigDict(frozen=True)

    calls: int
    tokens: int | None
    seconds: float | None
    at_most: int


class ConfigurationEstimate(BaseModel):
    """One configuration's answer and judge calls, and where its answer rate comes from."""

    model_config = ConfigDict(frozen=True)

    configuration: str
    answer: CallCost
    judge: CallCost
    answer_rate_basis: str


class AnswerEstimate(BaseModel):
    """What an answer evaluation will ask of its models before it runs (`eval answers --estimate`)."""

    model_config = ConfigDict(frozen=True)

    questions: int
    unanswerable: int
    reference_sentences: int
    configurations: list[ConfigurationEstimate]
    pairwise: CallCost
    judge_rate_basis: str
    total_calls: int
    total_seconds: float | None
    # What the seconds assume of this machine.
    assumes: str = ""


def _system_cost(config: AnswerEvalConfig, configuration: SystemConfiguration, calls: int) -> tuple[dict, str]:
    """A system under test's calls and seconds: none for records read from a file; otherwise one
    call a question at the median latency its newest run of this label measured, `concurrency`
    at a time (seconds unknown until a run has measured it)."""
    system = configuration.system
    if not system.asks:
        return {"calls": 0, "tokens": None, "seconds": 0.0}, system.source()
    for run in tracking.find_runs(config.home, role="configuration"):
        p50 = run.data.metrics.get("latency_p50_ms")
        if run.data.tags.get(tracking.TAG_LABEL) != configuration.label or p50 is None:
            continue
        seconds = round(calls * p50 / 1000 / system.concurrency, 1)
        batch = run.data.tags.get(tracking.TAG_BATCH)
        basis = f"latency p50 {p50:.0f} ms measured in batch {batch}, {system.concurrency} at a time"
        return {"calls": calls, "tokens": None, "seconds": seconds}, basis
    return {"calls": calls, "tokens": None, "seconds": None}, "a system under test: no latency measured for it yet"


def _rate(config: AnswerEvalConfig, model: ChatModelConfig, role: str) -> CallRate | None:
    """Seconds (of the evaluation's time) and tokens per call. A served model's calls are
    `concurrency` at a time, so each takes 1/concurrency of its measured seconds: a measured call's
    seconds include its wait for a slot when the server takes fewer at once."""
    measured = _history_rate(config, model_id_of(model), role)
    if measured is not None and model.calls_at_once > 1:
        return CallRate(
            measured.seconds / model.calls_at_once,
            measured.tokens,
            f"{measured.basis}, {model.calls_at_once} at a time",
            measured.sources,
        )
    if measured is not None or model.backend not in REFERENCE_RATES:
        return measured
    return REFERENCE_RATES[model.backend][role]


def _cost(calls: float, rate: CallRate | None, at_most: int) -> CallCost:
    return CallCost(
        calls=round(calls),
        tokens=round(calls * rate.tokens) if rate else None,
        seconds=round(calls * rate.seconds, 1) if rate else None,
        at_most=at_most,
    )


def estimate_answer_eval(config: AnswerEvalConfig) -> AnswerEstimate:
    """Expected and largest number of model calls per configuration, with tokens and seconds."""
    asked, _ = gather_golden_questions(
        config.home, config.collections, config.max_questions, config.seed, config.max_dialogues
    )
    # A dialogue's unanswerable turns are asked and declined like the unanswerable file's questions.
    golden = [q for q in asked if q.answerable]
    unanswerable = [q for q in asked if not q.answerable] + gather_unanswerable(
        config.unanswerable, config.max_unanswerable, config.seed
    )
    answerable, total = len(golden), len(golden) + len(unanswerable)
    followups = sum(q.followup for q in asked)
    reference_sentences = sum(len(split_statements(q.reference_answer)) for q in golden)
    with_reference = sum(1 for q in golden if split_statements(q.reference_answer))
    judge_rate = _rate(config, config.judge, "judge")
    rows = []
    for configuration in config.configurations:
        sources = TYPICAL_SOURCES if configuration.system_under_test else configuration.k
        judge_expected, judge_most = _judge_calls(answerable, reference_sentences, with_reference, sources, config)
        if configuration.system_under_test:
            # The system answers itself: one call per question, at its own measured latency.
            answer, basis = _system_cost(config, configuration, total)
            rows.append(
                ConfigurationEstimate(
                    configuration=configuration.label,
                    answer=CallCost(**answer, at_most=answer["calls"]),
                    judge=_cost(judge_expected, judge_rate, judge_most),
                    answer_rate_basis=basis,
                )
            )
            continue
        answer_rate = at_sources(_rate(config, configuration.model, "answer"), configuration.k)
        rerank = configuration.rerank_candidates * total if configuration.rerank == "llm" else 0
        # A follow-up rewritten to stand alone costs one more call of the answer model.
        rewrite = followups if configuration.followup_query == "rewrite" else 0
        rows.append(
            ConfigurationEstimate(
                configuration=configuration.label,
                answer=_cost(total + rerank + rewrite, answer_rate, 2 * (total + rerank + rewrite)),
                judge=_cost(judge_expected, judge_rate, judge_most),
                answer_rate_basis=answer_rate.basis if answer_rate else "no measurement for this model",
            )
        )
    pairs = len(list(itertools.combinations(config.configurations, 2))) if config.pairwise else 0
    pairwise = _cost(2 * (answerable - with_reference) * pairs, judge_rate, 4 * answerable * pairs)
    known = [part.seconds for row in rows for part in (row.answer, row.judge)] + [pairwise.seconds]
    return AnswerEstimate(
        questions=answerable,
        unanswerable=len(unanswerable),
        reference_sentences=reference_sentences,
        configurations=rows,
        pairwise=pairwise,
        judge_rate_basis=judge_rate.basis if judge_rate else "no measurement for this model",
        total_calls=sum(row.answer.calls + row.judge.calls for row in rows) + pairwise.calls,
        total_seconds=round(sum(known), 1) if None not in known else None,
        assumes=f"an in-process model on {default_threads()} threads (RAGASSAY_MODEL_THREADS, else the cores this "
        "process may use) of a machine doing nothing else, at the seconds a call took where the rates were measured",
    )


def _judge_calls(
    answerable: int,
    reference_sentences: int,
    with_reference: int,
    sources: int,
    config: AnswerEvalConfig,
) -> tuple[int, int]:
    """Expected and largest number of judge calls for one configuration: for each metric asked
    (config.metrics; None: all), the calls its declaration says an answer costs it
    (AnswerMetric.calls: one call per unit), the same calls two metrics read counted once (a
    statement's verdict over the passages is one verdict however many metrics read it). A support
    verdict over the passages costs support_rules.support_calls (one for the default judge's learned
    verdict), one against a single passage at most one; the largest with every call asked twice (a
    retry)."""
    asks = (lambda name: True) if config.metrics is None else config.metrics.__contains__
    per_statement = support_calls(model_id_of(config.judge), config.judge_odds)
    per_call = {
        "support over passages": (min(per_statement[0], sources), min(per_statement[1], sources)),
        "support against one passage": (min(per_statement[0], 1.0), min(per_statement[1], 1)),
        "one": (1.0, 1),
    }
    # How many of each unit: expected, and at most (questions, answers' statements and citations
    # at the answer schema's limits, reference sentences and reference answers as counted).
    units = {
        "answer": (answerable, answerable),
        "statement": (answerable * TYPICAL_STATEMENTS, answerable * MAX_STATEMENTS),
        "citation": (answerable * TYPICAL_CITATIONS, answerable * MAX_STATEMENTS * MAX_CITATIONS_PER_STATEMENT),
        "reference statement": (reference_sentences, reference_sentences),
        "reference answer": (with_reference, with_reference),
    }
    shared = {
        metric.calls for metric in DECLARED_METRICS if metric.calls and asks(metric.name) and metric.passage_statements
    }
    own = [
        metric.calls
        for metric in DECLARED_METRICS
        if metric.calls and asks(metric.name) and not metric.passage_statements
    ]
    expected = most = 0.0
    for calls in [*shared, *own]:
        each_expected, each_most = units[calls.each]
        call_expected, call_most = per_call[calls.call]
        expected += each_expected * call_expected
        most += 2 * each_most * call_most * (MAX_STATEMENTS if calls.at_most_each == "one a statement" else 1)
    return expected, round(most)
