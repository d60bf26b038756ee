"""The support verdict with the real default judge (Qwen2.5-Coder-1.5B, assembled at set-up), read
as a probability; prompts that do not fit; the same probabilities over an OpenAI-compatible server."""

from __future__ import annotations

import pytest

from ragassay.judge.judge import Judge
from ragassay.judge.passage_choice import passages_to_ask
from ragassay.judge.prompts import SUPPORT_OPTIONS, support_messages
from ragassay.judge.support_rules import SUPPORT_THRESHOLDS, support_threshold_for
from ragassay.llm.completion import spelled_options
from ragassay.llm.registry import ChatModels, load_chat_model
from ragassay.llm.settings import ChatModelConfig
from tests.llm.test_models import chat_server  # noqa: F401 (fixture)

CONTEXT = (
    "[1] The Warré hive was designed by the French priest Émile Warré in the 1940s. It stacks boxes of top bars "
    "and adds new boxes underneath, so the bees build comb downwards.\n"
    "[2] The Langstroth hive, patented in 1852, uses removable frames spaced by a bee space of about 9.5 mm."
)


@pytest.fixture(scope="module")
def qwen_judge():
    models = ChatModels()
    yield Judge(models.get(ChatModelConfig(backend="qwen2.5-1.5b")))
    models.close()


@pytest.mark.slow
def test_the_default_judge_tells_supported_from_unsupported_statements(qwen_judge):
    """Clear cases only: a 1.5B judge is far from perfect (BENCHMARKS.md: it misses some wrong-entity
    statements), but it must put plain paraphrases above plain contradictions and additions."""
    from ragassay.judge.learned_verdict import LEARNED_THRESHOLD

    # Its verdict is the learned verdict's, read from its answer to the three-way question.
    assert qwen_judge.model_id.startswith("qwen2.5-1.5b:")
    assert qwen_judge.asking_threshold == SUPPORT_THRESHOLDS["qwen2.5-1.5b"]
    assert qwen_judge.support_threshold == LEARNED_THRESHOLD and qwen_judge.learned is not None
    supported = ["The Langstroth hive has frames that can be removed.", "Bees in a Warré hive build comb downwards."]
    unsupported = ["The Langstroth hive was patented in 1925.", "The Warré hive is the most popular hive in France."]
    p = {statement: qwen_judge.support(CONTEXT, statement) for statement in supported + unsupported}
    # The judge model's P(supported) under the three-way question (kept beside the verdict) puts
    # the paraphrases above the contradiction and the addition.
    own = {s: p[s].value.three_way.p_supported for s in p}
    assert min(own[s] for s in supported) > max(own[s] for s in unsupported)
    # The learned verdict reads that answer (issue 70): the paraphrase that shares no word with its
    # passage ("can be removed" for "removable") and the wrong year in otherwise copied words,
    # which the word-level verdict before it missed, are read as people read them.
    assert [p[s].value.verdict for s in supported + unsupported] == ["supported"] * 2 + ["unsupported"] * 2
    for result in p.values():
        assert 0.0 <= result.value.p_supported <= 1.0 and result.usage.calls == 1 and not result.reused
    assert qwen_judge.support(CONTEXT, supported[0]).reused, "a repeated judgement is remembered"


@pytest.mark.slow
def test_a_statement_is_judged_against_its_most_similar_passage_first(qwen_judge):
    """The learned verdict asks the judge once a statement, against its most similar passage, and
    reads its answer to the three-way question. A judge's own rule (support-probability/5, for judges no learned verdict
    reads): each passage alone, the most lexically similar first, the next only when that one
    does not support the statement; P(supported) the highest over the passages asked."""
    passages = CONTEXT.splitlines()
    statements = ["The Langstroth hive uses removable frames.", "The Langstroth hive was patented in 1925."]
    question = "What is special about the Langstroth hive?"
    to_ask = [passages_to_ask(statement, passages) for statement in statements]
    assert [order[0] for order in to_ask] == [1, 1], "the Langstroth passage first"
    learned = qwen_judge.support_by_passage(passages, statements, question)
    assert [v.value.verdict for v in learned] == ["supported", "unsupported"]
    assert [v.usage.calls for v in learned] == [1, 1]
    for statement, verdict in zip(statements, learned, strict=True):
        asked = qwen_judge.support(passages[1], statement, question)
        assert asked.reused and verdict.value.three_way == asked.value.three_way
        answered = verdict.value.three_way.model_dump()
        answered = {"supported": answered["p_supported"], "contradicted": answered["p_contradicted"]}
        p = qwen_judge.learned.p_supported(statement, passages, question, {"three-way": answered})
        assert verdict.value.p_supported == round(p, 6)

    own_rule = Judge(qwen_judge.model, learned=None)
    verdicts = own_rule.support_by_passage(passages, statements, question)
    assert [v.value.verdict for v in verdicts] == ["supported", "unsupported"]
    assert [v.usage.calls for v in verdicts] == [1, len(to_ask[1])]
    for statement, verdict, order in zip(statements, verdicts, to_ask, strict=True):
        asked = [own_rule.support(passages[i], statement, question) for i in order[: verdict.usage.calls]]
        assert all(result.reused for result in asked), "the same prompts as the verdict's: remembered"
        assert verdict.value.p_supported == max(result.value.p_supported for result in asked)
    [nothing] = qwen_judge.support_by_passage([], ["Anything."])
    assert nothing.value.verdict == "unsupported" and nothing.usage.calls == 0, "no passage supports anything"


