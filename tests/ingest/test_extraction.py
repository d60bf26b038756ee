"""Readers for every format, and a typed rejection for every kind of bad file."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from docx import Document
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from ragassay.ingest.extraction import (
    DOCX_CONTENT_TYPE,
    MAX_FILE_BYTES,
    MAX_TEXT_CHARS,
    ExtractionError,
    extract_text,
    read_and_extract,
)
from ragassay.ingest.readers.html import html_nesting_exceeds


def write_pdf(path: Path, pages: list[str]) -> Path:
    pdf = canvas.Canvas(str(path), pagesize=A4, invariant=True)
    for page_text in pages:
        y = 800
        for line in page_text.splitlines():
            pdf.drawString(72, y, line)
            y -= 16
        pdf.showPage()
    pdf.save()
    return path


def write_docx(path: Path, paragraphs: list[str], table: list[list[str]] | None = None) -> Path:
    document = Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for row, values in zip(grid.rows, table):
            for cell, value in zip(row.cells, values):
                cell.text = value
    document.save(path)
    return path


def rejection(path: Path) -> ExtractionError:
    with pytest.raises(ExtractionError) as caught:
        read_and_extract(path)
    return caught.value


@pytest.mark.parametrize(
    ("name", "content", "content_type", "title"),
    [
        ("notes.txt", "Hive notes\n\nThe queen was seen.", "text/plain", "Hive notes"),
        ("guide.md", "Intro line\n\n## Smoke and bees\n\nCool smoke calms bees.", "text/markdown", "Smoke and bees"),
        ("log.csv", "date,hive\n2026-01-01,A\n", "text/csv", "log"),
        ("sites.json", '{"site": "roof", "hives": 2}', "application/json", "sites"),
    ],
)
def test_text_formats_keep_their_text(tmp_path, name, content, content_type, title):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    data, extracted = read_and_extract(path)
    assert data == content.encode()
    assert extracted.text == content
    assert extracted.content_type == content_type
    assert extracted.title == title
    assert extracted.page_starts is None


def test_html_keeps_visible_text_only(tmp_path):
    path = tmp_path / "page.html"
    path.write_text(
        "<html><head><title>Swarm guide</title><style>p{color:red}</style>"
        "<script>var secret = 'tracking';</script></head><body>"
        "<h1>Swarms</h1><p>A swarm is <b>gentle</b>.</p><noscript>enable js</noscript>"
        "<template><p>hidden template</p></template><table><tr><td>Almonds</td><td>2</td></tr></table>"
        "</body></html>",
        encoding="utf-8",
    )
    extracted = read_and_extract(path)[1]
    assert extracted.title == "Swarm guide"
    assert extracted.text == "Swarms\n\nA swarm is gentle.\n\nAlmonds 2"
    for hidden in ("tracking", "color", "enable js", "hidden template"):
        assert hidden not in extracted.text


def test_docx_paragraphs_and_tables_in_order(tmp_path):
    path = write_docx(
        tmp_path / "queen.docx", ["Raising queens", "Graft young larvae."], [["Caste", "Days"], ["Queen", "16"]]
    )
    extracted = read_and_extract(path)[1]
    assert extracted.content_type == DOCX_CONTENT_TYPE
    assert extracted.text == "Raising queens\n\nGraft young larvae.\n\nCaste | Days\nQueen | 16"
    assert extracted.title == "Raising queens"


def test_pdf_keeps_page_numbers(tmp_path):
    path = write_pdf(tmp_path / "diseases.pdf", ["American foulbrood is notifiable.", "Chalkbrood is a fungus."])
    extracted = read_and_extract(path)[1]
    assert extracted.page_starts is not None and len(extracted.page_starts) == 2
    second_page = extracted.text[extracted.page_starts[1] :]
    assert second_page == "Chalkbrood is a fungus."
    assert extracted.text[: extracted.page_starts[1]].strip() == "American foulbrood is notifiable."


def test_truncated_pdf_is_unreadable(tmp_path):
    whole = write_pdf(tmp_path / "whole.pdf", ["Some text on a page."]).read_bytes()
    path = tmp_path / "truncated.pdf"
    path.write_bytes(whole[: len(whole) // 3])
    error = rejection(path)
    assert error.reason in ("unreadable", "empty")


def test_encrypted_pdf_is_unreadable(tmp_path):
    source = write_pdf(tmp_path / "plain.pdf", ["Secret hive locations."])
    writer = PdfWriter(clone_from=PdfReader(source))
    writer.encrypt(user_password="hunter2", algorithm="RC4-128")
    path = tmp_path / "locked.pdf"
    with path.open("wb") as handle:
        writer.write(handle)
    error = rejection(path)
    assert error.reason == "unreadable"
    assert "encrypted" in error.detail


def test_pdf_without_text_layer_is_empty(tmp_path):
    path = write_pdf(tmp_path / "scan.pdf", [""])
    error = rejection(path)
    assert error.reason == "empty"
    assert "OCR" in error.detail


def test_zip_bomb_docx_is_refused_before_expanding(tmp_path):
    path = tmp_path / "bomb.docx"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", b"<w:document>" + b" " * (80 * 1024 * 1024) + b"</w:document>")
    error = rejection(path)
    assert error.reason == "unreadable"
    assert "zip bomb" in error.detail


def test_docx_with_entity_expansion_is_refused(tmp_path):
    billion_laughs = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        "<w:body><w:p><w:r><w:t>&lol2;</w:t></w:r></w:p></w:body></w:document>"
    )
    path = tmp_path / "laughs.docx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("word/document.xml", billion_laughs)
    error = rejection(path)
    assert error.reason == "unreadable"
    assert "DTD" in error.detail


def test_invalid_utf8_names_the_byte(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"Propolis is gathered from buds." + "Préparé".encode("latin-1"))
    error = rejection(path)
    assert error.reason == "unreadable"
    assert "byte 33" in error.detail


def test_binary_junk_in_a_text_file_is_unreadable(tmp_path):
    path = tmp_path / "junk.md"
    path.write_bytes(bytes(range(256)) * 4)
    assert rejection(path).reason == "unreadable"


def test_corrupt_docx_is_unreadable(tmp_path):
    path = tmp_path / "broken.docx"
    path.write_bytes(b"PK\x03\x04 definitely not a zip archive")
    assert rejection(path).reason == "unreadable"


def test_invalid_json_names_line_and_column(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "a": 1,\n  "b": }\n', encoding="utf-8")
    error = rejection(path)
    assert error.reason == "unreadable"
    assert "line 3" in error.detail


@pytest.mark.parametrize("name", ["photo.png", "archive.tar.gz", "Makefile"])
def test_unknown_types_are_unsupported(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"\x89PNG whatever")
    assert rejection(path).reason == "unsupported_type"


def test_oversize_file_is_refused_without_reading(tmp_path):
    path = tmp_path / "huge.txt"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: costs no disk, and must never be read
    error = rejection(path)
    assert error.reason == "too_large"
    assert str(MAX_FILE_BYTES) in error.detail


@pytest.mark.parametrize("content", ["", "   \n\n\t  "])
def test_blank_text_is_empty(tmp_path, content):
    path = tmp_path / "blank.txt"
    path.write_text(content, encoding="utf-8")
    assert rejection(path).reason == "empty"


def test_text_over_the_cap_is_truncated_and_marked():
    text = "word " * (MAX_TEXT_CHARS // 5 + 1000)
    extracted = extract_text(text.encode(), "long.txt")
    assert extracted.truncated is True
    assert len(extracted.text) == MAX_TEXT_CHARS


def test_crlf_is_normalized():
    assert extract_text(b"line one\r\nline two\r\n", "crlf.txt").text == "line one\nline two\n"


def test_docx_from_bytes_matches_file(tmp_path):
    path = write_docx(tmp_path / "a.docx", ["Alpha", "Beta"])
    buffer = io.BytesIO(path.read_bytes())
    assert extract_text(buffer.getvalue(), "a.docx").text == "Alpha\n\nBeta"


def _docx_with_body(path: Path, body_xml: str) -> Path:
    """A .docx whose word/document.xml holds body_xml (python-docx writes the rest)."""
    import zipfile

    template = write_docx(path.with_suffix(".template.docx"), ["x"])
    with zipfile.ZipFile(template) as source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "word/document.xml":
                namespace = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
                data = f'<w:document xmlns:w="{namespace}"><w:body>{body_xml}</w:body></w:document>'.encode()
                # Stored, not deflated: the nesting is what is tested, not the compression ratio.
                target.writestr(item.filename, data, compress_type=zipfile.ZIP_STORED)
                continue
            target.writestr(item, data)
    return path


def test_a_docx_nested_100k_deep_is_refused_alone(tmp_path):
    depth = 100_000
    body = "<w:sdt><w:sdtContent>" * depth + "<w:p><w:r><w:t>deep</w:t></w:r></w:p>" + "</w:sdtContent></w:sdt>" * depth
    error = rejection(_docx_with_body(tmp_path / "deep.docx", body))
    assert error.reason == "unreadable" and "nested more than 256 deep" in error.detail


def test_json_nested_100k_deep_is_refused_alone(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    error = rejection(path)
    assert error.reason == "unreadable" and "nested too deeply" in error.detail


def test_html_nested_400k_deep_is_refused_before_parsing(tmp_path):
    path = tmp_path / "deep.html"
    path.write_text("<html><body>" + "<div>" * 400_000 + "x" + "</div>" * 400_000 + "</body></html>", encoding="utf-8")
    error = rejection(path)
    assert error.reason == "unreadable" and "nested more than 1024 deep" in error.detail


def test_html_depth_counts_only_elements_that_nest():
    assert not html_nesting_exceeds("<div>" * 3 + "</div>" * 3, 3)
    assert html_nesting_exceeds("<div>" * 4, 3), "an unclosed element stays open"
    # Void elements, self-closing tags and elements whose end tag may be left out (the parser
    # closes them itself) never make a page deeper, however many there are.
    assert not html_nesting_exceeds("<div>" + "<p>para<br><li>item<img src=x><span/>" * 1000 + "</div>", 3)
    assert not html_nesting_exceeds("<div></div>" * 1000, 1), "siblings are not nesting"


@pytest.mark.flows
@pytest.mark.slow
def test_fifos_devices_and_link_loops_are_rejected_by_name_and_counted_never_read(tmp_path):
    """In a folder, or given themselves: a FIFO (reading it would wait for ever), a device, a link
    loop and a broken link are each a `not_a_file` rejection, and the regular files go on (a
    folder's were skipped uncounted, a loop given itself ended the ingest with exit 3, a FIFO
    given itself was "does not exist")."""
    import os

    from typer.testing import CliRunner

    from ragassay.cli.main import app
    from tests.helpers import ingest

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "kept.txt").write_text("Bees keep the hive at 35 degrees.")
    os.mkfifo(corpus / "pipe.txt")
    (corpus / "loop-a.md").symlink_to(corpus / "loop-b.md")
    (corpus / "loop-b.md").symlink_to(corpus / "loop-a.md")
    (corpus / "gone.txt").symlink_to(tmp_path / "nowhere.txt")
    (corpus / "null.txt").symlink_to("/dev/null")
    report = ingest(tmp_path / "ws", "c", (corpus,))
    assert report.ingested == ["kept.txt"]
    rejected = {Path(r.path).name: (r.reason, r.detail) for r in report.rejected}
    assert rejected == {
        "pipe.txt": ("not_a_file", "a FIFO (named pipe), not a regular file"),
        "loop-a.md": ("not_a_file", "a symbolic link loop"),
        "loop-b.md": ("not_a_file", "a symbolic link loop"),
        "gone.txt": ("not_a_file", f"a broken link to {tmp_path / 'nowhere.txt'}"),
        "null.txt": ("not_a_file", "a character device, not a regular file"),
    }
    assert report.counts["rejected"] == 5

    runner = CliRunner()
    for given, reason in ((corpus / "loop-a.md", "a symbolic link loop"), (corpus / "pipe.txt", "a FIFO")):
        result = runner.invoke(app, ["ingest", "-c", "c", str(given)], env={"RAGASSAY_HOME": str(tmp_path / "ws")})
        assert result.exit_code == 1, result.output
        assert "0 ingested" in result.output and f"not_a_file ({reason}" in result.output
