"""Grounded answers from scripted model outputs: citations checked, outcomes decided, budget kept."""

from __future__ import annotations

import pytest

from ragassay.answer.grounding import AnswerOutput, Source, answer_schema, assemble_sources, resolve_answer

SOURCES = [
    Source(1, "bees", "wax.md", "wax.md#0", 0, 40, None, "Beeswax melts between 62 and 64 degrees."),
    Source(2, "bees", "smoke.txt", "smoke.txt#1", 120, 170, None, "Cool smoke masks the alarm pheromone."),
]


def output(*statements: tuple[str, list[int]]) -> AnswerOutput:
    return AnswerOutput.model_validate({"statements": [{"text": t, "citations": c} for t, c in statements]})


def test_valid_citations_map_to_sources_with_spans_and_quotes():
    answer = resolve_answer(
        "q", output(("Wax melts near 63 degrees.", [1]), ("Smoke calms bees.", [2, 1])), SOURCES, "strict"
    )
    assert answer.outcome == "answered" and answer.dropped_citations == 0
    first = answer.statements[0].citations[0]
    assert (first.doc_id, first.chunk_id, first.char_start, first.char_end) == ("wax.md", "wax.md#0", 0, 40)
    assert first.quote == SOURCES[0].text
    assert [c.number for c in answer.statements[1].citations] == [2, 1]
    assert answer.text == "Wax melts near 63 degrees. [1] Smoke calms bees. [2] [1]"


def test_citations_to_unknown_sources_are_dropped_and_counted():
    answer = resolve_answer("q", output(("Wax melts near 63 degrees.", [1, 7]), ("Made up.", [9])), SOURCES, "strict")
    assert answer.outcome == "answered"
    assert answer.dropped_citations == 2 and answer.dropped_statements == 1
    assert [s.text for s in answer.statements] == ["Wax melts near 63 degrees."]


def test_an_answer_left_without_valid_citations_is_a_refusal():
    answer = resolve_answer("q", output(("Invented fact.", [5]), ("Another.", [])), SOURCES, "strict")
    assert answer.outcome == "refused" and answer.reason == "no statement cites a provided source"
    assert answer.dropped_citations == 1 and answer.dropped_statements == 2


def test_groundedness_off_keeps_uncited_statements():
    answer = resolve_answer("q", output(("Plain answer.", []), ("Bad cite.", [8])), SOURCES, "off")
    assert answer.outcome == "answered" and [s.text for s in answer.statements] == ["Plain answer.", "Bad cite."]
    assert answer.dropped_citations == 1


@pytest.mark.parametrize(
    ("model_output", "reason"),
    [(output(), "the model found no answer in the sources"), (None, "the model's output could not be read")],
)
def test_empty_or_unreadable_output_is_a_refusal(model_output, reason):
    answer = resolve_answer("q", model_output, SOURCES, "strict", raw="{not json")
    assert answer.outcome == "refused" and answer.reason == reason
    assert answer.unparseable == (model_output is None)


def test_sources_fit_the_budget_whole_and_are_renumbered():
    long = Source(9, "bees", "long.md", "long.md#0", 0, 400, None, "word " * 80)
    chosen = assemble_sources(
        [SOURCES[0], long, SOURCES[1]], budget_tokens=40, count_tokens=lambda text: len(text.split())
    )
    assert [s.doc_id for s in chosen] == ["wax.md"]
    everything = assemble_sources([long, SOURCES[0]], budget_tokens=10_000, count_tokens=lambda text: len(text.split()))
    assert [s.number for s in everything] == [1, 2] and everything[0].doc_id == "long.md"


def test_schema_limits_citations_to_the_provided_numbers():
    schema = answer_schema(3)
    assert schema["$defs"]["Statement"]["properties"]["citations"]["items"] == {"type": "integer", "enum": [1, 2, 3]}
