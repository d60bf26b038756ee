"""Word (.docx): paragraphs and tables of the document part, its title from the core properties;
parts that inflate too far (zip bombs) or nest too deep refused (defusedxml parses)."""

from __future__ import annotations

import io
import re
import zipfile

from ragassay.ingest.readers.errors import ExtractionError

# A .docx part may expand this much at most. Real Word XML compresses 5-20x; zip bombs 1000x+.
DOCX_MAX_PART_BYTES = 64 * 1024 * 1024

DOCX_MAX_COMPRESSION_RATIO = 200

_WORD_NS = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"

_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"


def read_docx(data: bytes) -> tuple[str, str, None]:
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
