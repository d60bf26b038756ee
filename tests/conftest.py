"""Shared fixtures: a temporary workspace, Prefect's test server for the tests marked `flows`, and
the indexed sample corpus.

Markers (registered in pyproject.toml): `flows` runs Prefect flows (the session's test server starts
for the first one); `slow` takes over ~4 s in the suite's run, so that `bash scripts/test.sh -m
"not slow"`, the fast loop, stays at most 15% of the suite's time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# The commands tests start as subprocesses (the session's test server is this process's setting,
# which they do not inherit) share one Prefect server, as a user's do: the next command within 30 s
# finds it instead of starting its own. Tests that kill servers or count processes use a Prefect
# home of their own and idle 0 (tests/test_reliability.py, tests/test_everyday_faults.py).
os.environ.setdefault("RAGASSAY_PREFECT_SERVER_IDLE_SECONDS", "30")
# pytest-xdist runs test files in several worker processes at once, each loading its own models:
# each gets its share of the cores, as a Dask LocalCluster's workers do (llm/threads.default_threads).
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault(
        "RAGASSAY_MODEL_THREADS",
        str(max(1, len(os.sched_getaffinity(0)) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))),
    )


def _outer_models_dir() -> Path:
    """The models folder of the environment the suite was started from, where the set-up command
    assembled Qwen2.5 1.5B (tests run in their own workspaces, which share these 1 GB)."""
    from ragassay.environment import models_dir

    return models_dir()


OUTER_MODELS_DIR = _outer_models_dir()


@pytest.fixture(autouse=True)
def shared_models(monkeypatch):
    """Every test's workspace finds the assembled models of the outer environment."""
    monkeypatch.setenv("RAGASSAY_MODELS", str(OUTER_MODELS_DIR))


@pytest.fixture(autouse=True)
def own_completion_cache(tmp_path, monkeypatch):
    """Each test remembers model calls in its own completion cache: workspaces shared by several
    tests (sample_home) must not serve one test's answers to another test that counts model calls."""
    monkeypatch.setenv("RAGASSAY_CACHE", str(tmp_path / "completion-cache"))


@pytest.fixture
def outer_models_dir() -> Path:
    return OUTER_MODELS_DIR


@pytest.fixture(scope="session", autouse=True)
def commands_prefect_home(tmp_path_factory):
    """The commands tests start as subprocesses keep their Prefect database (and the server they
    share) in this test run's temporary folder, not in the user's ~/.prefect: every run starts
    from an empty database, as CI's does, and leaves nothing in the home folder (pytest keeps the
    last three runs' folders). pytest-xdist's workers share their run's folder, so they share one
    server, as a user's commands do."""
    base = tmp_path_factory.getbasetemp()
    run_folder = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    os.environ.setdefault("PREFECT_HOME", str(run_folder / "prefect-home"))


@pytest.fixture(scope="session", autouse=True)
def no_temporary_prefect_server():
    """Prefect may not start a temporary server of its own in this process: a flow run by a test
    not marked `flows` fails at once ("No Prefect API URL"), instead of quietly starting a server
    (seconds per flow) that the marker exists to share. Commands started as subprocesses are not
    affected (they start their own, as a user's command does)."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, PREFECT_SERVER_EPHEMERAL_ENABLED, temporary_settings

    # No flow-run heartbeats in this process: they let a server mark a deployment's run crashed when
    # its heartbeats stop (every 180 s), which no flow here runs long enough to send, and each flow
    # waits at its end for the heartbeat thread's one-second sleep (about 0.5-1 s per flow and
    # subflow run). The deployment test's worker keeps Prefect's default.
    with temporary_settings({PREFECT_SERVER_EPHEMERAL_ENABLED: False, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


@pytest.fixture(scope="session")
def prefect_server(no_temporary_prefect_server):
    """A real, temporary Prefect API and database, started for the first test marked `flows` and
    shared by all of them; a run of tests that runs no flow never starts it."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


# The test files that take longest, longest first (seconds of tests on the 2-core reference
# machine, `--durations`; BENCHMARKS.md, "The test suite"). The test command hands each worker a
# whole file (`--dist loadfile --no-loadscope-reorder`) in collection order: started first, the
# long files finish together instead of one of them running alone at the end (longest first is
# the classic rule for spreading jobs over machines). A file not listed keeps its place after them.
LONGEST_FIRST = (
    "tests/test_reliability.py",  # 175 s
    "tests/judge/test_labels.py",  # 195 s alone: a batch judged by Qwen, the label CLI in a terminal
    "tests/evaluation/test_task_runners.py",  # 130 s
    "tests/test_deployments.py",  # 125 s
    "tests/test_pipeline.py",  # 90 s
    "tests/gates/test_cases_and_calibration.py",  # 90 s
    "tests/evaluation/test_eval_answers.py",  # 80 s
    "tests/parity/test_pytrec_eval_parity.py",  # 55 s with ../shared/datasets
    "tests/systems/test_systems_under_test.py",  # 50 s
    "tests/golden/test_generation.py",  # 45 s
    "tests/judge/test_judge.py",  # 40 s
    "tests/metrics/test_judge_error.py",  # 30 s: 8 x 400 seeded worlds of the corrected interval
)


def pytest_collection_modifyitems(items):
    rank = {path: position for position, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: order kept within
    # The server comes first among a marked test's fixtures: module fixtures that run flows (an
    # evaluation shared by a module's tests) are set up before any function-scoped fixture could
    # ask for it.
    for item in items:
        if item.get_closest_marker("flows") and "prefect_server" not in item.fixturenames:
            item.fixturenames.insert(0, "prefect_server")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """An empty workspace for one test."""
    workspace = tmp_path / "workspace"
    monkeypatch.setenv("RAGASSAY_HOME", str(workspace))
    return workspace


@pytest.fixture(scope="session")
def sample_home(tmp_path_factory) -> Path:
    """A workspace holding the sample corpus, ingested and indexed once for the whole session
    through the library (the flows' own tests run the flows)."""
    from tests.helpers import build_collection

    workspace = tmp_path_factory.mktemp("sample-workspace")
    build_collection(workspace, "sample", (SAMPLE / "corpus",))
    return workspace


@pytest.fixture(scope="session")
def sample_golden() -> list[dict]:
    return [json.loads(line) for line in (SAMPLE / "golden.jsonl").read_text().splitlines() if line.strip()]
