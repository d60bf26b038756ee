"""Splitting a document's text into chunks ("pages") that are exact spans of that text.

A chunk is (start, end) into the document text, so `text[start:end]` is the chunk and a later
citation can point at an exact span. Rules:

- A PDF page is a chunk; a page longer than chunk_size is split like any other text.
- Other text is cut at the highest boundary that yields pieces no longer than chunk_size:
  paragraph (blank line), then line, then sentence end, then whitespace, then a hard cut.
  Pieces are packed greedily into chunks of at most chunk_size characters; each new chunk
  starts with the trailing pieces of the previous one that fit in `overlap` characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BOUNDARIES = (
    re.compile(r"\n[ \t]*\n\s*"),  # paragraph
    re.compile(r"\n\s*"),  # line
    re.compile(r"(?<=[.!?;:])\s+"),  # sentence
    re.compile(r"\s+"),  # word
)


@dataclass(frozen=True)
class ChunkSpan:
    """One chunk: its position in the document, its character span and its page (PDF only)."""

    ordinal: int
    start: int
    end: int
    page: int | None = None


def split_spans(text: str, chunk_size: int, overlap: int, offset: int = 0) -> list[tuple[int, int]]:
    """Spans of `text` (shifted by offset) of at most chunk_size characters, overlapping."""
    if chunk_size <= 0 or not 0 <= overlap < chunk_size:
        raise ValueError(f"need chunk_size > 0 and 0 <= overlap < chunk_size, got {chunk_size}, {overlap}")
    pieces = _pieces(text, 0, len(text), chunk_size, 0)
    spans: list[tuple[int, int]] = []
    first = 0
    while first < len(pieces):
        last = first
        while last + 1 < len(pieces) and pieces[last + 1][1] - pieces[first][0] <= chunk_size:
            last += 1
        spans.append((pieces[first][0] + offset, pieces[last][1] + offset))
        if last + 1 >= len(pieces):
            break
        next_first = last + 1
        while next_first - 1 > first and pieces[last][1] - pieces[next_first - 1][0] <= overlap:
            next_first -= 1
        first = next_first
    return spans


def _pieces(text: str, start: int, end: int, chunk_size: int, level: int) -> list[tuple[int, int]]:
    """Non-blank spans of text[start:end], each at most chunk_size long, cut at the highest boundary."""
    start, end = _trim(text, start, end)
    if start >= end:
        return []
    if end - start <= chunk_size:
        return [(start, end)]
    if level == len(_BOUNDARIES):
        return [(cut, min(cut + chunk_size, end)) for cut in range(start, end, chunk_size)]
    pieces: list[tuple[int, int]] = []
    piece_start = start
    for match in _BOUNDARIES[level].finditer(text, start, end):
        pieces.extend(_pieces(text, piece_start, match.start(), chunk_size, level + 1))
        piece_start = match.end()
    pieces.extend(_pieces(text, piece_start, end, chunk_size, level + 1))
    return pieces


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def chunk_document(
    text: str, chunk_size: int, overlap: int, page_starts: tuple[int, ...] | None = None
) -> list[ChunkSpan]:
    """Chunks of a document; with page_starts (a PDF), chunks never cross a page boundary."""
    if page_starts is None:
        return [ChunkSpan(i, s, e) for i, (s, e) in enumerate(split_spans(text, chunk_size, overlap))]
    chunks: list[ChunkSpan] = []
    page_ends = [*list(page_starts[1:]), len(text)]
    for page_number, (page_start, page_end) in enumerate(zip(page_starts, page_ends), start=1):
        page_text = text[page_start:page_end]
        for start, end in split_spans(page_text, chunk_size, overlap, offset=page_start):
            chunks.append(ChunkSpan(len(chunks), start, end, page_number))
    return chunks
