"""Issue 58, case 7: two `golden generate` runs with one seed on one collection drew the same pages
and both drafted every one (the model's work done twice). Each now claims a page before drafting
it; the other passes over it. And commands started at once raced on creating Prefect's and
MLflow's databases, living only through retries: they now take turns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from ragassay.golden.claims import claim_file, claimed_page
from ragassay.store.workspace import collection_paths
from tests.conftest import REPO, SAMPLE

RAGASSAY = str(Path(sys.executable).parent / "ragassay")


def test_a_page_claimed_by_a_live_process_is_passed_over_and_a_dead_ones_claim_is_taken(tmp_path):
    paths = collection_paths(tmp_path, "sample", must_exist=False)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        claim = claim_file(paths, "questions\0" + "7", "doc-1#0")
        claim.parent.mkdir(parents=True)
        claim.write_text(json.dumps({"pid": holder.pid, "host": os.uname().nodename, "since": time.time()}))
        with claimed_page(paths, "questions\0" + "7", "doc-1#0", lambda: False) as mine:
            assert not mine and claim.exists(), "a live process's claim stays its own"
    finally:
        holder.kill()
        holder.wait()
    with claimed_page(paths, "questions\0" + "7", "doc-1#0", lambda: False) as mine:
        assert mine and json.loads(claim.read_text())["pid"] == os.getpid(), "a dead process's claim is taken"
    assert not claim.exists(), "a claim ends with its draft"
    with claimed_page(paths, "questions\0" + "7", "doc-1#0", lambda: True) as mine:
        assert not mine, "a page another run logged is not drafted again"


@pytest.mark.slow
@pytest.mark.flows
def test_two_generations_with_one_seed_at_once_draft_each_page_once(tmp_path):
    from ragassay.golden.store import load_golden
    from tests.helpers import build_collection

    home = tmp_path / "workspace"
    build_collection(home, "sample", (SAMPLE / "corpus",))
    command = [RAGASSAY, "golden", "generate", "-c", "sample", "--count", "1", "--seed", "11"]
    command += ["--model", "smollm2", "--judge-model", "smollm2", "--json"]
    env = {**os.environ, "RAGASSAY_HOME": str(home)}
    runs = [subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    runs.append(subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [stderr[-2000:] for _, stderr in outputs]
    reports = [json.loads(stdout) for stdout, _ in outputs]
    paths = collection_paths(home, "sample")
    log = pl.read_parquet(paths.generation_log)
    assert log["chunk_id"].is_unique().all(), "no page was drafted twice"
    assert log.height == sum(r["attempted"] for r in reports)
    # Which one passes over the other's pages depends on timing (claimed_elsewhere, or skipped as
    # logged when it started later): either way no page is drafted twice.
    generated = load_golden(paths).filter(pl.col("origin") == "generated")
    assert sorted(generated["entry_id"].to_list()) == sorted(e for r in reports for e in r["accepted"])
    assert not list((home / "locks" / "claims").rglob("*.json")), "every claim ended with its draft"


STARTING = """
import sys
from pathlib import Path
from ragassay.cli.temporary_server import start_for_this_process
from ragassay import tracking
url = start_for_this_process()
experiments = tracking.client(Path(sys.argv[1])).search_experiments()
print(url, len(experiments))
"""


@pytest.mark.slow
def test_commands_started_at_once_on_new_databases_start_first_time_without_retries(tmp_path):
    """Three processes at once, each starting a temporary Prefect server on one new Prefect
    database and opening one new workspace's MLflow store: before, a server died migrating
    ("Application startup failed", then another attempt) and MLflow's table creation failed
    ("table ... already exists") until a retry; now each starts on its first try."""
    env = {key: value for key, value in os.environ.items() if key != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect")
    env.pop("MLFLOW_TRACKING_URI", None)
    home = tmp_path / "workspace"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", STARTING, str(home)],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    for run, (stdout, stderr) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, stderr[-3000:]
        assert stdout.startswith("http://127.0.0.1:") and stdout.split()[1] == "1", stdout
        assert "startup failed" not in stderr and "Traceback" not in stderr, stderr[-3000:]
