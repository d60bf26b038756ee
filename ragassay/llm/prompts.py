"""Building prompts: chat messages from an instruction and worked examples, passages on one line."""

from __future__ import annotations


def few_shot_messages(instruction: str, examples: list[tuple[str, str]], request: str) -> list[dict]:
    """A prompt as chat messages: the instruction, worked examples as (user, assistant) turns,
    then the request."""
    messages = [{"role": "system", "content": instruction}]
    for user, assistant in examples:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return messages + [{"role": "user", "content": request}]


def one_line(text: str) -> str:
    """Text with every run of whitespace made one space, as prompts quote passages."""
    return " ".join(text.split())
