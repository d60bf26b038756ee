"""Faults a workspace meets (issue 37): a delete during an ingest, odd characters in the
workspace's path, labels imported twice, YAML that expands, exports into missing folders, damaged
golden tables, and refusals that must name what to change. Each case failed on the main it was
found on; RELIABILITY.md has a row per case."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ragassay.errors import CollectionDeleted
from ragassay.store.workspace import collection_paths, delete_collection, list_collections, load_documents
from tests.conftest import REPO
from tests.helpers import ingest

RAGASSAY = str(Path(sys.executable).parent / "ragassay")

# Rounds of the delete-during-ingest race, each with its own seeded delay.
RACE_ROUNDS = 12
RACE_SEED = 37


def _notes(root: Path, count: int, prefix: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        (root / f"{prefix}-{number:04d}.txt").write_text(f"Note {prefix} {number}: hive {number} was inspected.\n")
    return root


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
    # The seeded delays reach the ingest at more than one of its stages.
    assert sum(1 for count in outcomes.values() if count) >= 2, outcomes


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
