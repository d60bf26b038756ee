"""The judge model at work: the judgements of judge/prompts.py through the one model interface,
with their cost, and the judging of one answer for every answer metric."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pydantic import BaseModel

from ragassay.answer.grounding import Source
from ragassay.judge.learned_verdict import LEARNED_THRESHOLD, LearnedVerdict, learned_verdict_for
from ragassay.judge.memory import JudgementMemory
from ragassay.judge.passage_choice import most_similar_first, passages_to_ask
from ragassay.judge.prompts import (
    CORRECTNESS_MAX_TOKENS,
    CORRECTNESS_OPTIONS,
    CRITERIA_MAX_TOKENS,
    SUPPORT_MAX_TOKENS,
    SUPPORT_OPTIONS,
    THREE_WAY_MAX_TOKENS,
    THREE_WAY_OPTIONS,
    CorrectnessGrade,
    CriteriaScore,
    Preference,
    SupportVerdict,
    ThreeWayAnswer,
    correctness_messages,
    criteria_messages,
    criteria_schema,
    support_messages,
    three_way_messages,
)
from ragassay.judge.support_rules import asking_threshold_for, prompts_asked
from ragassay.llm.completion import ChatModel, spelled_options
from ragassay.llm.messages import one_line
from ragassay.llm.openai_server import ModelResponseTooLarge
from ragassay.llm.structured import Structured, Usage, generate_structured, unreadable
from ragassay.llm.threads import in_order
from ragassay.metrics.answers import Verdict

# Tokens the chat template adds around each message (role markers); used to check a prompt fits.
TEMPLATE_TOKENS_PER_MESSAGE = 8
# Below this share of its probability on "supported" or "unsupported" the judge meant neither:
# the verdict is unreadable rather than a coin flip between two unlikely words.
MIN_OPTION_COVERAGE = 0.5
# Two answers whose P(correct) differ by less than this are a tie in a pairwise comparison.
PREFERENCE_TIE_MARGIN = 0.05


# A verdict's error when its prompt did not fit the judge's context: never sent, never cut.
TOO_LONG = "too_long"


class Judge:
    """The judge model: each judgement asked at temperature 0, and remembered for the judge's
    lifetime (one evaluation; judge/memory.JudgementMemory), so an identical judgement costs one
    call; each result carries its own cost. A prompt that does not fit the model's context is
    never cut: it comes back unreadable, marked `too_long`.

    A served judge (an `openai` backend of `concurrency` > 1) is asked that many judgements at once
    (support_by_passage); every result is what the same prompt asked alone gives, in the same place:
    results are keyed and placed by their prompt, never by when they came back."""

    def __init__(
        self,
        model: ChatModel,
        support_threshold: float | None = None,
        learned: LearnedVerdict | str | None = "default",
        own_odds: bool = False,
    ):
        self.model = model
        self.model_id = model.model_id
        # The learned verdict that reads this judge's answers with the statement's passages (the
        # shipped one for the default judge; None: the judge's own P against its threshold).
        self.learned = learned_verdict_for(model.model_id) if learned == "default" else learned
        # Ask the judge model its own P(supported) of each statement's most similar passage even
        # where the learned verdict does not read it (`judge calibrate`, `eval answers --judge-odds`):
        # shown beside the verdict, paid for only when asked.
        self.own_odds = own_odds
        own_threshold = asking_threshold_for(model.model_id)
        if self.learned is None:
            # The judge's own P is the verdict: one threshold both asks and decides.
            self.asking_threshold = self.support_threshold = (
                own_threshold if support_threshold is None else support_threshold
            )
        else:
            self.asking_threshold = own_threshold
            self.support_threshold = LEARNED_THRESHOLD if support_threshold is None else support_threshold
        self.concurrency = getattr(model, "concurrency", 1)
        self._memory = JudgementMemory()

    def _remember(self, key_parts: list, max_tokens: int, messages: list[dict], ask) -> Structured:
        """The judgement key_parts names, from the evaluation's memory, else asked (if it fits)."""
        return self._memory.recall_or_ask(key_parts, lambda: self._asked(max_tokens, messages, ask))

    def _asked(self, max_tokens: int, messages: list[dict], ask) -> Structured:
        """ask(), unless the prompt does not fit the judge's context."""
        prompt_tokens = self.prompt_tokens(messages)
        if prompt_tokens + max_tokens > self.model.context_size:
            # Cutting the context would turn supported statements into unsupported ones; say so instead.
            result = replace(
                unreadable(
                    f"{TOO_LONG}: prompt of about {prompt_tokens} tokens does not fit the judge's context of "
                    f"{self.model.context_size}"
                ),
                too_long=True,
            )
        else:
            result = ask()
        return result

    def prompt_tokens(self, messages: list[dict]) -> int:
        return sum(self.model.count_tokens(m["content"]) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)

    def _ask(self, messages: list[dict], output: type, max_tokens: int, schema: dict | None = None) -> Structured:
        return self._remember(
            [output.__name__, messages, schema],
            max_tokens,
            messages,
            lambda: _unless_too_large(
                lambda: generate_structured(self.model, messages, output, max_tokens=max_tokens, schema=schema)
            ),
        )

    def support(self, context: str, statement: str, question: str | None = None) -> Structured[SupportVerdict]:
        """Supported when P(supported) >= the judge's threshold; unreadable when the model put less
        than MIN_OPTION_COVERAGE of its probability on either word. question: the question the
        statement's answer responds to, shown to the judge when given. With a learned verdict,
        P(supported) is the learned verdict's, read from the context (and the judge's P where it
        reads it)."""
        return self.support_by_passage([context], [statement], question)[0]

    @property
    def asks_model(self) -> bool:
        """Whether a support verdict asks the judge model: its own verdict, a learned verdict that
        reads its answers, or its own P asked to be shown (own_odds)."""
        return self.learned is None or self.learned.judge_input or self.own_odds

    def _judged(self, context: str, statement: str, question: str | None) -> Structured[SupportVerdict]:
        """The judge model's own verdict: its P(supported) against asking_threshold."""
        messages = support_messages(context, statement, question)
        return self._option_probability(
            ["support", self.asking_threshold, messages],
            messages,
            SUPPORT_OPTIONS,
            SUPPORT_MAX_TOKENS,
            lambda p: SupportVerdict(
                verdict="supported" if p["supported"] >= self.asking_threshold else "unsupported",
                p_supported=round(p["supported"], 6),
            ),
        )

    def _three_way(self, context: str, statement: str, question: str | None) -> Structured[ThreeWayAnswer]:
        """The judge model's answer to the three-way question (supported / contradicted / not
        mentioned) as its probabilities of the three."""
        messages = three_way_messages(context, statement, question)
        return self._option_probability(
            ["three-way", messages],
            messages,
            THREE_WAY_OPTIONS,
            THREE_WAY_MAX_TOKENS,
            lambda p: ThreeWayAnswer(**{f"p_{option}": round(p[option], 6) for option in THREE_WAY_OPTIONS}),
        )

    def _learned(
        self, asked: dict[str, Structured], statement: str, passages: list[str], question: str | None
    ) -> Structured[SupportVerdict]:
        """The learned verdict of a statement over its passages, reading the judge's answers against
        its most similar passage (`asked`, by prompt: "support" a SupportVerdict, "three-way" a
        ThreeWayAnswer; empty where the judge was not asked). What every answer asked cost is the
        verdict's cost."""
        results = list(asked.values())
        usage = Usage.total(result.usage for result in results)
        completions = [c for result in results for c in result.completions]
        reused = bool(results) and all(result.reused for result in results)
        for prompt in self.learned.judge_prompts:
            if asked[prompt].value is None:  # an answer the verdict reads could not be read: unreadable
                return replace(asked[prompt], usage=usage, completions=completions, reused=reused)
        own = asked["support"].value if "support" in asked else None
        three_way = asked["three-way"].value if "three-way" in asked else None
        answers: dict[str, dict[str, float]] = {}
        if own is not None:
            answers["support"] = {"supported": own.p_supported}
        if three_way is not None:
            answers["three-way"] = {"supported": three_way.p_supported, "contradicted": three_way.p_contradicted}
        p = self.learned.p_supported(statement, passages, question, answers)
        verdict = SupportVerdict(
            verdict="supported" if p >= self.support_threshold else "unsupported",
            p_supported=round(p, 6),
            judge_p_supported=own.p_supported if own is not None else None,
            three_way=three_way,
        )
        if not results:
            return Structured.without_call(verdict)
        return Structured(value=verdict, raw="", completions=completions, usage=usage, reused=reused)

    def support_by_passage(
        self, passages: list[str], statements: list[str], question: str | None = None
    ) -> list[Structured[SupportVerdict]]:
        """Each statement's support verdict over several passages. With a learned verdict, its P
        over every passage, the judge model asked once a statement at most (_learned_by_passage).
        Else the judge's own (support-probability/5): its verdicts against passages alone, with the question shown, in the order and number
        judge/passage_choice.passages_to_ask gives (most lexically similar first), stopping at the
        first that supports it; P(supported) is the highest of the verdicts asked, supported when
        that is >= the threshold. Unreadable when a verdict asked is (a passage left unread could
        be the one that supports it).

        Asked in rounds (every statement's first passage, then the next of those not yet
        supported), each round passage by passage, so that consecutive prompts share the
        instructions, the question and the passage as a prefix llama.cpp evaluates once. Version 4
        asked every passage; on MEMERAG-EXT's development half version 5 asks 0.28 of its calls, at
        the same balanced accuracy and kappa, AUC 0.744 against 0.752 (BENCHMARKS.md, "Cheaper
        verdicts")."""
        if not passages:
            # Nothing was retrieved, so nothing supports the statement: unsupported, no judge call.
            return [Structured.without_call(SupportVerdict(verdict="unsupported", p_supported=0.0))] * len(statements)
        if self.learned is not None:
            return self._learned_by_passage(passages, statements, question)
        order = [passages_to_ask(statement, passages) for statement in statements]
        asked: list[list[Structured[SupportVerdict]]] = [[] for _ in statements]
        waiting = list(range(len(statements)))
        round_number = 0
        while waiting:
            pairs = sorted((order[index][round_number], index) for index in waiting)
            verdicts = self.each(lambda pair: self._judged(passages[pair[0]], statements[pair[1]], question), pairs)
            for (_, index), verdict in zip(pairs, verdicts):
                asked[index].append(verdict)
            round_number += 1
            waiting = [
                index
                for index in waiting
                if round_number < len(order[index]) and not _settled(asked[index][-1], self.asking_threshold)
            ]
        return [_highest(results) for results in asked]

    def _learned_by_passage(
        self, passages: list[str], statements: list[str], question: str | None
    ) -> list[Structured[SupportVerdict]]:
        """Each statement's learned verdict over every passage. The judge model is asked each prompt
        whose answer the verdict reads (and the support prompt when its own P is to be shown:
        own_odds) once a statement, against its most similar passage
        (passage_choice.most_similar_first); a verdict that reads no judge output asks nothing.
        Statements sharing that passage are asked one after the other, so their prompts share it
        as a prefix."""
        asked: list[dict[str, Structured]] = [{} for _ in statements]
        prompts = prompts_asked(self.learned, self.own_odds)
        pairs = sorted(
            (most_similar_first(statement, passages)[0], index) for index, statement in enumerate(statements)
        )
        for prompt in prompts:
            ask = self._judged if prompt == "support" else self._three_way
            answers = self.each(lambda pair, ask=ask: ask(passages[pair[0]], statements[pair[1]], question), pairs)
            for (_, index), answer in zip(pairs, answers, strict=True):
                asked[index][prompt] = answer
        return [
            self._learned(answers, statement, passages, question)
            for answers, statement in zip(asked, statements, strict=True)
        ]

    def each(
        self, judge: Callable, items: list, on_progress: Callable[[int, int], None] = lambda done, total: None
    ) -> list:
        """judge(item) of every item, in the items' order: one by one for an in-process judge
        (consecutive prompts share their prefix), `concurrency` at a time for a served one."""
        return in_order(judge, items, self.concurrency, on_progress)

    def ask(self, messages: list[dict], output: type[BaseModel], max_tokens: int) -> Structured:
        """A judgement answered under `output`'s JSON schema (a metric's own prompt, such as the
        implied question of metrics/answer_metrics/answer_relevancy.py), remembered as every
        judgement is."""
        return self._ask(messages, output, max_tokens)

    def correctness(self, question: str, reference: str | None, answer: str) -> Structured[CorrectnessGrade]:
        """P(correct) of one answer to a question; unreadable as for support."""
        messages = correctness_messages(question, reference, answer)
        return self._option_probability(
            ["correctness", messages],
            messages,
            CORRECTNESS_OPTIONS,
            CORRECTNESS_MAX_TOKENS,
            lambda p: CorrectnessGrade(p_correct=round(p["correct"], 6)),
        )

    def preference(self, question: str, reference: str | None, first: str, second: str) -> Structured[Preference]:
        """The answer with the higher P(correct), each graded alone; a tie when they differ by less
        than PREFERENCE_TIE_MARGIN. Asking with the answers swapped reuses both gradings, so the
        order cannot change the verdict. Unreadable when either grading is."""
        graded = [self.correctness(question, reference, answer) for answer in (first, second)]
        usage = Usage.total(result.usage for result in graded)
        if any(result.value is None for result in graded):
            error = next(result.error for result in graded if result.value is None)
            return Structured(value=None, raw="", error=error, usage=replace(usage, unparseable=1))
        p_first, p_second = (result.value.p_correct for result in graded)
        preferred = (
            "tie" if abs(p_first - p_second) < PREFERENCE_TIE_MARGIN else ("first" if p_first > p_second else "second")
        )
        value = Preference(preferred=preferred, p_correct_first=p_first, p_correct_second=p_second)
        return Structured(
            value=value,
            raw="",
            completions=[c for result in graded for c in result.completions],
            usage=usage,
            reused=all(r.reused for r in graded),
        )

    def _option_probability(
        self,
        key_parts: list,
        messages: list[dict],
        options: dict[str, tuple[str, ...]],
        max_tokens: int,
        value_of: Callable[[dict[str, float]], BaseModel],
    ) -> Structured:
        """A one-word judgement read as the options' probabilities (normalized over them), made
        into the judgement's value by value_of; unreadable when the options held less than
        MIN_OPTION_COVERAGE of the model's probability. Remembered under key_parts."""

        def ask() -> Structured:
            try:
                answer = self.model.option_probabilities(messages, spelled_options(options))
            except ModelResponseTooLarge as error:
                return unreadable(str(error))  # this verdict's outcome, not the evaluation's
            completion = answer.completion
            if answer.coverage < MIN_OPTION_COVERAGE:
                error = f"the judge put only {answer.coverage:.2f} of its probability on {' or '.join(repr(o) for o in options)}"
                return Structured.unread(error, [completion])
            return Structured.read(value_of(answer.probabilities), [completion])

        return self._remember(key_parts, max_tokens, messages, ask)

    def criteria(self, question: str, answer: str, criteria: str) -> Structured[CriteriaScore]:
        return self._ask(
            criteria_messages(question, answer, criteria), CriteriaScore, CRITERIA_MAX_TOKENS, criteria_schema()
        )


