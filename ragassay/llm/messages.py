"""Building prompts: chat messages from an instruction and worked examples, passages on one line,
and untrusted text (documents, answers) quoted between tags the instructions call data.

A document may carry instructions ("ignore previous instructions..."), fake source listings or
text imitating a verdict. The judge, rerank and generation prompts quote such text between tags
(`<passages>`, `<sentence>`, `<answer>`, `<passage>`) and their instruction says that what is
inside is data, never instructions; the answer prompt delimits each source by its own line
(answer/grounding.py: source_line). A tag of ours written inside the text is defused first (its
`<` becomes `‹`), so a document cannot close its own quotation and write outside it.
benchmarks/bench_injection.py measures how often a model still follows such text (RELIABILITY.md).
"""

from __future__ import annotations

import re

QUOTING_TAGS = ("source", "passages", "passage", "sentence", "answer", "question", "reference", "query")
_OUR_TAG = re.compile(r"<(\s*/?\s*)(" + "|".join(QUOTING_TAGS) + r")\b", re.IGNORECASE)


def few_shot_messages(instruction: str, examples: list[tuple[str, str]], request: str) -> list[dict]:
    """A prompt as chat messages: the instruction, worked examples as (user, assistant) turns,
    then the request."""
    messages = [{"role": "system", "content": instruction}]
    for user, assistant in examples:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return [*messages, {"role": "user", "content": request}]


def one_line(text: str) -> str:
    """Text with every run of whitespace made one space, as prompts quote passages."""
    return " ".join(text.split())


def defuse(text: str) -> str:
    """Untrusted text with every opening or closing tag of QUOTING_TAGS made harmless (`<` → `‹`),
    so it cannot end the quotation it is put in."""
    return _OUR_TAG.sub(lambda match: "‹" + match.group(1) + match.group(2), text)


def quoted(tag: str, text: str, **attributes: object) -> str:
    """Untrusted text between <tag ...> and </tag>, defused; attribute values lose their quotes."""
    listed = "".join(f' {name}="{defuse(str(value)).replace(chr(34), chr(39))}"' for name, value in attributes.items())
    return f"<{tag}{listed}>{defuse(text)}</{tag}>"