def test_a_prompt_longer_than_the_context_window_is_never_cut():
    models = ChatModels()
    judge = Judge(models.get(ChatModelConfig(context_size=256)))
    result = judge.support(CONTEXT * 8, "The Warré hive was designed by a priest.")
    assert result.too_long and result.value is None and result.usage.calls == 0 and "does not fit" in result.error
    models.close()


def test_thresholds_are_per_model_and_default_to_one_half():
    from ragassay.judge.learned_verdict import LEARNED_THRESHOLD
    from ragassay.judge.support_rules import asking_threshold_for

    qwen = "qwen2.5-1.5b:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf@cc324af070c2"
    # The default judge's own odds decide which passages are asked; its verdict is the learned one's.
    assert asking_threshold_for(qwen) == SUPPORT_THRESHOLDS["qwen2.5-1.5b"]
    assert support_threshold_for(qwen) == LEARNED_THRESHOLD
    assert support_threshold_for("gguf:other.gguf") == 0.5 and support_threshold_for("openai:qwen@http://x") == 0.5


@pytest.mark.slow
def test_option_probabilities_agree_in_process_and_over_http(chat_server):  # noqa: F811
    """The same SmolLM2 file, in-process and behind llama-cpp-python's server: the same
    probabilities for the support options (the server reports top log-probabilities)."""
    options = spelled_options(SUPPORT_OPTIONS)
    messages = support_messages(CONTEXT, "The Langstroth hive was patented in 1852.")
    models = ChatModels()
    local = models.get(ChatModelConfig()).option_probabilities(messages, options)
    remote = load_chat_model(
        ChatModelConfig(backend="openai", url=chat_server, model="smollm2", context_size=2048)
    ).option_probabilities(messages, options)
    models.close()
    assert sum(local.probabilities.values()) == pytest.approx(1.0) and 0.0 <= local.coverage <= 1.0
    assert remote.coverage == pytest.approx(local.coverage, abs=0.02)
    assert remote.probabilities["supported"] == pytest.approx(local.probabilities["supported"], abs=0.02)


def test_a_pairwise_verdict_cannot_depend_on_which_answer_is_shown_first(qwen_judge):
    """Each answer is graded alone; the swapped question reuses both gradings."""
    question, reference = "When was the Langstroth hive patented?", "In 1852, by Lorenzo Langstroth."
    good, refusal = "The Langstroth hive was patented in 1852.", "I cannot answer this from the documents."
    good_first = qwen_judge.preference(question, reference, good, refusal)
    good_second = qwen_judge.preference(question, reference, refusal, good)
    assert (good_first.value.preferred, good_second.value.preferred) == ("first", "second")
    assert good_first.value.p_correct_first == good_second.value.p_correct_second > good_first.value.p_correct_second
    assert good_first.usage.calls == 2 and good_second.usage.calls == 0 and good_second.reused


@pytest.mark.slow
def test_the_default_judge_grades_a_paraphrase_of_the_reference_correct_and_another_answer_not(qwen_judge):
    """The README demo's follow-up, as the judge reads it (its conversation before it): at 0.5 the
    default judge graded the answer that says what the reference says incorrect (its P(correct)
    is low on most correct answers); at its threshold measured on people's labels
    (answer_correctness.CORRECT_THRESHOLDS) a paraphrase is correct and a different cause, or the
    opposite, is not."""
    from ragassay.metrics.answer_metrics.answer_correctness import (
        CORRECT_THRESHOLDS,
        answer_correctness,
        correct_threshold_for,
    )

    threshold = correct_threshold_for(qwen_judge.model_id)
    assert threshold == CORRECT_THRESHOLDS["qwen2.5-1.5b"] and correct_threshold_for("gguf:other.gguf") == 0.5
    question = (
        "How much honey does a colony need to get through winter? How can I tell whether mine has enough? "
        "And what kills a cluster more often than the cold?"
    )
    reference = "Condensation dripping from the cover onto the bees."
    graded = {
        answer: qwen_judge.correctness(question, reference, answer).value.p_correct
        for answer in (
            "Cold rarely kills a healthy cluster; condensation dripping from the cover onto the bees does.",
            "Starvation kills a cluster more often than the cold does.",
            "The cold itself kills most clusters; condensation rarely matters.",
        )
    }
    paraphrase, other_cause, opposite = graded.values()
    assert paraphrase < 0.5, "the fault: read at 0.5, the paraphrase was incorrect"
    assert [answer_correctness(p, threshold).value for p in graded.values()] == [1.0, 0.0, 0.0], graded
    assert paraphrase > max(other_cause, opposite)
