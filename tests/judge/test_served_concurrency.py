"""A served judge at concurrency: calls of one evaluation in flight together (statements ×
passages, and answers), never more than `concurrency` at once, and every verdict exactly what
the same judge gives one call at a time. The server is a real OpenAI-compatible one whose
log-probabilities are SmolLM2's, in process (tests/llm/openai_stand_in.py)."""

from __future__ import annotations

import pytest

from ragassay.judge.judge import Judge
from ragassay.llm.llama_cpp import smollm2_path
from ragassay.llm.registry import load_chat_model
from ragassay.llm.settings import ChatModelConfig
from tests.llm.openai_stand_in import StandInServer

PASSAGES = [
    "A queen bee can lay up to 2,000 eggs a day in summer.",
    "The Langstroth hive keeps a bee space of about 9.5 mm between frames.",
]
STATEMENTS = [
    "A queen lays up to 2,000 eggs a day.",
    "Bees sleep in winter.",
]
QUESTION = "What does a beekeeper measure?"


@pytest.fixture(scope="module")
def served():
    with StandInServer(smollm2_path(), delay_seconds=0.05) as server:
        yield server


def _judge(url: str, concurrency: int) -> Judge:
    return Judge(load_chat_model(ChatModelConfig(backend="openai", url=url, model="stand-in", concurrency=concurrency)))


@pytest.mark.slow
def test_a_served_judge_asks_concurrently_and_gives_the_verdicts_it_gives_one_at_a_time(served):
    served.peak_in_flight = served.requests = 0
    one_at_a_time = _judge(served.url, 1).support_by_passage(PASSAGES, STATEMENTS, QUESTION)
    sequential = (served.peak_in_flight, served.requests)
    served.peak_in_flight = served.requests = 0
    together = _judge(served.url, 3).support_by_passage(PASSAGES, STATEMENTS, QUESTION)
    calls = sum(result.usage.calls for result in one_at_a_time)
    assert sequential == (1, calls) and calls >= len(STATEMENTS)
    assert served.requests == calls, "the same calls"
    # Every statement's most similar passage is asked in one round: two calls in flight together.
    assert 2 <= served.peak_in_flight <= 3, "in flight together, never more than the concurrency"
    assert [r.value for r in together] == [r.value for r in one_at_a_time], "each verdict and its P identical"
    assert [r.usage.calls for r in together] == [r.usage.calls for r in one_at_a_time]


def test_identical_prompts_in_flight_together_are_asked_once(served):
    served.peak_in_flight = served.requests = 0
    judge = _judge(served.url, 8)
    results = judge.each(lambda statement: judge.support(PASSAGES[0], statement, QUESTION), [STATEMENTS[0]] * 6)
    assert served.requests == 1 and sum(result.reused for result in results) == 5
    assert all(result.value == results[0].value for result in results)


def test_concurrency_applies_to_served_models_only():
    assert ChatModelConfig().concurrency == 4 and load_chat_model(ChatModelConfig()).concurrency == 1
    with pytest.raises(ValueError, match="less than or equal to 64"):
        ChatModelConfig(backend="openai", url="http://127.0.0.1:1", model="m", concurrency=65)
