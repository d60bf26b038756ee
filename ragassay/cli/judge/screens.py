"""The screen of `ragassay judge label`: one statement to label, laid out for the terminal it is
shown in (80x24 and up).

What a person needs to decide stays on every page: where the item is from, the question, the
statement asked about (and the answer it is from, except for context recall, whose reference
statements have nothing to do with the configuration's answer) and the keys. The context is what
can be long, so it is the part that pages: wrapped at words, its paragraphs and numbered sources
kept as separate blocks, the sources the statement cites marked. The judge's verdict is never on
the screen. Laying out is a pure function of the item and the terminal's size (`item_screen`),
so it is tested without a terminal; the loop in cli/judge/terminal.py prints it and reads the keys.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from ragassay.metrics.answer_metric import LabelPrompt
from ragassay.metrics.declared import BY_NAME

# The fewest context lines a page shows, however small the terminal: below this a person sees too
# little of a passage to judge it, so the header is cut instead.
MIN_CONTEXT_LINES = 4
# Header parts that can be long are cut to this many lines (the statement is never cut).
MAX_QUESTION_LINES = 3
MAX_ANSWER_LINES = 3

LABEL_KEYS_LINE = "s supported · u unsupported · k skip · z undo · q quit"
REVIEW_KEYS_LINE = "s/u/k relabel · n next · p previous · q quit"


@dataclass(frozen=True)
class Line:
    """One screen line: its text (never wider than the screen) and a rich style."""

    text: str
    style: str = ""


@dataclass(frozen=True)
class Screen:
    """One page of an item: its lines, which page it is and how many the context needs."""

    lines: list[Line]
    page: int
    pages: int


def wrapped(text: str, width: int, indent: str = "") -> list[str]:
    """Text wrapped at words to `width` columns, each of its lines (a paragraph, a numbered source)
    wrapped on its own and its blank lines kept, continuation lines indented by `indent`. A word
    longer than a line is the only thing broken."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        if not paragraph.strip():
            lines.append("")
            continue
        lines.extend(
            textwrap.wrap(
                paragraph.strip(),
                width=max(width, len(indent) + 10),
                subsequent_indent=indent,
                break_on_hyphens=False,
            )
        )
    return lines


def _cut(lines: list[str], most: int) -> list[str]:
    """At most `most` lines, the last ending in … when some were left out."""
    if len(lines) <= most:
        return lines
    return [*lines[: most - 1], lines[most - 1].rstrip()[:-1] + "…"]


def _labelled(name: str, text: str, width: int, most: int | None = None) -> list[Line]:
    """`name` then the text wrapped beside it, continuation lines aligned under the text."""
    pad = " " * (len(name) + 1)
    body = wrapped(" ".join((text or "(empty)").split()), width - len(pad))
    if most is not None:
        body = _cut(body, most)
    return [Line(f"{name} {body[0]}"), *(Line(f"{pad}{line}") for line in body[1:])]


def context_lines(item, width: int) -> list[Line]:
    """The context the statement is judged against, wrapped at words: each numbered source (or
    paragraph) a block of its own, a blank line between them, cited sources marked ▶."""
    from ragassay.judge.prompts import passages_of

    if _prompt(item).one_cited_passage:
        return [Line(line, "yellow") for line in wrapped(item.context, width - 2, "  ")]
    cited = {f"[{number}]" for number in item.cited_sources}
    lines: list[Line] = []
    for number, passage in enumerate(passages_of(item.context)):
        if number:
            lines.append(Line(""))
        marked = passage.split(" ", 1)[0] in cited
        for index, line in enumerate(wrapped(passage, width - 2, "    ")):
            prefix = "▶ " if marked and index == 0 else "  "
            lines.append(Line(prefix + line, "yellow" if marked else ""))
    return lines


def _prompt(item) -> LabelPrompt:
    """How the item's metric asks a person (its declaration's label prompt)."""
    return BY_NAME[item.metric].label_prompt


def item_screen(
    item,
    number: int,
    total: int,
    size: tuple[int, int],
    page: int = 0,
    note: str | None = None,
    keys: str = LABEL_KEYS_LINE,
    current_label: str | None = None,
) -> Screen:
    """The lines of page `page` of an item on a terminal of `size` (columns, lines): the header
    (kept on every page), a page of the context, the keys. `note` is a line above the keys (what
    the last key did); `current_label` is the label given earlier (in review)."""
    columns, rows = size
    # One column short of the terminal: a line as wide as the screen makes some terminals wrap.
    width = max(columns - 1, 40)
    source = f"{item.query_collection}/{item.query_id} · {item.configuration} · {item.metric.replace('_', ' ')}"
    header = [Line(f"── {number}/{total} · {source} "[:width], "dim")]
    header += _labelled("question", item.question, width, MAX_QUESTION_LINES)
    if _prompt(item).shows_answer:
        header += _labelled("answer  ", item.answer, width, MAX_ANSWER_LINES)
    header.append(Line(_prompt(item).question[:width], "bold"))
    header += [Line(f"  {line}", "reverse") for line in wrapped(item.statement, width - 2, "")]
    if current_label is not None:
        header.append(Line(f"your label: {current_label}", "bold cyan"))
    # The note's line is kept when there is none, so a page holds as many lines whatever the last
    # key did (the pages do not shift under the person paging).
    footer = [Line((note or "")[:width], "yellow")]
    context = context_lines(item, width)
    # What is left for the context after the header, its heading and the keys; never fewer than
    # MIN_CONTEXT_LINES (a long statement on a small terminal scrolls the header off instead).
    # Less the context's heading, the keys and the row the cursor is left on after the last line
    # (a full screen of lines would scroll the first one off).
    room = max(rows - len(header) - len(footer) - 3, MIN_CONTEXT_LINES)
    pages = max(1, -(-len(context) // room))
    page = min(max(page, 0), pages - 1)
    shown = context[page * room : (page + 1) * room]
    if _prompt(item).one_cited_passage:
        heading = f"the cited source [{', '.join(map(str, item.cited_sources))}]"
    else:
        cites = ", ".join(f"[{n}]" for n in sorted(item.cited_sources))
        heading = "context the judge saw" + (f" (the statement cites {cites}, marked ▶)" if cites else "")
    if pages > 1:
        first = page * room + 1
        heading += f" · lines {first}-{first + len(shown) - 1} of {len(context)}"
    paging = " · space/b page" if pages > 1 else ""
    lines = [*header, Line(heading[:width], "bold"), *shown, *footer, Line((keys + paging)[:width], "dim")]
    return Screen(lines, page, pages)
