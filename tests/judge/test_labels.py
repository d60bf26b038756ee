"""People's labels in the loop, end to end: a real answer batch (a team's recorded answers judged
by the default judge, Qwen2.5 1.5B), its seeded sample stratified by the judge's verdict,
`ragassay judge label` driven in a real pseudo-terminal key by key (undo, quit, resume), the same
sample exported and imported back with file:line errors, `judge calibrate --collection`, and the
next evaluation corrected with the labels."""

from __future__ import annotations

import csv
import json
import os
import re
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
from ragassay.config import AnswerEvalConfig
from ragassay.config_errors import parse_config
from ragassay.golden.store import add_from_file
from ragassay.judge.calibration import labels as labelling
from ragassay.judge.calibration.alignment import AlignedJudge, labels_digest
from ragassay.judge.calibration.labelled_statements import collection_labels
from ragassay.judge.learned_verdict import verdict_version
from ragassay.judge.support_rules import support_threshold_for
from ragassay.metrics.declared import LABELLED_METRICS
from ragassay.store.judge_schemas import JUDGE_LABELS
from ragassay.store.tables import read_table
from ragassay.store.workspace import collection_paths
from tests.helpers import build_collection, report_of

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


@pytest.fixture(autouse=True)
def own_completion_cache(monkeypatch):
    """Overrides conftest's: these tests evaluate the fixture's batch again as a team does, in the
    same workspace and so with its completion cache, where the fixture's verdicts are (a module
    fixture runs before any test's own cache is set)."""
    monkeypatch.delenv("RAGASSAY_CACHE", raising=False)


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
        # The metrics people label (what these tests read): answer relevancy's implied question and
        # the correctness grade would add judge calls nothing here reads.
        metrics=LABELLED_METRICS,
        pairwise=False,
        traces=False,
        home=home,
    )
    report = eval_answers_flow(config)
    return home, config, report


def _runs(home: Path, batch_id: str) -> list[labelling.JudgedConfiguration]:
    from ragassay.judge.calibration.labelled_batches import judged_runs

    return judged_runs(home, batch_id)


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


def _plain(text: str) -> str:
    """What the terminal shows: its text without escape sequences, spacing collapsed."""
    return " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).split())


def _terminal(command: list[str], home: Path, size: tuple[int, int]) -> pexpect.spawn:
    columns, rows = size
    env = {**_env(home), "COLUMNS": str(columns), "LINES": str(rows)}
    return pexpect.spawn(
        command[0], command[1:], env=env, cwd=str(REPO), encoding="utf-8", timeout=120, dimensions=(rows, columns)
    )


