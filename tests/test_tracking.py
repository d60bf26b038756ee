"""The workspace's own MLflow store: a workspace moved or copied keeps its runs' artifacts inside it."""

from __future__ import annotations

import shutil

import polars as pl

from ragassay import tracking


def _log_one_run(home, label: str) -> str:
    mlflow_client = tracking.client(home)
    experiment_id = tracking.ensure_experiment(mlflow_client, home, ["sample"])
    run = mlflow_client.create_run(experiment_id, run_name=label)
    tracking.log_tables(mlflow_client, run.info.run_id, {"answers": pl.DataFrame({"query_id": [label]})})
    tracking.finish(mlflow_client, run.info.run_id)
    return run.info.run_id


def test_runs_logged_after_the_workspace_moved_keep_their_artifacts_inside_it(tmp_path):
    before, after = tmp_path / "wsA", tmp_path / "wsB"
    first = _log_one_run(before, "first")
    shutil.move(before, after)

    second = _log_one_run(after, "second")
    assert not before.exists(), "nothing is written into the old place"
    stored = sorted(path.name for path in (after / "mlartifacts").rglob("answers.parquet"))
    assert len(stored) == 2
    # Both runs, the one logged before the move too, read their tables from the moved workspace.
    assert tracking.download_table(after, first, "answers")["query_id"].to_list() == ["first"]
    assert tracking.download_table(after, second, "answers")["query_id"].to_list() == ["second"]
    experiment = tracking.client(after).get_experiment_by_name(tracking.experiment_name(["sample"]))
    assert experiment.artifact_location.startswith((after / "mlartifacts").as_uri())
