"""People's labels in the loop, end to end: a real answer batch (a team's recorded answers judged
by the default judge, Qwen2.5 1.5B), its seeded sample stratified by the judge's verdict,
`ragassay judge label` driven in a real pseudo-terminal key by key (undo, quit, resume), the same
sample exported and imported back with file:line errors, `judge calibrate --collection`, and the
next evaluation corrected with the labels."""

from __future__ import annotations

import csv
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pexpect
import polars as pl
import pytest
from typer.testing import CliRunner

from flows.eval_answers import eval_answers_flow
from ragassay import tracking
from ragassay.cli.main import app
from ragassay.config import AnswerEvalConfig, parse_config
from ragassay.golden.store import add_from_file
from ragassay.judge import labels as labelling
from ragassay.judge.calibration import collection_labels
from ragassay.store.schemas import JUDGE_LABELS
from ragassay.store.tables import read_table
from ragassay.store.workspace import collection_paths
from tests.helpers import build_collection

pytestmark = [pytest.mark.flows, pytest.mark.slow]

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
RAGASSAY = [str(Path(sys.executable).with_name("ragassay"))]

DOCUMENTS = {
    "queen.txt": "A queen bee lays up to 2,000 eggs a day at the height of summer. She mates once, early in life, "
    "and can live for several years.",
    "smoke.txt": "Smoke masks the alarm pheromone isopentyl acetate, which smells like bananas, so guard bees do "
    "not alert the colony.",
    "wax.txt": "Beeswax melts between 62 and 64 degrees Celsius. Workers make it from glands under the abdomen.",
    "space.txt": "The bee space of a Langstroth hive is about 9.5 mm: a gap bees leave open instead of filling it.",
}
QUESTIONS = [
    ("q1", "How many eggs does a queen lay a day in summer?", "queen.txt", "A queen lays up to 2,000 eggs a day."),
    ("q2", "What does smoke mask?", "smoke.txt", "Smoke masks the alarm pheromone isopentyl acetate."),
    ("q3", "When does beeswax melt?", "wax.txt", "Beeswax melts between 62 and 64 degrees Celsius."),
    ("q4", "How wide is the bee space?", "space.txt", "The bee space is about 9.5 mm."),
]
# A team's two systems: one answers from its context, the other adds what the context does not say.
ANSWERS = {
    "faithful": {
        "q1": "A queen lays up to 2,000 eggs a day at the height of summer.",
        "q2": "Smoke masks the alarm pheromone isopentyl acetate.",
        "q3": "Beeswax melts between 62 and 64 degrees Celsius.",
        "q4": "The bee space is about 9.5 mm.",
    },
    "inventive": {
        "q1": "A queen lays 9,000 eggs a day, and she lives for thirty years.",
        "q2": "Smoke puts the bees to sleep for an hour.",
        "q3": "Beeswax melts at 120 degrees Celsius, like lead.",
        "q4": "The bee space is ten centimetres wide.",
    },
}


@pytest.fixture(scope="module")
def labelled_batch(tmp_path_factory):
    """A collection of four documents and questions; each system's recorded answers judged by the
    default judge as one answer batch."""
    root = tmp_path_factory.mktemp("labels")
    home, corpus = root / "workspace", root / "corpus"
    corpus.mkdir()
    for name, text in DOCUMENTS.items():
        (corpus / name).write_text(text)
    build_collection(home, "lab", (corpus,))
    golden = root / "golden.jsonl"
    golden.write_text(
        "".join(
            json.dumps({"id": qid, "question": q, "expected_document_ids": [doc], "reference_answer": ref}) + "\n"
            for qid, q, doc, ref in QUESTIONS
        )
    )
    add_from_file(home, "lab", golden)
    configurations = []
    for label, answers in ANSWERS.items():
        records = root / f"{label}.jsonl"
        records.write_text(
            "".join(
                json.dumps(
                    {
                        "query_id": qid,
                        "question": q,
                        "answer": answers[qid],
                        "retrieved": [{"doc_id": doc, "text": DOCUMENTS[doc]}],
                    }
                )
                + "\n"
                for qid, q, doc, _ in QUESTIONS
            )
        )
        configurations.append({"label": label, "system": {"kind": "records", "path": str(records)}})
    config = parse_config(
        AnswerEvalConfig,
        collections=["lab"],
        configurations=configurations,
        pairwise=False,
        traces=False,
        home=home,
    )
    report = eval_answers_flow(config)
    return home, config, report


def _runs(home: Path, batch_id: str) -> list[labelling.JudgedConfiguration]:
    from ragassay.cli.judge import _judged_runs

    return _judged_runs(home, batch_id)


def _stored(home: Path) -> pl.DataFrame:
    return collection_labels(home, ["lab"])


