"""What every chat model returns: a Completion (text and cost), option probabilities for one-word
answers, and the ChatModel interface that answers, reranking, generation and judging call."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol


class ChatModel(Protocol):
    model_id: str
    # How many calls the model takes at once: an in-process model 1 (its callers go one by one);
    # a served one its configured concurrency (callers may fan out that many threads).
    concurrency: int

    def complete(
        self, messages: list[dict], schema: dict | None, max_tokens: int, temperature: float, seed: int
    ) -> Completion: ...

    def count_tokens(self, text: str) -> int: ...

    def option_probabilities(
        self, messages: list[dict], options: dict[str, tuple[str, ...]]
    ) -> OptionProbabilities: ...


@dataclass(frozen=True)
class Completion:
    """One model call: its text and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    # Served from the completion cache (llm/cache.py): no model ran now; saved_seconds is what the
    # call took when it was asked.
    cached: bool = False
    saved_seconds: float = 0.0


def completion_from_response(response: dict, started: float) -> Completion:
    """The Completion of an OpenAI-shaped chat response (llama-cpp-python's create_chat_completion
    returns one, as a server does), timed from `started` (time.perf_counter)."""
    usage = response.get("usage") or {}
    return Completion(
        response["choices"][0]["message"].get("content") or "",
        int(usage.get("prompt_tokens", 0)),
        int(usage.get("completion_tokens", 0)),
        time.perf_counter() - started,
    )


def option_spellings(word: str) -> tuple[str, ...]:
    """The ways a model may start a one-word answer: as written, capitalized, after a space."""
    return tuple(dict.fromkeys((word, word.capitalize(), f" {word}", f" {word.capitalize()}")))


def spelled_options(options: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Each option with every spelling (option_spellings) of each word that may start it: what
    ChatModel.option_probabilities reads."""
    return {option: tuple(s for word in words for s in option_spellings(word)) for option, words in options.items()}


@dataclass(frozen=True)
class OptionProbabilities:
    """How likely the model was to answer each option, normalized over the options, and the share
    of the model's probability the options held (low: it wanted to say something else)."""

    probabilities: dict[str, float]
    coverage: float
    completion: Completion


def normalized_options(mass: dict[str, float], completion: Completion) -> OptionProbabilities:
    """Option probabilities from the probability mass the model gave each option."""
    total = sum(mass.values())
    probabilities = {option: (value / total if total > 0 else 0.0) for option, value in mass.items()}
    return OptionProbabilities(probabilities, min(1.0, total), completion)
