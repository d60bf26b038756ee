"""Turning a file's bytes into plain text, one reader per format.

Every reader is pure (bytes in, text out) and fails with an ExtractionError whose reason is one of
REJECT_REASONS, so the ingest report can say exactly why a file was rejected.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

# duplicate_id: two files of one ingest would get the same doc_id (e.g. the same relative path
# under two roots); the first is kept.
# too_slow: extraction ran past the per-file time bound (ingest/isolation.py).
RejectReason = Literal[
    "unsupported_type", "too_large", "unreadable", "empty", "duplicate_id", "outside_root", "unsafe_name", "too_slow"
]
REJECT_REASONS: tuple[RejectReason, ...] = (
    "unsupported_type",
    "too_large",
    "unreadable",
    "empty",
    "duplicate_id",
    "outside_root",
    "unsafe_name",
    "too_slow",
)

MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_TEXT_CHARS = 500_000

DOCX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
CONTENT_TYPES: dict[str, str] = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".json": "application/json",
    ".html": "text/html",
    ".htm": "text/html",
    ".docx": DOCX_CONTENT_TYPE,
    ".pdf": "application/pdf",
}

# A .docx part may expand this much at most. Real Word XML compresses 5-20x; zip bombs 1000x+.
DOCX_MAX_PART_BYTES = 64 * 1024 * 1024
DOCX_MAX_COMPRESSION_RATIO = 200

# Titles longer than this are not titles but first sentences; the file name is used instead.
MAX_TITLE_CHARS = 120


class ExtractionError(Exception):
    """A file that cannot be turned into text, with the reason the ingest report shows."""

    def __init__(self, reason: RejectReason, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class ExtractedText:
    """A document's text. page_starts holds the offset where each page begins (PDFs only)."""

    text: str
    title: str
    content_type: str
    truncated: bool = False
    page_starts: tuple[int, ...] | None = None


def content_type_for(path: Path) -> str:
    """The content type ragassay assigns to a file name, or ExtractionError(unsupported_type)."""
    suffix = path.suffix.lower()
    if suffix not in CONTENT_TYPES:
        allowed = " ".join(sorted(CONTENT_TYPES))
        raise ExtractionError("unsupported_type", f"'{suffix or path.name}' is not one of {allowed}")
    return CONTENT_TYPES[suffix]


def read_and_extract(path: Path) -> tuple[bytes, ExtractedText]:
    """A file's bytes and text; a file over MAX_FILE_BYTES is refused before it is read."""
    data = read_file(path)
    return data, extract_text(data, path.name)


