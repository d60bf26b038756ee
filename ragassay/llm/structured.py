"""Machine-read model output: asked for under a JSON schema, validated, retried once, and returned
with what it cost.

Cost is a value, not a counter: every result carries its own `Usage`, and callers add results'
usages up (`Usage.total`) where they report a cost.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from ragassay.llm.completion import ChatModel, Completion


@dataclass(frozen=True)
class Usage:
    """Calls, tokens and model seconds of some model work, and how many outputs were unreadable.
    Calls served from the completion cache (llm/cache.py) cost nothing: they count only in
    cached_calls, and saved_seconds is what they took when they were asked."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    unparseable: int = 0
    cached_calls: int = 0
    saved_seconds: float = 0.0

    @classmethod
    def of(cls, completions: Iterable[Completion], unparseable: int = 0) -> Usage:
        """The cost of these model calls."""
        asked = list(completions)
        remembered = [c for c in asked if c.cached]
        asked = [c for c in asked if not c.cached]
        return cls(
            calls=len(asked),
            prompt_tokens=sum(c.prompt_tokens for c in asked),
            completion_tokens=sum(c.completion_tokens for c in asked),
            seconds=sum(c.seconds for c in asked),
            unparseable=unparseable,
            cached_calls=len(remembered),
            saved_seconds=sum(c.saved_seconds for c in remembered),
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.seconds + other.seconds,
            self.unparseable + other.unparseable,
            self.cached_calls + other.cached_calls,
            self.saved_seconds + other.saved_seconds,
        )

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of several usages (zero for none)."""
        result = cls()
        for usage in usages:
            result = result + usage
        return result

    def as_metrics(self, prefix: str = "model") -> dict[str, float]:
        return {
            f"{prefix}_calls": self.calls,
            f"{prefix}_prompt_tokens": self.prompt_tokens,
            f"{prefix}_completion_tokens": self.completion_tokens,
            f"{prefix}_seconds": round(self.seconds, 3),
            f"{prefix}_unparseable": self.unparseable,
            f"{prefix}_cached_calls": self.cached_calls,
        }


T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class Structured(Generic[T]):
    """A validated output, or (value None) the raw text of one that could not be read and why,
    with the cost of getting it."""

    value: T | None
    raw: str
    error: str | None = None
    attempts: int = 1
    completions: list[Completion] = field(default_factory=list)
    usage: Usage = Usage()
    # True when the result was remembered from an identical earlier request (its usage is zero).
    reused: bool = False
    # True when the prompt did not fit the model's context and was never asked (value None).
    too_long: bool = False

    @property
    def ok(self) -> bool:
        return self.value is not None

    @classmethod
    def read(cls, value: T, completions: list[Completion], attempts: int = 1) -> Structured[T]:
        """The value read from the last of these completions, which it cost."""
        return cls(
            value=value,
            raw=completions[-1].text,
            attempts=attempts,
            completions=completions,
            usage=Usage.of(completions),
        )

    @classmethod
    def unread(cls, error: str, completions: list[Completion], attempts: int = 1) -> Structured:
        """No value: the last completion could not be read (why: error); one unreadable output."""
        return cls(
            value=None,
            raw=completions[-1].text,
            error=error,
            attempts=attempts,
            completions=completions,
            usage=Usage.of(completions, unparseable=1),
        )

    @classmethod
    def without_call(cls, value: T) -> Structured[T]:
        """A value known without asking the model (no call, no cost)."""
        return cls(value=value, raw="", attempts=0)


def unreadable(error: str) -> Structured:
    """A result that was never asked of the model (for example a prompt that does not fit): it
    counts as one unreadable output and costs no call."""
    return Structured(value=None, raw="", error=error, attempts=0, usage=Usage(unparseable=1))


def generate_structured(
    model: ChatModel,
    messages: list[dict],
    output: type[T],
    *,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int = 0,
    schema: dict | None = None,
) -> Structured[T]:
    """Ask for output's JSON schema, validate, retry once (next seed) on failure."""
    schema = schema or output.model_json_schema()
    completions: list[Completion] = []
    error = ""
    for attempt in (1, 2):
        completion = model.complete(messages, schema, max_tokens, temperature, seed + attempt - 1)
        completions.append(completion)
        try:
            value = output.model_validate_json(completion.text)
        except ValidationError as failure:
            error = _first_error(failure)
            continue
        return Structured.read(value, completions, attempt)
    return Structured.unread(error, completions, attempts=2)


def _first_error(failure: ValidationError) -> str:
    item = failure.errors()[0]
    where = ".".join(str(part) for part in item["loc"])
    return f"{where}: {item['msg']}" if where else item["msg"]
