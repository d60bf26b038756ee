"""The labelling screen laid out for real terminal sizes (80x24 and 120x45), on an item whose
context is three of the bundled sample corpus's documents: the question, the statement and the
keys on every page, the context paged wrapped at words with its sources kept apart, nothing wider
or taller than the terminal, and no answer on a context-recall item."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ragassay.cli.judge.screens import item_screen, wrapped
from ragassay.judge.calibration.labels import SampleItem, item_id_of

CORPUS = Path(__file__).resolve().parents[2] / "data" / "sample" / "corpus"
VARROA = (CORPUS / "health" / "varroa-mites.md").read_text()
OVERVIEW = (CORPUS / "guides" / "overview.md").read_text()
WINTER = (CORPUS / "guides" / "winter-preparation.md").read_text()
STATEMENT = "Oxalic acid treatments work best in a broodless period, when every mite is on an adult bee."


def _item(metric: str = "faithfulness") -> SampleItem:
    # Three numbered sources as judge.context_text writes them: each document on one line.
    context = "\n".join(f"[{n}] {' '.join(text.split())}" for n, text in enumerate((VARROA, OVERVIEW, WINTER), 1))
    item_id, digest = item_id_of(STATEMENT, context)
    return SampleItem(
        item_id=item_id,
        sample_id="b/seed-0/count-60",
        batch_id="b",
        configuration="hybrid",
        query_collection="sample",
        query_id="g07",
        metric=metric,
        question="When do oxalic acid treatments against varroa mites work best, and why then?",
        answer="Oxalic acid works best when the colony has no brood [1]. " * 4,
        statement=STATEMENT,
        context=context,
        context_digest=digest,
        cited_sources=[1],
        stratum="supported",
        stratum_size=40,
        judge_model="m",
        prompt_version="p",
        support_threshold=0.85,
        judge_verdict="supported",
        p_supported=0.9,
    )


@pytest.mark.parametrize("size", [(80, 24), (120, 45)])
def test_every_page_keeps_question_statement_and_keys_and_the_context_pages_whole(size):
    columns, rows = size
    item = _item()
    note = "supported: the last statement"
    first = item_screen(item, 3, 60, size, note=note)
    assert first.pages > 1, "three documents do not fit one page"
    context_shown = []
    for page in range(first.pages):
        screen = item_screen(item, 3, 60, size, page, note=note)
        texts = [line.text for line in screen.lines]
        assert len(texts) < rows and max(map(len, texts)) < columns, (
            "nothing taller or wider than the terminal (a row left for the cursor)"
        )
        joined = " ".join(" ".join(texts).split())
        assert "3/60" in texts[0] and "question When do oxalic acid" in joined
        assert STATEMENT in joined, "the statement, whole, on every page"
        assert texts[-1].startswith("s supported · u unsupported · k skip · z undo · q quit")
        assert texts[-2] == note
        heading = next(t for t in texts if t.startswith("context the judge saw"))
        assert "the statement cites [1], marked ▶" in heading and f"of {len(_context_lines(item, columns))}" in heading
        start = texts.index(heading) + 1
        context_shown += texts[start:-2]
    assert item_screen(item, 3, 60, size, first.pages + 5).page == first.pages - 1, "paging past the end stays"
    # The pages together are the context: every word in order, none split across lines.
    words = [w.removeprefix("▶") for line in context_shown for w in line.split() if w != "▶"]
    assert words == item.context.split()
    blank = context_shown.index("")
    assert context_shown[0].startswith("▶ [1] ") and context_shown[blank + 1].startswith("  [2] "), (
        "each source a block, the cited one marked, a blank line between them"
    )


def _context_lines(item, columns):
    from ragassay.cli.judge.screens import context_lines

    return context_lines(item, max(columns - 1, 40))


def test_a_context_recall_item_shows_no_answer_and_a_citation_item_its_cited_source():
    recall = item_screen(_item("context_recall"), 1, 2, (80, 24))
    texts = [line.text for line in recall.lines]
    assert not any(t.startswith("answer") for t in texts), "the configuration's answer plays no part in it"
    assert "Is the reference answer's statement supported by the context below?" in texts
    cited = replace(_item("citation_precision"), context=" ".join(VARROA.split()))
    texts = [line.text for line in item_screen(cited, 2, 2, (80, 24)).lines]
    assert any(t.startswith("answer   Oxalic acid works best") for t in texts)
    assert any(t.startswith("the cited source [1]") for t in texts)


def test_wrapping_keeps_paragraphs_and_breaks_only_overlong_words():
    text = "A first paragraph of several words that goes on.\n\nA second one.\n" + "x" * 50
    lines = wrapped(text, 20, "  ")
    assert lines[:4] == ["A first paragraph of", "  several words that", "  goes on.", ""]
    assert lines[4] == "A second one." and all(len(line) <= 20 for line in lines)
    assert "".join(line.strip() for line in lines[5:]) == "x" * 50