def test_labelling_in_a_terminal_key_by_key_with_undo_quit_resume_and_review(labelled_batch):
    home, _, report = labelled_batch
    sample = labelling.draw_sample(report.batch_id, _runs(home, report.batch_id), 6, 0)
    command = [*RAGASSAY, "judge", "label", "--batch", report.batch_id, "--count", "6", "--who", "ana"]
    child = _terminal(command, home, (80, 24))
    child.expect("1/6")
    child.expect("q quit")
    shown = _plain(child.before)
    assert "judged supported" not in shown and "p_supported" not in shown, "the verdict is hidden"
    assert " ".join(sample[0].statement.split()) in shown, "the first statement is shown"
    assert " ".join(sample[0].question.split())[:40] in shown, "and the question it answers"
    assert ("answer " in shown) == (sample[0].metric != "context_recall"), "an answer only where it plays a part"
    child.send(" ")  # the context is one page: it says so and stays
    child.expect("1/6")
    child.expect("the context's last page")
    child.expect("q quit")
    child.send("s")
    child.expect("2/6")
    child.expect("q quit")
    child.send("u")
    child.expect("3/6")
    child.expect("q quit")
    child.send("z")  # takes back the 'u' of the second statement, which is asked again
    child.expect("2/6")
    child.expect("undone")
    child.expect("q quit")
    child.send("x")
    child.expect("2/6")
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

    child = _terminal(command, home, (120, 45))
    child.expect("3/6")
    child.expect("2 of 6 statements already labelled; 4 to go")  # at the foot of the first screen
    child.expect("q quit")
    child.send("s")
    for number, key in zip(range(4, 7), "uus", strict=True):
        child.expect(f"{number}/6")
        child.expect("q quit")
        child.send(key)
    child.expect("4 labelled this session")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert _stored(home).height == 6
    assert read_table(collection_paths(home, "lab").judge_labels, JUDGE_LABELS).height == 6

    # A mistaken label of an earlier session, changed in review.
    child = _terminal([*command, "--review"], home, (80, 24))
    child.expect("your 6 labels of this sample \\(ana\\)")
    child.expect("any key goes through them")
    child.send("n")
    child.expect("1/6")
    child.expect("your label: supported")
    child.expect("q quit")
    child.send("u")
    child.expect("2/6")
    child.expect("#1: supported -> unsupported")
    child.expect("q quit")
    child.send("p")
    child.expect("1/6")
    child.expect("your label: unsupported")
    child.expect("q quit")
    child.send("q")
    child.expect("6 labels reviewed, 1 changed")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    stored = _stored(home)
    assert stored.height == 6, "the label replaced, not added"
    assert stored.filter(pl.col("item_id") == sample[0].item_id)["label"].to_list() == ["unsupported"]


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
    assert calibrated["reused_verdicts"] == len(items), "each label holds this judge's verdict: none asked again"
    assert first.batch_id in calibrated["batches"] and "cy" in calibrated["people"]
    assert 0 <= calibrated["weighted"]["sensitivity_low"] <= calibrated["weighted"]["sensitivity_high"] <= 1
    [run] = [r for r in tracking.find_runs(home, role="calibration") if r.info.run_id == calibrated["mlflow_run_id"]]
    assert first.batch_id in run.data.tags["ragassay.label_batches"] and run.data.tags["ragassay.collections"] == "lab"
    assert calibrated["experiment"] == tracking.experiment_name(["lab"])
    # Four questions are too few to hold whole questions out: the fit is stored, unused, and says why.
    aligned = calibrated["aligned_judge"]
    assert aligned["used"] is False and aligned["reason"].endswith("the plain judge stays")
    stored = json.loads(collection_paths(home, "lab").aligned_judge.read_text())
    assert stored["labels_digest"] == aligned["labels_digest"] == run.data.params["aligned_judge_labels_digest"]
    shown = runner.invoke(app, ["judge", "calibrate", "--collection", "lab", "--target-width", "0.5"], env=_env(home))
    assert shown.exit_code == 0, shown.output
    assert f"labels to narrow batch {first.batch_id}'s corrected faithfulness interval to 0.5" in " ".join(
        shown.output.split()
    )
    budgeted = runner.invoke(
        app, ["judge", "calibrate", "--collection", "lab", "--target-width", "0.5", "--json"], env=_env(home)
    )
    budget = json.loads(budgeted.stdout)["budget"]
    assert budget["batch_id"] == first.batch_id and {r["configuration"] for r in budget["configurations"]} == set(
        ANSWERS
    )
    assert "not used by this collection's evaluations: " + aligned["reason"].split(" (")[0] in " ".join(
        shown.output.split()
    )
    # `judge label --target-width` reads the verdicts stored with the labels, asking no model: the
    # same judge's verdicts, so the same budget as calibrate's.
    from_labels = runner.invoke(
        app,
        [
            *("judge", "label", "--batch", first.batch_id, "--count", "100", "--seed", "7"),
            *("--export", str(tmp_path / "again.jsonl"), "--target-width", "0.5", "--json"),
        ],
        env=_env(home),
    )
    assert from_labels.exit_code == 0, from_labels.output
    [stored_budget] = json.loads(from_labels.stdout)["budgets"]
    assert stored_budget["collection"] == "lab" and stored_budget["left_out"] == 0
    assert stored_budget["configurations"] == budget["configurations"]

    corrected_config = config.model_copy(update={"assertions": ("faithful:faithfulness.corrected_low>=0.0",)})
    second = report_of(eval_answers_flow, corrected_config)
    assert second.judge_calibration.source == "labels" and "people labelled" in second.judge_calibration.description
    faithful = second.metrics["faithful"]
    assert 0.0 <= faithful["faithfulness_corrected_low"] <= faithful["faithfulness_corrected_high"] <= 1.0
    [row] = [r for r in second.intervals if r.configuration == "faithful" and r.metric == "faithfulness"]
    assert row.corrected_low == faithful["faithfulness_corrected_low"]
    assert [(a.assertion, a.value, a.passed) for a in second.assertions] == [
        ("faithful:faithfulness.corrected_low>=0", faithful["faithfulness_corrected_low"], True)
    ]
    logged = tracking.download_table(home, second.parent_run_id, "judge_calibration")
    assert logged["population"].sum() > 0 and set(logged["source"]) == {"labels"}
    child = tracking.client(home).get_run(second.run_ids["faithful"]).data
    assert child.metrics["faithfulness_corrected_low"] == faithful["faithfulness_corrected_low"]
    # The raw interval beside the corrected one, and the child run's own description saying both.
    assert (child.metrics["lo/faithfulness"], child.metrics["hi/faithfulness"]) == (row.ci_low, row.ci_high)
    description = child.tags[tracking.DESCRIPTION_TAG]
    assert description.startswith(f"**answers/faithful: configuration faithful of answer batch {second.batch_id}")
    assert (
        f"| faithfulness | {row.mean:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}], {row.scored} scored; "
        "corrected" in description
    )
    assert "Corrected: what people would have said" in description and "Corrected with this collection's labels" in (
        description
    )
    assert child.params["aligned_judge"] == "none", "the unused aligned judge reads no verdict"


