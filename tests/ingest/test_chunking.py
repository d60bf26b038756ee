"""Chunks are exact spans of the document text, bounded in size, split at natural boundaries."""

from __future__ import annotations

import itertools

import pytest

from ragassay.ingest.chunking import chunk_document, split_spans

PARAGRAPHS = "\n\n".join(
    f"Paragraph {n} talks about hives. It has two sentences about bees number {n}." for n in range(30)
)
ONE_LONG_LINE = " ".join(f"word{n}" for n in range(2000))
NO_SPACES = "x" * 5000


@pytest.mark.parametrize("text", [PARAGRAPHS, ONE_LONG_LINE, NO_SPACES, "short text", "a\nb\nc\n" * 400])
@pytest.mark.parametrize(("size", "overlap"), [(200, 0), (300, 50), (1200, 150)])
def test_spans_round_trip_and_respect_the_size(text, size, overlap):
    spans = split_spans(text, size, overlap)
    assert spans, "non-blank text gives at least one chunk"
    for start, end in spans:
        chunk = text[start:end]
        assert 0 < len(chunk) <= size
        assert chunk == chunk.strip(), "chunks do not start or end with whitespace"
    assert spans == sorted(spans) and len(set(spans)) == len(spans)
    covered = set()
    for start, end in spans:
        covered.update(range(start, end))
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace()), "no text is lost"


def test_paragraphs_are_not_split_when_they_fit():
    spans = split_spans(PARAGRAPHS, 200, 0)
    for start, end in spans:
        assert PARAGRAPHS[start:end].startswith("Paragraph ")
        assert PARAGRAPHS[start:end].endswith(".")


def test_overlap_repeats_the_tail_of_the_previous_chunk():
    spans = split_spans(PARAGRAPHS, 300, 120)
    overlapping = [(a, b) for a, b in itertools.pairwise(spans) if b[0] < a[1]]
    assert overlapping, "with room for it, consecutive chunks share text"
    for (_, previous_end), (next_start, _) in overlapping:
        assert previous_end - next_start <= 120


def test_no_overlap_means_disjoint_chunks():
    spans = split_spans(PARAGRAPHS, 300, 0)
    assert all(b[0] >= a[1] for a, b in itertools.pairwise(spans))


def test_blank_text_has_no_chunks():
    assert split_spans("  \n\n  ", 100, 10) == []


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_invalid_settings_are_refused(size, overlap):
    with pytest.raises(ValueError):
        split_spans("text", size, overlap)


def test_pdf_chunks_follow_pages_and_keep_page_numbers():
    pages = ["First page text.", "Second page " + "long " * 100, "Third."]
    text = "\n\n".join(pages)
    starts = (0, len(pages[0]) + 2, len(pages[0]) + len(pages[1]) + 4)
    chunks = chunk_document(text, 200, 0, page_starts=starts)
    assert next(c.page for c in chunks) == 1 and chunks[-1].page == 3
    assert {c.page for c in chunks} == {1, 2, 3}
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        page_start = starts[chunk.page - 1]
        page_end = starts[chunk.page] if chunk.page < 3 else len(text)
        assert page_start <= chunk.start < chunk.end <= page_end
    assert text[chunks[0].start : chunks[0].end] == "First page text."
