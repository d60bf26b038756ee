"""Turning a file's bytes into plain text, one reader per format (ingest/readers/: one format a
file). Every reader is pure (bytes in, text out) and fails with an ExtractionError whose reason is
one of REJECT_REASONS, so the ingest report can say exactly why a file was rejected; this module
chooses the reader by the file name, bounds the file's size and its text's length, and names the
document."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragassay.ingest.readers.docx import read_docx
from ragassay.ingest.readers.errors import ExtractionError
from ragassay.ingest.readers.html import read_html
from ragassay.ingest.readers.pdf import read_pdf
from ragassay.ingest.readers.text import read_csv, read_json, read_markdown, read_plain

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

# Titles longer than this are not titles but first sentences; the file name is used instead.
MAX_TITLE_CHARS = 120


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


_READERS: dict[str, Callable[[bytes], tuple[str, str, tuple[int, ...] | None]]] = {
    "text/plain": read_plain,
    "text/markdown": read_markdown,
    "text/csv": read_csv,
    "application/json": read_json,
    "text/html": read_html,
    DOCX_CONTENT_TYPE: read_docx,
    "application/pdf": read_pdf,
}