def read_file(path: Path) -> bytes:
    """A supported file's bytes; a file over MAX_FILE_BYTES is refused before it is read."""
    content_type_for(path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ExtractionError("too_large", f"{size} bytes is over the {MAX_FILE_BYTES} byte limit")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ExtractionError("unreadable", f"cannot read file: {error.strerror or error}") from error
    return data


def extract_text(data: bytes, file_name: str) -> ExtractedText:
    """Extract a document's text from its bytes; the file name selects the reader."""
    content_type = content_type_for(Path(file_name))
    reader = _READERS[content_type]
    try:
        text, title, page_starts = reader(data)
    except RecursionError:
        # JSON, XML or a PDF object tree nested thousands of levels deep: this file alone is refused.
        raise ExtractionError("unreadable", "nested too deeply to read") from None
    text, truncated = _cap(text)
    if truncated and page_starts is not None:
        page_starts = tuple(start for start in page_starts if start < len(text))
    if not text.strip():
        raise ExtractionError("empty", _EMPTY_DETAIL.get(content_type, "no text in the file"))
    title = title.strip() if title and len(title.strip()) <= MAX_TITLE_CHARS else ""
    return ExtractedText(
        text=text,
        title=title or Path(file_name).stem,
        content_type=content_type,
        truncated=truncated,
        page_starts=page_starts,
    )


_EMPTY_DETAIL = {
    "application/pdf": "no text layer (a scanned PDF?); OCR is not supported",
    "text/html": "no visible text",
}


def _cap(text: str) -> tuple[str, bool]:
    if len(text) <= MAX_TEXT_CHARS:
        return text, False
    return text[:MAX_TEXT_CHARS], True


def _decode_utf8(data: bytes) -> str:
    if b"\x00" in data:
        raise ExtractionError("unreadable", "binary content (NUL bytes) in a text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ExtractionError("unreadable", f"not valid UTF-8 at byte {error.start}: {error.reason}") from error
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _read_plain(data: bytes) -> tuple[str, str, None]:
    text = _decode_utf8(data)
    return text, _first_line(text), None


def _read_markdown(data: bytes) -> tuple[str, str, None]:
    text = _decode_utf8(data)
    heading = re.search(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, flags=re.MULTILINE)
    return text, heading.group(1) if heading else _first_line(text), None


def _read_csv(data: bytes) -> tuple[str, str, None]:
    return _decode_utf8(data), "", None


def _read_json(data: bytes) -> tuple[str, str, None]:
    text = _decode_utf8(data)
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        raise ExtractionError(
            "unreadable", f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from error
    return text, "", None


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


def _read_html(data: bytes) -> tuple[str, str, None]:
    from selectolax.lexbor import LexborHTMLParser

    source = _decode_utf8(data)
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


_WORD_NS = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


def _read_docx(data: bytes) -> tuple[str, str, None]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as error:
        raise ExtractionError("unreadable", f"not a valid .docx (zip) file: {error}") from error
    with archive:
        body_xml = _read_docx_part(archive, "word/document.xml", required=True)
        core_xml = _read_docx_part(archive, "docProps/core.xml", required=False)
    body = _parse_docx_xml(body_xml, "word/document.xml").find(f"{_WORD_NS}body")
    blocks = _docx_blocks(body) if body is not None else []
    text = "\n\n".join(block for block in blocks if block.strip())
    title = ""
    if core_xml is not None:
        title_element = _parse_docx_xml(core_xml, "docProps/core.xml").find(_DC_TITLE)
        title = (title_element.text or "") if title_element is not None else ""
    return text, title or (blocks[0] if blocks else ""), None


def _read_docx_part(archive: zipfile.ZipFile, name: str, required: bool) -> bytes | None:
    try:
        info = archive.getinfo(name)
    except KeyError:
        if required:
            raise ExtractionError("unreadable", f"not a Word document: no {name} inside") from None
        return None
    ratio = info.file_size / max(info.compress_size, 1)
    if info.file_size > DOCX_MAX_PART_BYTES or ratio > DOCX_MAX_COMPRESSION_RATIO:
        raise ExtractionError(
            "unreadable",
            f"zip bomb suspected: {name} expands to {info.file_size} bytes "
            f"({ratio:.0f}x compression; limits {DOCX_MAX_PART_BYTES} bytes, "
            f"{DOCX_MAX_COMPRESSION_RATIO}x)",
        )
    # The declared sizes above can lie: count the bytes actually inflated, and stop at the cap.
    inflated = bytearray()
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(1024 * 1024):
                inflated += chunk
                if len(inflated) > DOCX_MAX_PART_BYTES or len(inflated) > DOCX_MAX_COMPRESSION_RATIO * max(
                    info.compress_size, 1
                ):
                    raise ExtractionError(
                        "unreadable",
                        f"zip bomb: {name} inflated past {len(inflated)} bytes from {info.compress_size} (its header said {info.file_size})",
                    )
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise ExtractionError("unreadable", f"corrupt .docx part {name}: {error}") from error
    return bytes(inflated)


# Word's own nesting (tables in tables, content controls) stays far below these; a crafted part
# nested 100,000 deep or holding millions of elements would take gigabytes as a tree.
DOCX_MAX_XML_DEPTH = 256
DOCX_MAX_XML_ELEMENTS = 2_000_000


def _parse_docx_xml(xml: bytes, part_name: str):
    """The part's element tree, built incrementally under depth and element-count bounds; a DTD
    or entity declaration is refused (defusedxml checks the whole part first)."""
    from xml.etree.ElementTree import ParseError, XMLPullParser

    import defusedxml.ElementTree as safe_xml
    from defusedxml import DefusedXmlException

    if re.search(rb"<!(DOCTYPE|ENTITY)", xml, flags=re.IGNORECASE):
        raise ExtractionError("unreadable", f"{part_name} declares a DTD or entities, which are refused")
    try:
        # First a streaming pass that stops at the bounds (it keeps no tree), then the real parse.
        parser = XMLPullParser(events=("start", "end"))
        depth = elements = 0
        for start in range(0, len(xml), 1 << 20):
            parser.feed(xml[start : start + (1 << 20)])
            for event, _ in parser.read_events():
                if event == "start":
                    depth += 1
                    elements += 1
                    if depth > DOCX_MAX_XML_DEPTH or elements > DOCX_MAX_XML_ELEMENTS:
                        raise ExtractionError(
                            "unreadable",
                            f"{part_name} is nested more than {DOCX_MAX_XML_DEPTH} deep or holds more than {DOCX_MAX_XML_ELEMENTS:,} elements",
                        )
                else:
                    depth -= 1
        parser.close()
        return safe_xml.fromstring(xml, forbid_dtd=True)
    except DefusedXmlException as error:
        raise ExtractionError(
            "unreadable", f"{part_name} declares a DTD or entities, which are refused: {error}"
        ) from error
    except ParseError as error:
        raise ExtractionError("unreadable", f"{part_name} is not well-formed XML: {error}") from error


def _docx_blocks(container) -> list[str]:
    """Paragraphs and tables of a Word body, in document order; a table row is one line."""
    blocks: list[str] = []
    for element in container:
        if element.tag == f"{_WORD_NS}p":
            blocks.append(_docx_paragraph_text(element))
        elif element.tag == f"{_WORD_NS}tbl":
            rows = []
            for row in element.iter(f"{_WORD_NS}tr"):
                cells = [
                    " ".join(_docx_paragraph_text(p) for p in cell.iter(f"{_WORD_NS}p")).strip()
                    for cell in row.iter(f"{_WORD_NS}tc")
                ]
                rows.append(" | ".join(cells))
            blocks.append("\n".join(rows))
        elif element.tag == f"{_WORD_NS}sdt":
            content = element.find(f"{_WORD_NS}sdtContent")
            if content is not None:
                blocks.extend(_docx_blocks(content))
    return blocks


def _docx_paragraph_text(paragraph) -> str:
    parts = []
    for node in paragraph.iter():
        if node.tag == f"{_WORD_NS}t":
            parts.append(node.text or "")
        elif node.tag == f"{_WORD_NS}tab":
            parts.append("\t")
        elif node.tag in (f"{_WORD_NS}br", f"{_WORD_NS}cr"):
            parts.append("\n")
    return "".join(parts)


PAGE_SEPARATOR = "\n\n"


def _read_pdf(data: bytes) -> tuple[str, str, tuple[int, ...]]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractionError("unreadable", "encrypted PDF (a password is needed)")
        page_texts = [_tidy_pdf_page(page.extract_text() or "") for page in reader.pages]
        metadata_title = (reader.metadata.title if reader.metadata else None) or ""
    except ExtractionError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, NotImplementedError) as error:
        raise ExtractionError("unreadable", f"corrupt PDF: {type(error).__name__}: {error}") from error
    if not page_texts:
        raise ExtractionError("unreadable", "PDF has no pages")
    page_starts, offset = [], 0
    for page_text in page_texts:
        page_starts.append(offset)
        offset += len(page_text) + len(PAGE_SEPARATOR)
    text = PAGE_SEPARATOR.join(page_texts)
    return text, str(metadata_title) or _first_line(text), tuple(page_starts)


def _tidy_pdf_page(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


_READERS: dict[str, Callable[[bytes], tuple[str, str, tuple[int, ...] | None]]] = {
    "text/plain": _read_plain,
    "text/markdown": _read_markdown,
    "text/csv": _read_csv,
    "application/json": _read_json,
    "text/html": _read_html,
    DOCX_CONTENT_TYPE: _read_docx,
    "application/pdf": _read_pdf,
}
