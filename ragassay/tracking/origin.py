"""What a run says of its settings and its origin: nested settings as dotted MLflow params (with
credentials masked), and where the run came from (user, git commit, source, Prefect flow run)."""

from __future__ import annotations

import getpass
import json
import subprocess
from pathlib import Path

from ragassay.redaction import redact
from ragassay.tracking.tags import TAG_PREFECT_FLOW_RUN, TAG_PREFECT_FLOW_RUN_URL


def flatten_params(value: object, prefix: str = "") -> dict[str, str]:
    """Nested dicts and lists as dotted MLflow params (`config.fusion.k` -> '60')."""
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, inner in value.items():
            flat.update(flatten_params(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if isinstance(value, (list, tuple)):
        return {prefix: redact(json.dumps(list(value), default=str))}
    # A model server's URL may carry credentials: MLflow params are read by everyone who can open them.
    return {prefix: "" if value is None else redact(str(value))}


def git_commit(folder: Path) -> str | None:
    """The commit checked out in folder (where the run was started), or None outside a git repository."""
    try:
        result = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def origin_tags(
    source: str, prefect_flow_run_id: str | None = None, prefect_flow_run_url: str | None = None
) -> dict[str, str]:
    """Where a run came from, as MLflow's own tags (user, source, git commit: its UI shows them)
    and the Prefect flow run that made it."""
    tags = {"mlflow.user": getpass.getuser(), "mlflow.source.name": source, "mlflow.source.type": "JOB"}
    commit = git_commit(Path.cwd())
    if commit:
        tags["mlflow.source.git.commit"] = commit
    if prefect_flow_run_id:
        tags[TAG_PREFECT_FLOW_RUN] = prefect_flow_run_id
    if prefect_flow_run_url:
        tags[TAG_PREFECT_FLOW_RUN_URL] = prefect_flow_run_url
    return tags
