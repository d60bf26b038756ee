"""Where a user opens what was logged: MLflow's UI address, a run's page, a batch's saved view of
the runs list (its headline metrics as the first columns), and a run's Traces tab filtered to the
questions scored below a value."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

from ragassay.environment import environment
from ragassay.metrics.averaging import HIGH_BOUND, LOW_BOUND
from ragassay.metrics.names import mlflow_key
from ragassay.tracking.client import tracking_uri
from ragassay.tracking.records import Batch
from ragassay.tracking.tags import TAG_BATCH, TAG_KIND, TAG_ROLE, TAG_VERDICT


def ui_address(home: Path) -> str:
    """MLflow's UI for this store: the tracking server, or for a local store where the user's
    `mlflow ui` serves it ($RAGASSAY_MLFLOW_UI_URL; by default where ui_command's does)."""
    uri = tracking_uri(home)
    return (uri if uri.startswith(("http://", "https://")) else environment().mlflow_ui_url).rstrip("/")


def run_url(home: Path, batch: Batch, run_id: str | None = None) -> str | None:
    """The run's page in MLflow's UI when the tracking store is a server (None for a local file
    store: `ui_command` says how to open it)."""
    uri = tracking_uri(home)
    if not uri.startswith(("http://", "https://")):
        return None
    return f"{uri.rstrip('/')}/#/experiments/{batch.experiment_id}/runs/{run_id or batch.parent_run_id}"


# MLflow's runs list opens showing no metric (its default columns are Source, Models and Dataset).
# A saved view (MLflow's "shared view state": an experiment tag its UI reads when the page's URL
# carries `viewStateShareKey=KEY`) opens it on one batch with its headline metrics as the first
# columns. One view per batch, keyed by the batch id.
VIEW_TAG_PREFIX = "mlflow.sharedViewState."


def runs_view_columns(metrics: dict[str, dict[str, float]], logged: set[str] = frozenset()) -> list[str]:
    """The runs list's columns for a batch's headline metrics (configuration -> metric -> value):
    each metric once, in the order the stage gives them, each followed by its 95% interval's low
    then high bound where a run logged them (`logged`: every metric key the batch's runs hold;
    averaging.interval_metrics' `lo/…`, `hi/…`), then its corrected value with its own bounds
    (judge_correction.corrected_metrics' `…_corrected_low`, `_high`; MLflow's column key:
    metrics.`name`). Beside the metric, because MLflow adds a column chosen by hand after
    Duration."""
    names = [
        n for n in dict.fromkeys(n for values in metrics.values() for n in values) if not n.endswith(("_low", "_high"))
    ]
    order = {name: position for position, name in enumerate(n for n in names if not n.endswith("_corrected"))}
    names.sort(key=lambda n: (order.get(n.removesuffix("_corrected"), len(order)), n.endswith("_corrected")))
    columns = []
    for name in names:
        bounds = (
            (f"{name}_low", f"{name}_high") if name.endswith("_corrected") else (LOW_BOUND + name, HIGH_BOUND + name)
        )
        columns += [name, *(bound for bound in bounds if bound in logged)]
    return [f"metrics.`{mlflow_key(name)}`" for name in columns]


# A pipeline's stages whose runs hold no evaluation metric: in the view they were groups whose
# header rows read "- (average)" in every column, so the view leaves them out (the batch's
# parent run and `ragassay runs show` keep them).
STAGES_WITHOUT_METRICS = ("ingest", "index", "golden", "pipeline")


def save_runs_view(mlflow_client, batch: Batch, kind: str, columns: list[str]) -> None:
    """Save (or extend, when a pipeline's second stage logs into the batch) the batch's view of
    the runs list (runs_view_url opens it): its configurations' runs grouped by stage, the
    evaluation stages' groups open, newest first, each run's verdict and these columns first. Grouped, because MLflow
    folds child runs under their parent and a shared view cannot unfold them; a group's header
    row shows MLflow's average of its runs, marked "(average)"."""
    key = VIEW_TAG_PREFIX + batch.batch_id
    stored = mlflow_client.get_experiment(batch.experiment_id).tags.get(key)
    earlier = json.loads(stored) if stored else {}
    # Each configuration's verdict on its assertions leads: which one failed is seen at a glance.
    selected = list(dict.fromkeys([f"tags.`{TAG_VERDICT}`", *earlier.get("selectedColumns", []), *columns]))
    state = {
        "searchFilter": f"tags.`{TAG_BATCH}` = '{batch.batch_id}' and tags.`{TAG_ROLE}` = 'configuration'"
        + "".join(f" and tags.`{TAG_KIND}` != '{kind}'" for kind in STAGES_WITHOUT_METRICS),
        "orderByKey": "attributes.start_time",
        "orderByAsc": False,
        "selectedColumns": selected,
        "columnOrder": selected,
        "groupBy": {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": TAG_KIND}]},
        # MLflow names a group `tag.KEY.VALUE`; only the groups named here start open.
        "groupsExpanded": {**earlier.get("groupsExpanded", {}), f"tag.{TAG_KIND}.{kind}": True},
    }
    mlflow_client.set_experiment_tag(batch.experiment_id, key, json.dumps(state))


def runs_view_url(home: Path, batch: Batch) -> str:
    """The batch's view of the runs list (save_runs_view) in MLflow's UI."""
    return f"{ui_address(home)}/#/experiments/{batch.experiment_id}/runs?viewStateShareKey={batch.batch_id}"


def traces_below_url(home: Path, experiment_id: str, run_id: str, assessment: str, below: float = 1) -> str:
    """A run's Traces tab showing only the questions whose `assessment` score is below `below`
    (MLflow's UI reads its filters from the page's `filter` parameter, COLUMN::OPERATOR::VALUE::NAME)."""
    condition = urllib.parse.quote(f"ASSESSMENT::<::{below:g}::{assessment}", safe="")
    return f"{ui_address(home)}/#/experiments/{experiment_id}/runs/{run_id}/traces?filter={condition}"
