"""People's labels as tables, without a model: the strata the correction reads from them, which
verdict of the judge counts, the passages of a context, and a labels file read strictly."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from ragassay.errors import ConfigError
from ragassay.judge.calibration.labels import current_verdicts, label_strata, read_label_file
from ragassay.judge.prompts import passages_of
from ragassay.store.judge_schemas import JUDGE_LABELS

START = datetime(2026, 12, 1, tzinfo=UTC)


def _labels(rows: list[tuple]) -> pl.DataFrame:
    """(item, sample, stratum, stratum size, label, who, judge model, p) rows, in labelling order."""
    return pl.DataFrame(
        [
            {
                "item_id": item,
                "sample_id": sample,
                "batch_id": sample.split("/")[0],
                "stratum": stratum,
                "stratum_size": size,
                "label": label,
                "who": who,
                "judge_model": model,
                "prompt_version": "support-probability/4",
                "p_supported": p,
                "context": "[1] The hive.",
                "statement": f"statement {item}",
                "question": "q?",
                "labelled_at": START + timedelta(minutes=minute),
            }
            for minute, (item, sample, stratum, size, label, who, model, p) in enumerate(rows)
        ],
        schema=JUDGE_LABELS.schema,
    )


def test_strata_count_each_item_once_with_its_latest_label_weighted_by_its_stratum():
    labels = _labels(
        [
            ("i1", "b1/seed-0/count-4", "supported", 90, "supported", "ana", "m", 0.9),
            ("i2", "b1/seed-0/count-4", "supported", 90, "unsupported", "ana", "m", 0.95),
            ("i3", "b1/seed-0/count-4", "unsupported", 10, "unsupported", "ana", "m", 0.2),
            ("i4", "b1/seed-0/count-4", "unsupported", 10, "skipped", "ana", "m", 0.3),
            ("i2", "b2/seed-1/count-2", "supported", 50, "supported", "bo", "m", 0.95),  # relabelled later
        ]
    )
    verdicts = {"i1": True, "i2": True, "i3": False, "i4": False}
    strata = {s.name: s for s in label_strata(labels, verdicts)}
    assert set(strata) == {"b1/seed-0/count-4 supported", "b1/seed-0/count-4 unsupported"}, (
        "i2 stays in the sample it was first labelled in; the skipped i4 is in no stratum"
    )
    supported = strata["b1/seed-0/count-4 supported"]
    assert (supported.population, supported.supported_judged_supported, supported.unsupported_judged_supported) == (
        90,
        2,
        0,
    ), "i2's latest label (bo's) counts"
    assert strata["b1/seed-0/count-4 unsupported"].unsupported_judged_unsupported == 1
    unreadable = label_strata(labels, {**verdicts, "i1": None})
    assert sum(s.labelled for s in unreadable) == 2, "an unreadable verdict is left out"


def test_the_stored_probability_counts_only_for_the_judge_that_made_it():
    labels = _labels(
        [
            ("i1", "b/seed-0/count-2", "supported", 5, "supported", "ana", "qwen", 0.9),
            ("i2", "b/seed-0/count-2", "unsupported", 5, "unsupported", "ana", "other", 0.1),
        ]
    )
    asked = []

    def rejudge(row: dict) -> float:
        asked.append(row["item_id"])
        return 0.95

    assert current_verdicts(labels, "qwen", "support-probability/4", 0.92, rejudge) == {"i1": False, "i2": True}
    assert asked == ["i2"], "i1's stored P(supported) is this judge's: against this threshold, no call"


def test_a_context_splits_into_its_numbered_sources_or_its_paragraphs():
    assert passages_of("[1] Bees.\n[2] Wax [3] melts.") == ["[1] Bees.", "[2] Wax [3] melts."]
    assert passages_of("First passage\nstill first.\n\nSecond.") == ["First passage\nstill first.", "Second."]
    assert passages_of("One passage.") == ["One passage."]


def test_a_labels_file_is_refused_whole_naming_each_bad_line(tmp_path):
    path = tmp_path / "labels.jsonl"
    good = '{"item_id": "a1", "sample_id": "b/seed-0/count-4", "statement": "s", "label": "supported"}'
    path.write_text(
        good
        + "\n"
        + '{"item_id": "a2", "sample_id": "b/seed-0/count-4", "statement": "s", "label": "yes"}\n'
        + "not json\n"
        + '{"item_id": "a3", "sample_id": "nothing", "statement": "s", "label": "skip"}\n'
        + '{"item_id": "a4", "sample_id": "b/seed-0/count-4", "statement": "s", "label": ""}\n'
    )
    with pytest.raises(ConfigError) as raised:
        read_label_file(path)
    message = str(raised.value)
    assert f"{path}:2: field 'label'" in message and f"{path}:3: invalid JSON" in message
    assert f"{path}:4: field 'sample_id'" in message and "nothing imported" in message
    path.write_text(good + "\n" + '{"item_id": "a4", "sample_id": "b/seed-0/count-4", "statement": "s", "label": ""}\n')
    [row] = read_label_file(path)
    assert (row.item_id, row.label, row.where) == ("a1", "supported", f"{path}:1"), "an empty label is not labelled yet"


def test_a_labels_file_gives_each_item_one_label_and_refuses_contradictions_naming_both_lines(tmp_path):
    """Issue 37 case 3: a repeated identical row is one label (a 20 MB file of one labelled item
    is one row, not 58,580), and two rows labelling one item differently by the same person are
    refused with both line numbers, nothing imported."""
    row = {"item_id": "a1", "sample_id": "b/seed-0/count-4", "statement": "s", "label": "supported"}
    path = tmp_path / "labels.jsonl"
    line = json.dumps(row) + "\n"
    path.write_text(line * (20_000_000 // len(line)))
    [only] = read_label_file(path)
    assert (only.item_id, only.label, only.where) == ("a1", "supported", f"{path}:1")
    path.write_text(
        line + json.dumps({**row, "item_id": "a2"}) + "\n" + json.dumps({**row, "label": "unsupported"}) + "\n"
    )
    with pytest.raises(ConfigError) as raised:
        read_label_file(path)
    message = str(raised.value)
    assert f"{path}:3: item a1 is labelled unsupported here and supported at {path}:1" in message
    assert "nothing imported" in message
    # Two people may label one item differently: both labels are theirs.
    path.write_text(
        json.dumps({**row, "who": "ann"}) + "\n" + json.dumps({**row, "who": "bo", "label": "unsupported"}) + "\n"
    )
    assert [(r.who, r.label) for r in read_label_file(path)] == [("ann", "supported"), ("bo", "unsupported")]


def test_one_item_per_distinct_judgement_across_metrics_and_configurations():
    from ragassay.judge.calibration.labels import JudgedConfiguration, judged_items

    passage = "Beeswax melts between 62 and 64 degrees Celsius."
    statement = "Beeswax melts at about 63 degrees."

    def run(label: str, rows: list[tuple]) -> JudgedConfiguration:
        judgments = pl.DataFrame(
            [
                {
                    "query_collection": "c",
                    "query_id": "q1",
                    "metric": metric,
                    "statement": text,
                    "context": context,
                    "cited_sources": cited,
                    "verdict": verdict,
                    "p_supported": 0.9 if verdict == "supported" else 0.1,
                }
                for metric, text, context, cited, verdict in rows
            ],
            schema_overrides={"cited_sources": pl.List(pl.Int64)},
        )
        answers = pl.DataFrame([{"query_collection": "c", "query_id": "q1", "question": "When?", "answer": "..."}])
        return JudgedConfiguration(label, answers, judgments, "m", "p", 0.85)

    one_source = [
        ("faithfulness", statement, f"[1] {passage}", [1], "supported"),
        # The same statement against its cited source (the one passage): the same judgement.
        ("citation_precision", statement, passage, [1], "supported"),
        ("faithfulness", "It smells of honey.", f"[1] {passage}", [], "unsupported"),
    ]
    # Another configuration with the same passage and two sources: against both passages it is
    # another judgement; its citation of the first passage alone is the one above.
    two_sources = [
        ("faithfulness", statement, f"[1] {passage}\n[2] Wax is made by workers.", [1], "supported"),
        ("citation_precision", statement, f"  {passage} ", [1], "supported"),
        ("citation_precision", statement, "Wax is made by workers.", [2], "unsupported"),
    ]
    items = judged_items("b", [run("a", one_source), run("b", two_sources)], 6, 0)
    assert [(i.configuration, i.metric, i.context) for i in items] == [
        ("a", "faithfulness", f"[1] {passage}"),
        ("a", "faithfulness", f"[1] {passage}"),
        ("b", "faithfulness", f"[1] {passage}\n[2] Wax is made by workers."),
        ("b", "citation_precision", "Wax is made by workers."),
    ]
    assert items[1].statement == "It smells of honey."