def test_an_aligned_judge_in_use_reads_every_support_verdict_of_the_next_evaluation(labelled_batch):
    """An aligned judge stored as `judge calibrate` stores one (here written by hand, so that it
    is in use whatever the labels: supported exactly when the statement's numbers are in its
    context) is what the next evaluation's support verdicts and its correction come from."""
    home, config, first = labelled_batch
    if collection_labels(home, ["lab"]).height == 0:  # this test run alone
        items = labelling.draw_sample(first.batch_id, _runs(home, first.batch_id), 100, 7)
        labelling.store_labels(
            home, "lab", [labelling.label_row(item, "supported", "dee", datetime.now(UTC)) for item in items]
        )
    rows = labelling.labelled_statements(collection_labels(home, ["lab"]))
    aligned = AlignedJudge(
        "lab",
        first.judge_model,
        verdict_version(first.judge_model),
        support_threshold_for(first.judge_model),
        labels_digest((row["item_id"], row["label"] == "supported") for row in rows),
        True,
        "written by the test",
        mean=(0.0, 0.0, 0.0),
        scale=(1.0, 1.0, 1.0),
        coefficients=(0.0, 0.0, 8.0),  # numbers_found alone
        intercept=-4.0,
    )
    path = collection_paths(home, "lab").aligned_judge
    path.write_text(json.dumps(aligned.as_json()))
    try:
        report = eval_answers_flow(config)
    finally:
        path.unlink()
    [described] = report.judge_calibration.aligned_judges
    assert described.startswith("lab: aligned judge"), "the correction reads the aligned judge's verdicts too"
    judgments = tracking.download_table(home, report.run_ids["inventive"], "judgments")
    support = judgments.filter(pl.col("metric").is_in(labelling.SUPPORT_METRICS) & pl.col("p_supported").is_not_null())
    assert support.height > 0
    for row in support.iter_rows(named=True):
        expected = aligned.supported(row["statement"], row["context"], row["p_supported"])
        assert row["verdict"] == ("supported" if expected else "unsupported"), row
    [eggs] = support.filter((pl.col("metric") == "faithfulness") & pl.col("statement").str.contains("9,000")).rows(
        named=True
    )
    assert eggs["verdict"] == "unsupported", "9,000 is not in the queen's passage"
    params = tracking.client(home).get_run(report.run_ids["inventive"]).data.params
    assert params["aligned_judge"].startswith("lab: aligned judge")


OUTSIDE = [  # (document, statement, label): a team's labels written elsewhere, in the calibration shape
    ("queen.txt", "A queen bee mates once, early in life.", "supported"),
    ("queen.txt", "A queen bee mates every spring.", "unsupported"),
    ("smoke.txt", "The alarm pheromone smells like bananas.", "supported"),
    ("wax.txt", "Workers make beeswax from glands under the abdomen.", "supported"),
    ("wax.txt", "Beeswax is made from pollen.", "unsupported"),
]


