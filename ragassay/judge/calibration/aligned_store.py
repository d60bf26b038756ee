"""Aligned judges stored and loaded: the one `judge calibrate` fitted to a collection's labels
(judge/calibration/alignment.py), written into the collection, and read back for the judge model an
evaluation uses."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ragassay.errors import CollectionDeleted, ConfigError
from ragassay.judge.calibration.alignment import AlignedJudge, AlignedJudges, LabelledJudgement, labels_digest
from ragassay.judge.calibration.labels import (
    labelled_statements,
    load_labels,
)
from ragassay.judge.learned_verdict import verdict_version
from ragassay.judge.support_rules import support_threshold_for
from ragassay.store.tables import write_json
from ragassay.store.workspace import collection_paths
from ragassay.user_files import read_user_text


def store_aligned_judge(home: Path, aligned: AlignedJudge) -> None:
    """The collection's aligned judge, written under its write lock; CollectionDeleted when the
    collection (its labels) went while the judge was asked, so that no folder is made anew for it."""
    paths = collection_paths(home, aligned.collection, must_exist=False)
    with paths.write_lock():
        if not paths.judge_labels.exists():
            raise CollectionDeleted(
                f"collection {aligned.collection!r} was deleted while `judge calibrate` ran: its aligned judge "
                "was not stored"
            )
        write_json(paths.aligned_judge, aligned.as_json())


def labelled_judgements(rows: list[dict], probabilities: dict[str, float | None]) -> list[LabelledJudgement]:
    """Labelled statements (rows of labelled_statements) with the judge's P(supported) of each, as
    alignment reads them; unreadable ones left out. Grouped by question (collection/query id),
    the unit its cross-validation holds out."""
    return [
        LabelledJudgement(
            row["item_id"],
            f"{row['query_collection']}/{row['query_id']}",
            row["statement"],
            row["context"],
            probabilities[row["item_id"]],
            row["label"] == "supported",
        )
        for row in rows
        if probabilities.get(row["item_id"]) is not None
    ]


def load_aligned_judges(home: Path, collections: Iterable[str], judge_model: str) -> AlignedJudges:
    """The used aligned judge of each collection that has one fitted (`judge calibrate
    --collection`) for this judge (model, support prompt version, threshold) on the labels the
    collection holds now. Where the stored fit is for another judge or other labels the plain
    judge stays, with a note; a stored file that cannot be read is a ConfigError naming it."""
    threshold = support_threshold_for(judge_model)
    found, notes = {}, []
    for name in collections:
        paths = collection_paths(home, name, must_exist=False)
        if not paths.aligned_judge.exists():
            continue
        try:
            aligned = AlignedJudge.from_json(json.loads(read_user_text(paths.aligned_judge, "aligned judge")))
        except (ValueError, TypeError, KeyError) as error:
            raise ConfigError(
                f"{paths.aligned_judge} cannot be read as an aligned judge ({error}): fit it again with "
                f"`ragassay judge calibrate --collection {name}`"
            ) from error
        if not aligned.used:
            continue
        if not aligned.serves(judge_model, verdict_version(judge_model), threshold):
            notes.append(
                f"collection {name}'s aligned judge was fitted for {aligned.judge_model} ({aligned.prompt_version}, "
                f"threshold {aligned.support_threshold}), not this judge: its plain verdicts are used"
            )
            continue
        current = labels_digest(
            (row["item_id"], row["label"] == "supported") for row in labelled_statements(load_labels(paths))
        )
        if current != aligned.labels_digest:
            notes.append(
                f"collection {name}'s labels changed since its aligned judge was fitted: its plain verdicts are "
                f"used; fit it again with `ragassay judge calibrate --collection {name}`"
            )
            continue
        found[name] = aligned
    return AlignedJudges(found, tuple(notes))