def _unless_too_large(ask: Callable[[], Structured]) -> Structured:
    """ask(); a served model's response too large to read is that judgement's unreadable outcome."""
    try:
        return ask()
    except ModelResponseTooLarge as error:
        return unreadable(str(error))


def _settled(result: Structured[SupportVerdict], threshold: float) -> bool:
    """No further passage is asked after a verdict that supports the statement or is unreadable."""
    return result.value is None or result.value.p_supported >= threshold


def _highest(results: list[Structured[SupportVerdict]]) -> Structured[SupportVerdict]:
    """One statement's verdicts against each passage as one: the highest P(supported), what they
    all cost; unreadable (too long, when one was) if any is."""
    usage = Usage.total(result.usage for result in results)
    completions = [c for result in results for c in result.completions]
    reused = all(result.reused for result in results)
    failed = [result for result in results if result.value is None]
    if failed:
        return replace(failed[0], usage=usage, completions=completions, reused=reused)
    best = max(results, key=lambda result: result.value.p_supported)
    return replace(best, usage=usage, completions=completions, reused=reused)


def judging_cost(results: list[Structured]) -> tuple[Usage, int]:
    """What some judgements cost, and how many of them were remembered instead of asked."""
    return Usage.total(result.usage for result in results), sum(1 for result in results if result.reused)


def verdict_of(result: Structured[SupportVerdict]) -> Verdict:
    return None if result.value is None else result.value.verdict == "supported"


def context_text(sources: list[Source]) -> str:
    """The retrieved context as the answer model saw it: numbered sources."""
    return "\n".join(f"[{source.number}] {one_line(source.text)}" for source in sources)
