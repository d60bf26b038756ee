"""The UTF-8 text formats: plain text, Markdown (its first heading the title), CSV and JSON (checked
to parse), read as they are written; and the decoding and first line the other readers share."""

from __future__ import annotations

import json
import re

from ragassay.ingest.readers.errors import ExtractionError


def decode_utf8(data: bytes) -> str:
    if b"\x00" in data:
        raise ExtractionError("unreadable", "binary content (NUL bytes) in a text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ExtractionError("unreadable", f"not valid UTF-8 at byte {error.start}: {error.reason}") from error
    return text.replace("\r\n", "\n").replace("\r", "\n")


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def read_plain(data: bytes) -> tuple[str, str, None]:
    text = decode_utf8(data)
    return text, first_line(text), None


def read_markdown(data: bytes) -> tuple[str, str, None]:
    text = decode_utf8(data)
    heading = re.search(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, flags=re.MULTILINE)
    return text, heading.group(1) if heading else first_line(text), None


def read_csv(data: bytes) -> tuple[str, str, None]:
    return decode_utf8(data), "", None


def read_json(data: bytes) -> tuple[str, str, None]:
    text = decode_utf8(data)
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        raise ExtractionError(
            "unreadable", f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from error
    return text, "", None
