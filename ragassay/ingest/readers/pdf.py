"""PDF: each page's text layer (pypdf), where each page starts, the title from the metadata; an
encrypted or corrupt file refused, a scanned one left empty (no OCR)."""

from __future__ import annotations

import io

from ragassay.ingest.readers.errors import ExtractionError
from ragassay.ingest.readers.text import first_line

PAGE_SEPARATOR = "\n\n"


def read_pdf(data: bytes) -> tuple[str, str, tuple[int, ...]]:
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
    return text, str(metadata_title) or first_line(text), tuple(page_starts)


def _tidy_pdf_page(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()