def _env(home: Path) -> dict:
    return {**os.environ, "RAGASSAY_HOME": str(home), "COLUMNS": "120"}


def test_a_sample_is_seeded_stratified_by_verdict_and_each_judgement_is_one_item(labelled_batch):
    home, _, report = labelled_batch
    runs = _runs(home, report.batch_id)
    population = labelling.judged_items(report.batch_id, runs, 6, 0)
    # Context recall judges the same reference statements against the same context in both
    # configurations: one item each, not two.
    recall = [item for item in population if item.metric == "context_recall"]
    assert len(recall) == len({(i.statement, i.context) for i in recall}) == len(QUESTIONS)
    verdicts = {verdict: sum(item.stratum == verdict for item in population) for verdict in labelling.VERDICTS}
    assert verdicts["supported"] and verdicts["unsupported"], "the judge says both for these two systems"
    sample = labelling.draw_sample(report.batch_id, runs, 6, 0)
    assert sample == labelling.draw_sample(report.batch_id, runs, 6, 0), "the same batch, count and seed"
    assert sample != labelling.draw_sample(report.batch_id, runs, 6, 1)
    assert len(sample) == 6 and {item.stratum for item in sample} == set(labelling.VERDICTS)
    for item in sample:
        assert item.stratum_size == verdicts[item.stratum] and item.judge_model.startswith("qwen2.5-1.5b:")
        assert item.context and item.question and item.sample_id == f"{report.batch_id}/seed-0/count-6"


def test_labelling_in_a_terminal_key_by_key_with_undo_quit_and_resume(labelled_batch):
    home, _, report = labelled_batch
    sample = labelling.draw_sample(report.batch_id, _runs(home, report.batch_id), 6, 0)
    command = [*RAGASSAY, "judge", "label", "--batch", report.batch_id, "--count", "6", "--who", "ana"]
    child = pexpect.spawn(command[0], command[1:], env=_env(home), cwd=str(REPO), encoding="utf-8", timeout=120)
    child.expect("1/6")
    child.expect("q quit")
    assert "judged supported" not in child.before and "p_supported" not in child.before, "the verdict is hidden"
    assert " ".join(sample[0].statement.split()) in " ".join(child.before.split()), "the first statement is shown"
    child.send("s")
    child.expect("2/6")
    child.expect("q quit")
    child.send("u")
    child.expect("3/6")
    child.expect("q quit")
    child.send("z")  # takes back the 'u' of the second statement, which is asked again
    child.expect("undone")
    child.expect("2/6")
    child.expect("q quit")
    child.send("x")
    child.expect("keys: s supported")
    child.send("k")
    child.expect("3/6")
    child.expect("q quit")
    child.send("q")
    child.expect("2 labelled this session \\(1 supported, 0 unsupported, 1 skipped\\); 4 of 6 left")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    stored = _stored(home)
    assert stored.sort("labelled_at")["label"].to_list() == ["supported", "skipped"]
    assert stored["item_id"].to_list() == [sample[0].item_id, sample[1].item_id] and set(stored["who"]) == {"ana"}
    assert stored["judge_verdict"].to_list() == [sample[0].judge_verdict, sample[1].judge_verdict]

    child = pexpect.spawn(command[0], command[1:], env=_env(home), cwd=str(REPO), encoding="utf-8", timeout=120)
    child.expect("2 of 6 statements already labelled; 4 to go")
    for number, key in zip(range(3, 7), "suu", strict=False):
        child.expect(f"{number}/6")
        child.expect("q quit")
        child.send(key)
    child.expect("6/6")
    child.expect("q quit")
    child.send("s")
    child.expect("4 labelled this session")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert _stored(home).height == 6
    assert read_table(collection_paths(home, "lab").judge_labels, JUDGE_LABELS).height == 6


def test_without_a_terminal_it_says_to_export(labelled_batch):
    home, _, report = labelled_batch
    result = runner.invoke(app, ["judge", "label", "--batch", report.batch_id], env={"RAGASSAY_HOME": str(home)})
    assert result.exit_code == 2 and "--export FILE" in result.output


