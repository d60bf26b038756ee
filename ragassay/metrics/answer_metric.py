"""What one answer metric is, as its module declares it (metrics/answer_metrics/<name>.py for the
built-in ones, a plugin module's METRICS for an added one): `AnswerMetric`, its declaration; the
`MetricInput` its `score` is given for one answer; the `JudgeCalls` an answer costs it, for the
estimate; the `LabelPrompt` people are shown to check its verdicts; `VerdictRow`, one verdict as it is
recorded; and `AnswerJudgement`, every metric's score of one answer. A metric module imports from here and from metrics/answers.py (Scored and the
shared formulas), and nothing else of the library's: the judge reaches it through MetricInput.

The answer (answer/grounding.GroundedAnswer) and the judge (judge/judge.Judge) sit in layers above
the metrics; they are named here for type checkers only (import-linter leaves type-only imports
out of its layers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict

from ragassay.metrics.answers import Scored, Verdict

if TYPE_CHECKING:
    import numpy as np

    from ragassay.answer.grounding import GroundedAnswer
    from ragassay.judge.judge import Judge
    from ragassay.llm.structured import Structured


class VerdictRow(TypedDict):
    """One verdict of an answer's judgement, as the judgments table, the traces and the labelling
    sample read it (store/judge_schemas JUDGMENTS holds the same columns but `seconds`)."""

    metric: str
    statement_index: int  # -1: the whole answer (answer correctness, a citation of the prose)
    statement: str
    source_number: int | None
    verdict: str  # supported, unsupported, correct, incorrect or unreadable
    p_supported: float | None  # P(supported) of a support verdict (None for answer correctness)
    # Beside a learned verdict's P, the judge model's answers where they were asked (None otherwise):
    # its own P(supported) under the support prompt, and its P(supported) and P(contradicted)
    # under the three-way question.
    judge_p_supported: float | None
    three_way_p_supported: float | None
    three_way_p_contradicted: float | None
    p_correct: float | None  # P(correct) of the answer-correctness verdict (None for the others)
    error: str | None
    context: str
    cited_sources: list[int]
    # The model seconds this verdict took (over every passage asked; 0 when the completion cache
    # remembered it): its span's length in the answer's trace. Not a column of the judgments table.
    seconds: float


class Judging(Protocol):
    """The judging of one answer, which every metric's MetricInput shares (judge/answer_judgement.py
    implements it): each verdict asked is recorded as a VerdictRow, and its cost counted once."""

    def support(
        self, metric: str, index: int, statement: str, context: str, source: int | None, cited: Sequence[int]
    ) -> Verdict: ...

    def over_passages(self, metric: str, index: int, statement: str, cited: Sequence[int]) -> Verdict: ...

    def p_over_passages(self, statement: str) -> float | None: ...

    def ask(self, call: Callable[[Judge], Structured]) -> Structured: ...

    def record(self, row: VerdictRow) -> None: ...


@dataclass(frozen=True)
class MetricInput:
    """One answer, and the means to judge it, for one metric's `score`."""

    metric: str
    answer: GroundedAnswer
    question: str  # as the judge reads it: a follow-up with its conversation
    context: str  # the retrieved passages, numbered, as the judge is shown them
    reference_answer: str | None
    embed: Callable[[str], np.ndarray]  # the question collection's embedding model (unit vectors)
    judging: Judging
    judge_model_id: str  # for a threshold measured per judge model

    def statement_texts(self) -> list[str]:
        """The answer's statements, as the judge reads them."""
        return [statement.text for statement in self.answer.statements]

    def supported(
        self,
        statement: str,
        index: int = 0,
        context: str | None = None,
        source: int | None = None,
        cited: Sequence[int] = (),
    ) -> Verdict:
        """The judge's verdict (True, False, or None when unreadable) on whether `context` (the
        retrieved passages by default) supports `statement`, asked against that text as one
        passage; recorded as statement `index` of this metric (with the source it cites, if any)."""
        return self.judging.support(
            self.metric, index, statement, self.context if context is None else context, source, cited
        )

    def supported_over_passages(self, statement: str, index: int, cited: Sequence[int] = ()) -> Verdict:
        """The statement's verdict over the retrieved passages, from the one pass that judged
        every metric's `passage_statements` (so a statement two metrics read costs one verdict);
        recorded as statement `index` of this metric."""
        return self.judging.over_passages(self.metric, index, statement, cited)

    def p_over_passages(self, statement: str) -> float | None:
        """P(supported) of the statement over the retrieved passages, from the same pass, not
        recorded again (None when the verdict was unreadable)."""
        return self.judging.p_over_passages(statement)

    def ask(self, call: Callable[[Judge], Structured]) -> Structured:
        """Any other judgement: `call` asks the judge; its cost is counted with the answer's."""
        return self.judging.ask(call)

    def record(self, row: VerdictRow) -> None:
        """Record a verdict that is not a support verdict (answer correctness' grade)."""
        self.judging.record(row)


