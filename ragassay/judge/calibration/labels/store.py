"""A collection's labels: stored per collection (`judge_labels.parquet`, one row per label given,
under the collection's write lock, nothing overwritten unasked), the labelling session and review
that write them, and what calibration reads back: the latest label per item, the judge's current
verdicts, and the strata the judge-error correction weighs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

import polars as pl

from ragassay.errors import ConfigError, listed_problems
from ragassay.judge.calibration.labels.sample import LABELS, SampleItem, collections_of
from ragassay.metrics.judge_error import LabelStratum
from ragassay.store.judge_schemas import JUDGE_LABELS
from ragassay.store.tables import read_table_or_empty, write_table
from ragassay.store.workspace import CollectionPaths, collection_paths


def load_labels(paths: CollectionPaths) -> pl.DataFrame:
    return read_table_or_empty(paths.judge_labels, JUDGE_LABELS)


def label_row(item: SampleItem, label: str, who: str, when: datetime) -> dict:
    """One row of the labels table (store/judge_schemas JUDGE_LABELS: the item's fields, then the
    label, who gave it and when), a plain dict because polars builds the table from such rows
    against that explicit schema."""
    if label not in LABELS:
        raise ConfigError(f"label must be one of {', '.join(LABELS)}, not {label!r}")
    return {**asdict(item), "label": label, "who": who, "labelled_at": when}


def _label_changes(stored: pl.DataFrame, rows: list[dict], replace: bool) -> tuple[list[dict], set, int, list[str]]:
    """(rows to add, (item, who) keys they replace, rows already stored, conflicts) of adding rows."""
    earlier = {
        (r["item_id"], r["who"]): r["label"] for r in stored.select("item_id", "who", "label").iter_rows(named=True)
    }
    added, dropped, unchanged, conflicts = [], set(), 0, []
    for row in rows:
        before = earlier.get((row["item_id"], row["who"]))
        if before == row["label"]:
            unchanged += 1
        elif before is None:
            added.append(row)
        elif replace:
            dropped.add((row["item_id"], row["who"]))
            added.append(row)
        else:
            conflicts.append(
                f"item {row['item_id']} is already labelled {before!r} by {row['who']}, not {row['label']!r}"
            )
    return added, dropped, unchanged, conflicts


def _refuse(conflicts: list[str]) -> None:
    if conflicts:
        raise ConfigError(
            "labels not stored, nothing changed: "
            + listed_problems(conflicts)
            + " (pass --replace to replace these labels)"
        )


def check_labels(home: Path, collection: str, rows: list[dict], replace: bool = False) -> None:
    """ConfigError, as store_labels would raise it, when adding rows would change a stored label
    without `replace`; nothing is written."""
    _refuse(_label_changes(load_labels(collection_paths(home, collection, must_exist=False)), rows, replace)[3])


def store_labels(home: Path, collection: str, rows: list[dict], replace: bool = False) -> dict[str, int]:
    """Add label rows to a collection's labels under its write lock: a row the store already holds
    (same item, same person, same label) is left as it is; one that gives the same item another
    label by the same person is refused (ConfigError naming each, nothing written) unless
    `replace`, which then replaces that person's earlier label. Returns the counts added,
    replaced and unchanged."""
    paths = collection_paths(home, collection, must_exist=False)
    paths.root.mkdir(parents=True, exist_ok=True)
    with paths.write_lock():
        stored = load_labels(paths)
        added, dropped, unchanged, conflicts = _label_changes(stored, rows, replace)
        _refuse(conflicts)
        if added:
            replaced_keys = pl.DataFrame(sorted(dropped), schema={"item_id": pl.String, "who": pl.String}, orient="row")
            kept = stored.join(replaced_keys, on=["item_id", "who"], how="anti")
            write_table(
                pl.concat([kept, pl.DataFrame(added, schema=JUDGE_LABELS.schema)]), paths.judge_labels, JUDGE_LABELS
            )
    return {"added": len(added) - len(dropped), "replaced": len(dropped), "unchanged": unchanged}


def remove_label(home: Path, collection: str, item_id: str, who: str) -> bool:
    """Remove one person's label of an item (undo); False when there was none."""
    paths = collection_paths(home, collection, must_exist=False)
    with paths.write_lock():
        stored = load_labels(paths)
        kept = stored.filter(~((pl.col("item_id") == item_id) & (pl.col("who") == who)))
        if kept.height == stored.height:
            return False
        write_table(kept, paths.judge_labels, JUDGE_LABELS)
    return True


