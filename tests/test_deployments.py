"""prefect.yaml deploys, and a worker runs the sample-ingest deployment end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PREFECT = str(Path(sys.executable).parent / "prefect")


def prefect_cli(*args: str, env: dict[str, str], timeout: int = 300) -> subprocess.CompletedProcess:
    result = subprocess.run([PREFECT, "--no-prompt", *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"prefect {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_deployments_register_and_a_worker_runs_one(home):
    from prefect.settings import PREFECT_API_URL

    from ragassay.store.workspace import collection_paths, load_documents

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "RAGASSAY_REPO": str(REPO), "RAGASSAY_HOME": str(home)}
    prefect_cli("work-pool", "create", "ragassay-local", "--type", "process", "--overwrite", env=env)
    deployed = prefect_cli("deploy", "--all", env=env)
    for name in (
        "ingest/sample-ingest", "index/sample-index-nightly", "eval-retrieval/sample-eval-retrieval-nightly",
        "eval-answers/sample-eval-answers-weekly", "run-cases/sample-cases",
    ):
        assert name in deployed.stdout

    prefect_cli("deployment", "run", "ingest/sample-ingest", env=env)
    prefect_cli("worker", "start", "--pool", "ragassay-local", "--run-once", env=env)

    documents = load_documents(collection_paths(home, "sample"))
    assert documents.height == len([p for p in (REPO / "data" / "sample" / "corpus").rglob("*") if p.is_file()])