@dataclass
class AnswerJudgement:
    """Every answer metric of one question, by name in the declared order, and the verdicts
    behind them (rows of judgments.parquet)."""

    by_metric: dict[str, Scored]
    verdicts: list[VerdictRow] = field(default_factory=list)

    def scores(self) -> dict[str, Scored]:
        """Every metric's score by name."""
        return self.by_metric


@dataclass(frozen=True)
class JudgeCalls:
    """The judge calls a metric costs, for `eval answers --estimate`: one `call` per `each`.

    each: what is judged: an answer, each of its statements, each citation, each sentence of the
    reference answer, or a reference answer's grade (only for a question that has one).
    call: "support over passages" (a support verdict over the retrieved passages: as many calls as
    judge/support_rules.support_calls says, shared by every metric that reads the same statements), "support
    against one passage" (at most one call), or "one" (one call of another prompt).
    at_most_each: "one" (the call once a unit), or "one a statement" (an added metric that may
    ask once per statement of the answer).
    """

    each: Literal["answer", "statement", "citation", "reference statement", "reference answer"] = "answer"
    call: Literal["support over passages", "support against one passage", "one"] = "one"
    at_most_each: Literal["one", "one a statement"] = "one"


@dataclass(frozen=True)
class LabelPrompt:
    """How `ragassay judge label` shows one of a metric's support verdicts to a person: the
    question asked, whether the answer is shown above the statement, and whether the context
    is the one passage cited (else every retrieved passage, numbered)."""

    question: str
    shows_answer: bool = True
    one_cited_passage: bool = False


@dataclass(frozen=True)
class LeastFaithful:
    """An answer whose value of the metric is below `below` is listed among the least faithful;
    `rank` orders the metrics that declare one (lowest first)."""

    below: float
    rank: int


@dataclass(frozen=True)
class AnswerMetric:
    """One answer metric's declaration."""

    name: str  # snake_case: the column, the MLflow key, the assertion's and the gate's name
    title: str  # how tables and reports write it
    meaning: str  # one line: what a value says
    higher_is_better: bool = True
    # Made of support verdicts, so people's labels of the judge can correct its mean
    # (metrics/judge_error.py): reported with METRIC.corrected and its interval.
    corrected_by_labels: bool = False
    # Scored for a refused answer too (context recall is retrieval's, whatever the answer was).
    scored_when_refused: bool = False
    # Asks the judge model (a trace's feedback then comes from an LLM judge; else from code).
    asks_judge: bool = True
    # Reads the retrieved context text (not applicable to a system that returns none), or the
    # golden reference answer (not scored for a question without one).
    needs_context: bool = False
    needs_reference: bool = False
    # How a trace names what failed it: a statement "not supported", an answer "judged incorrect".
    failed_as: str = "not supported"
    # Scores one answer: MetricInput -> Scored. Its docstring (or the docstring of the pure
    # formula it calls, named in `formula`) is the metric's formula.
    score: Callable[[MetricInput], Scored] | None = None
    # The pure function of verdicts whose docstring is the formula, where `score` reads verdicts
    # into one (the built-in metrics); None: `score`'s own docstring is the formula.
    formula: Callable[..., Scored] | None = None
    # The statements this metric reads over the retrieved passages (supported_over_passages),
    # judged in one pass with every other metric's before any metric is scored.
    passage_statements: Callable[[MetricInput], list[str]] | None = None
    # The judge calls an answer costs it (the estimate); None: an added metric that asks the
    # judge is counted as one call an answer, at most one a statement.
    judge_calls: JudgeCalls | None = None
    # Its support verdicts as people label them (None: no verdict of it is labelled).
    label_prompt: LabelPrompt | None = None
    # What the answers table shows beside the value, when the metric says (answer relevancy: the
    # question the judge read the answer as answering): the column and the Scored's `detail`.
    detail_column: str | None = None
    # Its own prompt's name and version, where it asks one no other judgement asks: logged with
    # the judge's other prompt versions (judge/prompts.PROMPT_VERSIONS).
    prompt: tuple[str, str] | None = None
    # Shown among the few metrics of `runs list` and of the follow-up tables.
    headline: bool = False
    # The metric whose per-question values a label budget (`judge label --target-width`) narrows
    # the corrected interval of: the one declared so.
    budgets_labels: bool = False
    # A dialogue turn answered is handled when this metric is 1 on it (conversation success: every
    # citation supported): the one declared so.
    decides_turns: bool = False
    # Where its verdicts are grades of the whole answer against the reference answer, not support
    # verdicts: the P(correct) at or above which one is "correct", by the judge's model id (the
    # trace shows it).
    grade_threshold: Callable[[str], float] | None = None
    # The bound below which an answer is among the least faithful (the report's link to their
    # traces); of the metrics scored that declare one, the one with the lowest `rank` is used.
    least_faithful: LeastFaithful | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise ValueError(f"answer metric name {self.name!r} must be a snake_case identifier")

    @property
    def calls(self) -> JudgeCalls | None:
        """The judge calls an answer costs this metric (None: none)."""
        if not self.asks_judge:
            return None
        return self.judge_calls or JudgeCalls("answer", "one", "one a statement")