class LabellingSession:
    """One person labelling a sample, one item at a time: each label stored as it is given (so
    quitting, or a killed terminal, loses nothing), items labelled earlier by anyone passed over,
    and undo taking back this session's last label."""

    def __init__(self, home: Path, items: list[SampleItem], who: str, clock: Callable[[], datetime]):
        self.home, self.who, self.clock = home, who, clock
        done = {
            item_id
            for collection in collections_of(items)
            for item_id in load_labels(collection_paths(home, collection, must_exist=False))["item_id"].to_list()
        }
        self.total = len(items)
        self.pending = [item for item in items if item.item_id not in done]
        self.given: list[tuple[SampleItem, str]] = []

    @property
    def current(self) -> SampleItem | None:
        return self.pending[0] if self.pending else None

    @property
    def done(self) -> int:
        return self.total - len(self.pending)

    def label(self, value: str) -> None:
        item = self.pending.pop(0)
        store_labels(self.home, item.query_collection, [label_row(item, value, self.who, self.clock())])
        self.given.append((item, value))

    def undo(self) -> SampleItem | None:
        """Take back this session's last label (the item is asked again next); None when there is none."""
        if not self.given:
            return None
        item, _ = self.given.pop()
        remove_label(self.home, item.query_collection, item.item_id, self.who)
        self.pending.insert(0, item)
        return item


class LabelReview:
    """One person going back over the labels they gave a sample's items (in any earlier session,
    or imported), each with its latest label, in the order the sample shows them; a changed label
    replaces theirs (store_labels with replace), others' labels are left as they are."""

    def __init__(self, home: Path, items: list[SampleItem], who: str, clock: Callable[[], datetime]):
        self.home, self.who, self.clock = home, who, clock
        latest: dict[str, str] = {}
        for collection in collections_of(items):
            stored = load_labels(collection_paths(home, collection, must_exist=False))
            for row in stored.filter(pl.col("who") == who).sort("labelled_at").iter_rows(named=True):
                latest[row["item_id"]] = row["label"]
        self.entries: list[tuple[SampleItem, str]] = [
            (item, latest[item.item_id]) for item in items if item.item_id in latest
        ]
        self.changed = 0

    def relabel(self, index: int, value: str) -> str:
        """Give entry `index` the label `value` (stored at once); returns the label it had."""
        item, before = self.entries[index]
        if value != before:
            store_labels(self.home, item.query_collection, [label_row(item, value, self.who, self.clock())], True)
            self.entries[index] = (item, value)
            self.changed += 1
        return before


def current_probabilities(
    labels: pl.DataFrame, judge_model: str, prompt_version: str, rejudge: Callable[[dict], float | None]
) -> dict[str, float | None]:
    """The P(supported) of the judge being corrected on each labelled item: the one stored with the
    label when the same model and prompt made it, else asked again (rejudge(row) -> P(supported),
    None when unreadable)."""
    probabilities: dict[str, float | None] = {}
    for row in labels.unique("item_id", keep="last", maintain_order=True).iter_rows(named=True):
        if (
            row["judge_model"] == judge_model
            and row["prompt_version"] == prompt_version
            and row["p_supported"] is not None
        ):
            probabilities[row["item_id"]] = row["p_supported"]
        else:
            probabilities[row["item_id"]] = rejudge(row)
    return probabilities


def current_verdicts(
    labels: pl.DataFrame,
    judge_model: str,
    prompt_version: str,
    threshold: float,
    rejudge: Callable[[dict], float | None],
) -> dict[str, bool | None]:
    """The plain verdict of the judge being corrected on each labelled item: its
    current_probabilities against this threshold (None when unreadable)."""
    return {
        item: None if p is None else p >= threshold
        for item, p in current_probabilities(labels, judge_model, prompt_version, rejudge).items()
    }


def label_strata(labels: pl.DataFrame, verdicts: dict[str, bool | None]) -> list[LabelStratum]:
    """The strata of the correction: per (sample, stratum), the (label, verdict) counts of its
    items, each item counted once with its latest label (skipped and unreadable left out), in the
    first sample it was labelled in; the stratum stands for stratum_size statements."""
    used = labels.filter(pl.col("label") != "skipped").sort("labelled_at")
    latest = used.unique("item_id", keep="last", maintain_order=True)
    first_sample = used.unique("item_id", keep="first", maintain_order=True).select(
        "item_id", "sample_id", "stratum", "stratum_size"
    )
    joined = latest.select("item_id", "label").join(first_sample, on="item_id")
    cells: dict[tuple[str, str], dict] = {}
    for row in joined.iter_rows(named=True):
        verdict = verdicts.get(row["item_id"])
        if verdict is None:
            continue
        key = (row["sample_id"], row["stratum"])
        entry = cells.setdefault(key, {"population": float(row["stratum_size"]), "counts": [0, 0, 0, 0]})
        entry["counts"][(0 if row["label"] == "supported" else 2) + (0 if verdict else 1)] += 1
    return [
        LabelStratum(f"{sample} {stratum}", entry["population"], *entry["counts"])
        for (sample, stratum), entry in sorted(cells.items())
    ]


def labelled_statements(labels: pl.DataFrame) -> list[dict]:
    """Each labelled item once (latest label; skipped left out) as a row judge calibration reads."""
    used = labels.filter(pl.col("label") != "skipped").sort("labelled_at")
    return used.unique("item_id", keep="last", maintain_order=True).to_dicts()


def disagreements(labels: pl.DataFrame) -> int:
    """Items that people labelled differently (supported by one, unsupported by another)."""
    used = labels.filter(pl.col("label") != "skipped")
    return used.group_by("item_id").agg(pl.col("label").n_unique().alias("labels")).filter(pl.col("labels") > 1).height
