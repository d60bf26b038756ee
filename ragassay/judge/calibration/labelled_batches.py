"""Where people's labels meet logged batches: a batch's judged answer runs read back from MLflow
as JudgedConfiguration (judge/calibration/labels/sample.py draws its samples from them), and a filled-in label file
matched to its items and stored per collection. The `judge label` command parses, renders and
sets exit codes; this is what it does."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from ragassay import tracking
from ragassay.errors import ConfigError
from ragassay.judge.calibration import labels as labelling
from ragassay.judge.calibration.labelled_statements import outside_label_rows, read_labelled_statements
from ragassay.judge.calibration.labels import JudgedConfiguration
from ragassay.store.workspace import collection_paths


def judged_runs(home: Path, batch: str) -> list[JudgedConfiguration]:
    """The batch's answer configuration runs as JudgedConfiguration; a ConfigError naming the
    batch when it has none, or a configuration whose tables are missing."""
    runs = tracking.answer_configuration_runs(home, batch)
    if not runs:
        raise ConfigError(f"no answer evaluation batch {batch!r} in {home} (`ragassay runs list` shows the batches)")
    judged = []
    for run in runs:
        if run.answers is None or run.judgments is None:
            raise ConfigError(f"batch {batch}, configuration {run.label}: its answers or judgments table is missing")
        judged.append(
            JudgedConfiguration(
                label=run.label,
                answers=run.answers,
                judgments=run.judgments,
                judge_model=run.judge_model,
                prompt_version=run.prompt_version,
                support_threshold=run.support_threshold,
            )
        )
    return judged


class LabelImport(BaseModel):
    """What a label file's import stored: into which collections, labels added, replaced (the same
    person's earlier label of an item, with --replace) and already stored."""

    path: str
    collections: list[str]
    added: int
    replaced: int
    unchanged: int


def import_labels(home: Path, path: Path, who: str, replace: bool, now: datetime) -> LabelImport:
    """Each filled-in row matched to its item (the samples drawn again from their batches), then
    stored per collection; nothing is stored when any row is bad."""
    imported = labelling.read_label_file(path)
    samples = {}
    for sample_id in sorted({entry.sample_id for entry in imported}):
        batch, seed, count = labelling.parse_sample_id(sample_id)
        samples[sample_id] = labelling.draw_sample(batch, judged_runs(home, batch), count, seed)
    rows = labelling.matched_labels(imported, samples, who, now)
    by_collection: dict[str, list[dict]] = {}
    for row in rows:
        by_collection.setdefault(row["query_collection"], []).append(row)
    # Every collection's conflicts are checked before any is written: a refused file stores nothing.
    for collection, collection_rows in by_collection.items():
        labelling.check_labels(home, collection, collection_rows, replace)
    counts = {"added": 0, "replaced": 0, "unchanged": 0}
    for collection, collection_rows in by_collection.items():
        for key, value in labelling.store_labels(home, collection, collection_rows, replace).items():
            counts[key] += value
    return LabelImport(path=str(path), collections=sorted(by_collection), **counts)


def import_outside_labels(
    home: Path, path: Path, collection: str, who: str, replace: bool, now: datetime
) -> LabelImport:
    """Labelled statements in the calibration shape stored as the collection's labels (judge/
    label_files.outside_label_rows); nothing stored when any row is bad or contradicts another."""
    collection_paths(home, collection)
    rows = outside_label_rows(read_labelled_statements(path), collection, who, now)
    counts = labelling.store_labels(home, collection, rows, replace)
    return LabelImport(path=str(path), collections=[collection], **counts)