def test_a_sample_exported_and_imported_back_with_strict_validation(labelled_batch, tmp_path):
    home, _, report = labelled_batch
    env = {"RAGASSAY_HOME": str(home)}
    exported = tmp_path / "sample.csv"
    args = ["judge", "label", "--batch", report.batch_id, "--count", "8", "--seed", "3"]
    result = runner.invoke(app, [*args, "--export", str(exported)], env=env)
    assert result.exit_code == 0, result.output
    with exported.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 8 and "p_supported" not in rows[0] and "judge_verdict" not in rows[0]
    before = _stored(home).height
    for row in rows:  # labelled elsewhere by one person, who fills in these three
        row["label"], row["who"] = "", ""
    rows[0]["label"], rows[1]["label"], rows[2]["label"] = "supported", "maybe", "unsupported"
    rows[3]["statement"] = "edited after export"
    _write_csv(exported, rows)
    result = runner.invoke(app, ["judge", "label", "--import", str(exported), "--who", "bo"], env=env)
    assert result.exit_code == 2
    assert f"{exported}:3: field 'label' must be supported, unsupported, skip or empty, not 'maybe'" in result.output
    assert _stored(home).height == before, "nothing stored from a refused file"

    rows[1]["label"], rows[3]["label"] = "skip", ""
    _write_csv(exported, rows)
    result = runner.invoke(app, ["judge", "label", "--import", str(exported), "--who", "bo", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == 3 and _stored(home).height == before + 3

    # The same file again changes nothing; another label for the same item by the same person is
    # refused unless asked to replace it.
    result = runner.invoke(app, ["judge", "label", "--import", str(exported), "--who", "bo", "--json"], env=env)
    assert json.loads(result.stdout) | {"path": None} == {
        "path": None,
        "collections": ["lab"],
        "added": 0,
        "replaced": 0,
        "unchanged": 3,
    }
    rows[0]["label"] = "unsupported"
    jsonl = tmp_path / "sample.jsonl"
    jsonl.write_text("".join(json.dumps({**row, "cited_sources": []}) + "\n" for row in rows))
    result = runner.invoke(app, ["judge", "label", "--import", str(jsonl), "--who", "bo"], env=env)
    assert result.exit_code == 2 and "already labelled 'supported' by bo" in result.output
    result = runner.invoke(app, ["judge", "label", "--import", str(jsonl), "--who", "bo", "--replace"], env=env)
    assert result.exit_code == 0 and "1 replaced" in result.output
    mine = _stored(home).filter(pl.col("who") == "bo")
    assert mine.height == 3 and mine.filter(pl.col("item_id") == rows[0]["item_id"])["label"].to_list() == [
        "unsupported"
    ]


def _write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_calibrate_on_the_collections_labels_and_the_next_evaluation_is_corrected(labelled_batch, tmp_path):
    home, config, first = labelled_batch
    # Labels as a person would give them: each faithful system's statement supported, each
    # inventive one not (every judged statement of the batch, so the labels cover both strata).
    items = labelling.draw_sample(first.batch_id, _runs(home, first.batch_id), 100, 7)
    truth = {
        item.item_id: "unsupported"
        if item.configuration == "inventive" and item.metric != "context_recall"
        else "supported"
        for item in items
    }
    rows = [labelling.label_row(item, truth[item.item_id], "cy", datetime.now(UTC)) for item in items]
    labelling.store_labels(home, "lab", rows)
    result = runner.invoke(
        app, ["judge", "calibrate", "--collection", "lab", "--json"], env={"RAGASSAY_HOME": str(home)}
    )
    assert result.exit_code == 0, result.output
    calibrated = json.loads(result.stdout)
    assert calibrated["labelled"] == len(items) and calibrated["collection"] == "lab"
    assert first.batch_id in calibrated["batches"] and "cy" in calibrated["people"]
    assert 0 <= calibrated["weighted"]["sensitivity_low"] <= calibrated["weighted"]["sensitivity_high"] <= 1
    [run] = [r for r in tracking.find_runs(home, role="calibration") if r.info.run_id == calibrated["mlflow_run_id"]]
    assert first.batch_id in run.data.tags["ragassay.label_batches"] and run.data.tags["ragassay.collections"] == "lab"
    assert calibrated["experiment"] == tracking.experiment_name(["lab"])

    corrected_config = config.model_copy(update={"assertions": ("faithful:faithfulness.corrected_low>=0.0",)})
    second = eval_answers_flow(corrected_config)
    assert (
        second.judge_calibration["source"] == "labels" and "people labelled" in second.judge_calibration["description"]
    )
    faithful = second.metrics["faithful"]
    assert 0.0 <= faithful["faithfulness_corrected_low"] <= faithful["faithfulness_corrected_high"] <= 1.0
    [row] = [r for r in second.intervals if r["configuration"] == "faithful" and r["metric"] == "faithfulness"]
    assert row["corrected_low"] == faithful["faithfulness_corrected_low"]
    assert second.assertions == [
        {
            "assertion": "faithful:faithfulness.corrected_low>=0",
            "value": faithful["faithfulness_corrected_low"],
            "passed": True,
        }
    ]
    logged = tracking.download_table(home, second.parent_run_id, "judge_calibration")
    assert logged["population"].sum() > 0 and set(logged["source"]) == {"labels"}
    child = tracking.client(home).get_run(second.run_ids["faithful"]).data.metrics
    assert child["faithfulness_corrected_low"] == faithful["faithfulness_corrected_low"]
