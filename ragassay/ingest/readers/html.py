"""HTML: the visible text of a page (selectolax), paragraphs kept apart so chunking can split
between them, a page nested deeper than HTML_MAX_DEPTH refused before parsing."""

from __future__ import annotations

import re

from ragassay.ingest.readers.errors import ExtractionError
from ragassay.ingest.readers.text import decode_utf8

# Elements whose content is never shown to a reader of the page.
_HTML_HIDDEN = {"script", "style", "noscript", "template", "head", "iframe", "object", "svg"}

# Elements that start a new paragraph, so chunking can split between them.
_HTML_BLOCKS = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "aside",
    "nav",
    "blockquote",
    "pre",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "table",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "figure",
    "figcaption",
    "form",
    "fieldset",
    "address",
    "hr",
}

_HTML_LINES = {"tr", "br", "caption"}

# lexbor's parse time grows with length x nesting depth (20k nested divs: 0.5 s; 400k: minutes, in
# C code no signal interrupts), so deeper pages are refused before parsing. Real pages nest tens deep.
HTML_MAX_DEPTH = 1024

_HTML_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*?(/?)>")

# Elements that never hold children, and elements whose end tag may be left out (the parser closes
# them itself): neither makes a page deeper.
_HTML_NOT_NESTING = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "param",
    "source",
    "track",
    "wbr",
    "p",
    "li",
    "dt",
    "dd",
    "tr",
    "td",
    "th",
    "option",
    "optgroup",
    "thead",
    "tbody",
    "tfoot",
    "colgroup",
    "caption",
    "rb",
    "rt",
    "rp",
    "rtc",
    "html",
    "head",
    "body",
}


def html_nesting_exceeds(source: str, limit: int) -> bool:
    """Whether the page's elements nest more than limit deep, counted from its tags (an upper
    bound on the parsed tree's depth: an unclosed element counts as open to the end)."""
    depth = 0
    for match in _HTML_TAG.finditer(source):
        closing, name, self_closing = match.groups()
        if self_closing or name.lower() in _HTML_NOT_NESTING:
            continue
        if closing:
            depth = max(depth - 1, 0)
        else:
            depth += 1
            if depth > limit:
                return True
    return False


def read_html(data: bytes) -> tuple[str, str, None]:
    from selectolax.lexbor import LexborHTMLParser

    source = decode_utf8(data)
    if html_nesting_exceeds(source, HTML_MAX_DEPTH):
        raise ExtractionError("unreadable", f"elements are nested more than {HTML_MAX_DEPTH} deep")
    tree = LexborHTMLParser(source)
    title_node = tree.css_first("title")
    title = title_node.text(strip=True) if title_node is not None else ""
    if not title:
        heading = tree.css_first("h1")
        title = heading.text(strip=True) if heading is not None else ""
    root = tree.body if tree.body is not None else tree.root
    pieces: list[str] = []
    # An explicit stack rather than recursion: deeply nested pages must not hit Python's limit.
    stack = [root.child] if root is not None and root.child is not None else []
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node, str):
            pieces.append(node)
            continue
        stack.append(node.next)
        tag = node.tag
        if tag == "-text":
            pieces.append(node.text_content or "")
        elif tag in _HTML_HIDDEN or tag.startswith("-"):
            continue
        else:
            separator = "\n\n" if tag in _HTML_BLOCKS else "\n" if tag in _HTML_LINES else ""
            separator = " " if tag in ("td", "th") else separator
            stack.append(separator)
            stack.append(node.child)
            pieces.append(separator)
    return _tidy_whitespace("".join(pieces)), title, None


def _tidy_whitespace(text: str) -> str:
    """Collapse runs of spaces, trim every line, and keep at most one blank line in a row."""
    lines = [re.sub(r"[ \t\f\v\u00a0]+", " ", line).strip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