def _calibration_file(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text(
        "".join(
            json.dumps({"context": DOCUMENTS[doc], "statement": statement, "label": label, "question": None}) + "\n"
            for doc, statement, label in rows
        )
    )
    return path


def test_labels_written_elsewhere_are_imported_and_the_judge_as_used_is_measured_on_others(labelled_batch, tmp_path):
    home, _, _ = labelled_batch
    env = _env(home)
    before = _stored(home).height
    contradicting = _calibration_file(tmp_path / "contradicting.jsonl", [OUTSIDE[0], (*OUTSIDE[0][:2], "unsupported")])
    refused = runner.invoke(
        app, ["judge", "label", "--import", str(contradicting), "--collection", "lab", "--who", "eve"], env=env
    )
    assert refused.exit_code == 2
    assert f"{contradicting}:2" in refused.output and f"{contradicting}:1" in refused.output
    assert _stored(home).height == before, "nothing stored from a refused file"

    outside = _calibration_file(tmp_path / "outside.jsonl", OUTSIDE[:3])
    imported = runner.invoke(
        app, ["judge", "label", "--import", str(outside), "--collection", "lab", "--who", "eve", "--json"], env=env
    )
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["added"] == 3
    stored = _stored(home).filter(pl.col("who") == "eve")
    assert set(stored["metric"]) == {"imported"} and stored["sample_id"].str.starts_with("imported/").all()
    again = runner.invoke(
        app, ["judge", "label", "--import", str(outside), "--collection", "lab", "--who", "eve", "--json"], env=env
    )
    assert json.loads(again.stdout)["unchanged"] == 3, "the same file twice is the same labels"

    overlapping = runner.invoke(
        app, ["judge", "calibrate", "--labels", str(outside), "--collection", "lab", "--json"], env=env
    )
    assert overlapping.exit_code == 2
    assert "also among the labels collection 'lab' holds" in " ".join(overlapping.output.split())

    held_out = _calibration_file(tmp_path / "held_out.jsonl", OUTSIDE[3:])
    result = runner.invoke(
        app, ["judge", "calibrate", "--labels", str(held_out), "--collection", "lab", "--json"], env=env
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    used = report["as_used"]
    assert used["collection"] == "lab" and used["aligned"] is False and used["why"]
    assert used["balanced_accuracy"] == report["balanced_accuracy"], "without an aligned judge, the plain one is used"

    # With an aligned judge in use for this collection (written by hand: unsupported whatever P), the
    # judge as used is that one, beside the plain figures.
    rows = labelling.labelled_statements(collection_labels(home, ["lab"]))
    aligned = AlignedJudge(
        "lab",
        report["judge_model"],
        verdict_version(report["judge_model"]),
        report["support_threshold"],
        labels_digest((row["item_id"], row["label"] == "supported") for row in rows),
        True,
        "written by the test",
        mean=(0.0, 0.0, 0.0),
        scale=(1.0, 1.0, 1.0),
        coefficients=(0.0, 0.0, 0.0),
        intercept=-1.0,
    )
    path = collection_paths(home, "lab").aligned_judge
    path.write_text(json.dumps(aligned.as_json()))
    try:
        shown = runner.invoke(app, ["judge", "calibrate", "--labels", str(held_out), "--collection", "lab"], env=env)
        result = runner.invoke(
            app, ["judge", "calibrate", "--labels", str(held_out), "--collection", "lab", "--json"], env=env
        )
    finally:
        path.unlink()
    used = json.loads(result.stdout)["as_used"]
    assert used["aligned"] is True and used["recall_supported"] == 0.0 and used["recall_unsupported"] == 1.0
    assert "as collection lab's evaluations use it (its aligned judge" in " ".join(shown.output.split())

    # The collection's own calibration says where its labels come from: the file is not a batch.
    calibrated = runner.invoke(app, ["judge", "calibrate", "--collection", "lab"], env=env)
    assert calibrated.exit_code == 0, calibrated.output
    origin = " ".join(calibrated.output.split())
    assert "imported from 1 file)" in origin and "sampled from 0" not in origin
