"""Shared fixtures: a temporary workspace, Prefect's test harness, and the indexed sample corpus."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def _outer_models_dir() -> Path:
    """The models folder of the environment the suite was started from, where the set-up command
    assembled Qwen2.5 1.5B (tests run in their own workspaces, which share these 1 GB)."""
    from ragassay.store.workspace import models_dir, workspace_home

    return models_dir(workspace_home())


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
def prefect_harness():
    """Every flow in the suite runs on a real, temporary Prefect API and database."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """An empty workspace for one test."""
    workspace = tmp_path / "workspace"
    monkeypatch.setenv("RAGASSAY_HOME", str(workspace))
    return workspace


@pytest.fixture(scope="session")
def sample_home(tmp_path_factory) -> Path:
    """A workspace holding the sample corpus, ingested and indexed once for the whole session."""
    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay.config import IndexConfig, IngestConfig

    workspace = tmp_path_factory.mktemp("sample-workspace")
    ingest_flow(IngestConfig(collection="sample", paths=(SAMPLE / "corpus",), home=workspace))
    index_flow(IndexConfig(collection="sample", home=workspace))
    return workspace


@pytest.fixture(scope="session")
def sample_golden() -> list[dict]:
    return [json.loads(line) for line in (SAMPLE / "golden.jsonl").read_text().splitlines() if line.strip()]
