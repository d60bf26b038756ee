"""People's labels of the judge's support verdicts (`ragassay judge label`), per collection.

- A **sample** is drawn from one answer batch: its judged statements (faithfulness, context
  recall and citation precision verdicts that were readable), one item per distinct judgement
  (statement and passages: a statement citing its answer's one passage is one item, not one for
  faithfulness and one for citation precision), split into two strata by the judge's verdict and drawn seeded, half from each (the
  rest from the other when one is short), so that both verdicts are represented and the
  configurations are mixed as they are in the batch. Items are shown in a seeded shuffle, never
  grouped by verdict, and the judge's verdict is never shown to the person labelling.
- A **label** is supported, unsupported or skipped (the person could not tell; kept, so a resumed
  session does not ask again, and never used in calibration). Labels are stored in the
  collection's `judge_labels.parquet`, one row per label given, under the collection's write
  lock; nothing is overwritten without being asked (`replace`).
- The **strata** the judge-error correction reads (metrics/judge_error.py): per (sample, stratum),
  the counts of (label, verdict of the judge being corrected), weighted by how many of the
  batch's statements the stratum stands for.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from ragassay.errors import ConfigError, listed_problems
from ragassay.judge.prompts import passages_of
from ragassay.metrics.judge_error import LabelStratum
from ragassay.store.schemas import JUDGE_LABELS
from ragassay.store.tables import read_table_or_empty, write_table
from ragassay.store.workspace import CollectionPaths, collection_paths
from ragassay.user_files import read_jsonl, read_user_text, write_user_text

# The metrics whose verdicts are support verdicts (one prompt), the ones a label can check.
SUPPORT_METRICS = ("faithfulness", "context_recall", "citation_precision")
LABELS = ("supported", "unsupported", "skipped")
VERDICTS = ("supported", "unsupported")


@dataclass(frozen=True)
class JudgedConfiguration:
    """One configuration run of an answer batch, as MLflow holds it: its answers and judgments
    tables, and the judge that made the verdicts."""

    label: str
    answers: pl.DataFrame
    judgments: pl.DataFrame
    judge_model: str
    prompt_version: str
    support_threshold: float


@dataclass(frozen=True)
class SampleItem:
    """One judged statement of a sample, with everything a person needs to label it and the
    correction needs to weigh the label."""

    item_id: str
    sample_id: str
    batch_id: str
    configuration: str
    query_collection: str
    query_id: str
    metric: str
    question: str
    answer: str
    statement: str
    context: str
    context_digest: str
    cited_sources: list[int]
    stratum: str
    stratum_size: int
    judge_model: str
    prompt_version: str
    support_threshold: float
    judge_verdict: str
    p_supported: float


def item_id_of(statement: str, context: str) -> tuple[str, str]:
    """(item id, context digest): sha256 of the context, and 16 hex of sha256 of statement and digest."""
    digest = hashlib.sha256(context.encode()).hexdigest()
    return hashlib.sha256(f"{statement}\0{digest}".encode()).hexdigest()[:16], digest


def sample_id_of(batch_id: str, seed: int, count: int) -> str:
    return f"{batch_id}/seed-{seed}/count-{count}"


def parse_sample_id(sample_id: str) -> tuple[str, int, int]:
    """(batch id, seed, count) of a sample id; ValueError for anything else."""
    batch_id, seed, count = sample_id.rsplit("/", 2)
    if not seed.startswith("seed-") or not count.startswith("count-"):
        raise ValueError(sample_id)
    return batch_id, int(seed.removeprefix("seed-")), int(count.removeprefix("count-"))


def judgement_of(statement: str, context: str, metric: str) -> tuple[str, tuple[str, ...]]:
    """What a person is asked to judge: the statement and the passages' texts, spacing and source
    numbers aside. A statement citing the one passage of its answer is the same judgement for
    faithfulness (context `[1] text`) and citation precision (context `text`)."""
    if metric == "citation_precision":
        passages = [context]
    else:
        passages = [_SOURCE_NUMBER.sub("", passage, count=1) for passage in passages_of(context)]
    return " ".join(statement.split()), tuple(" ".join(passage.split()) for passage in passages)


_SOURCE_NUMBER = re.compile(r"^\[\d+\] ")


def judged_items(batch_id: str, runs: list[JudgedConfiguration], count: int, seed: int) -> list[SampleItem]:
    """Every distinct readable support verdict of the batch as an unsampled item (stratum size 0),
    in configuration order then table order: one item per distinct judgement (judgement_of), the
    first verdict of it kept. ConfigError for a batch logged before judgments kept the context
    they were judged against."""
    items: dict[str, SampleItem] = {}
    judgements: set[tuple[str, tuple[str, ...]]] = set()
    for run in runs:
        if "context" not in run.judgments.columns:
            raise ConfigError(
                f"batch {batch_id} was logged before its judgments kept the context each statement was judged "
                "against; evaluate the answers again (every answer and verdict comes from the cache) and label that batch"
            )
        answers = {
            (row["query_collection"], row["query_id"]): row
            for row in run.answers.select("query_collection", "query_id", "question", "answer").iter_rows(named=True)
        }
        judged = run.judgments.filter(pl.col("metric").is_in(SUPPORT_METRICS) & pl.col("verdict").is_in(VERDICTS))
        for row in judged.iter_rows(named=True):
            item_id, digest = item_id_of(row["statement"], row["context"])
            judgement = judgement_of(row["statement"], row["context"], row["metric"])
            if item_id in items or judgement in judgements:
                continue
            judgements.add(judgement)
            answer = answers.get((row["query_collection"], row["query_id"]), {})
            items[item_id] = SampleItem(
                item_id=item_id,
                sample_id=sample_id_of(batch_id, seed, count),
                batch_id=batch_id,
                configuration=run.label,
                query_collection=row["query_collection"],
                query_id=row["query_id"],
                metric=row["metric"],
                question=answer.get("question") or "",
                answer=answer.get("answer") or "",
                statement=row["statement"],
                context=row["context"],
                context_digest=digest,
                cited_sources=list(row["cited_sources"] or []),
                stratum=row["verdict"],
                stratum_size=0,
                judge_model=run.judge_model,
                prompt_version=run.prompt_version,
                support_threshold=run.support_threshold,
                judge_verdict=row["verdict"],
                p_supported=row["p_supported"],
            )
    return list(items.values())


def draw_sample(batch_id: str, runs: list[JudgedConfiguration], count: int, seed: int) -> list[SampleItem]:
    """The seeded sample of `count` items of a batch (module docstring), in the order they are
    shown. The same batch, count and seed always give the same sample. ConfigError when the batch
    has no judged statement."""
    population = judged_items(batch_id, runs, count, seed)
    if not population:
        raise ConfigError(f"batch {batch_id} has no readable support verdict to label (no answered question judged)")
    strata = {verdict: [item for item in population if item.stratum == verdict] for verdict in VERDICTS}
    rng = random.Random(f"{batch_id}/{seed}")
    wanted = {verdict: min(len(strata[verdict]), count // 2) for verdict in VERDICTS}
    # One stratum short of half: the other gives the rest, as far as it has them.
    for verdict, other in (VERDICTS, VERDICTS[::-1]):
        wanted[verdict] = min(len(strata[verdict]), count - wanted[other])
    chosen = [
        SampleItem(**{**asdict(item), "stratum_size": len(strata[verdict])})
        for verdict in VERDICTS
        for item in rng.sample(sorted(strata[verdict], key=lambda i: i.item_id), wanted[verdict])
    ]
    rng.shuffle(chosen)
    return chosen


def load_labels(paths: CollectionPaths) -> pl.DataFrame:
    return read_table_or_empty(paths.judge_labels, JUDGE_LABELS)


def label_row(item: SampleItem, label: str, who: str, when: datetime) -> dict:
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


# The columns of an exported sample, in order: what a person needs, where it came from, and the
# label to fill in. The judge's verdict is left out, as it is never shown while labelling.
EXPORT_COLUMNS = (
    "item_id",
    "sample_id",
    "query_collection",
    "configuration",
    "query_id",
    "metric",
    "question",
    "answer",
    "statement",
    "cited_sources",
    "context",
    "label",
    "who",
)


def export_sample(items: list[SampleItem], path: Path, labels: pl.DataFrame) -> int:
    """Write a sample for labelling elsewhere: JSONL (one object per item) or CSV (by the file's
    suffix, .csv; cited_sources as numbers joined by ';'), with each item's stored label when it
    has one (else empty). Returns the rows written."""
    known = {r["item_id"]: r for r in labels.sort("labelled_at").iter_rows(named=True)}
    rows = []
    for item in items:
        stored = known.get(item.item_id)
        values = asdict(item)
        values["label"] = stored["label"] if stored else ""
        values["who"] = stored["who"] if stored else ""
        rows.append({column: values[column] for column in EXPORT_COLUMNS})
    if path.suffix.lower() == ".csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "cited_sources": ";".join(str(n) for n in row["cited_sources"])})
        text = buffer.getvalue()
    else:
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    write_user_text(path, text, "the sample to label")
    return len(rows)


@dataclass(frozen=True)
class ImportedLabel:
    """A filled-in row of an exported sample: where it is, which item, the label, who gave it."""

    where: str
    item_id: str
    sample_id: str
    statement: str
    label: str
    who: str | None


_LABEL_SPELLINGS = {"supported": "supported", "unsupported": "unsupported", "skip": "skipped", "skipped": "skipped"}


def read_label_file(path: Path) -> list[ImportedLabel]:
    """The filled-in rows of an exported sample (JSONL, or CSV by suffix). Rows with an empty label
    are not labelled yet and are passed over. The whole file is refused (ConfigError naming each
    bad file:line and field) when any row is bad: a partly read file would store other labels
    than the person gave."""
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(read_user_text(path, "labels file")))
        missing = [c for c in ("item_id", "sample_id", "statement", "label") if c not in (reader.fieldnames or [])]
        if missing:
            raise ConfigError(f"{path}:1: the header lacks column(s) {', '.join(missing)}")
        records = [(f"{path}:{reader.line_num}", row) for row in reader]
    else:
        records = read_jsonl(path, "labels file")
    problems, rows = [], []
    for where, record in records:
        if isinstance(record, ValueError):
            problems.append(f"{where}: {record}")
            continue
        if not isinstance(record, dict):
            problems.append(f"{where}: each row must be an object of an exported sample")
            continue
        bad = [
            name
            for name in ("item_id", "sample_id", "statement")
            if not isinstance(record.get(name), str) or not record[name]
        ]
        if bad:
            problems.append(f"{where}: field {' and '.join(repr(b) for b in bad)} must be a non-empty string")
            continue
        raw_label = record.get("label")
        if raw_label in (None, ""):
            continue
        label = _LABEL_SPELLINGS.get(str(raw_label).strip().lower()) if isinstance(raw_label, str) else None
        if label is None:
            problems.append(f"{where}: field 'label' must be supported, unsupported, skip or empty, not {raw_label!r}")
            continue
        who = record.get("who")
        if who not in (None, "") and not isinstance(who, str):
            problems.append(f"{where}: field 'who' must be a string")
            continue
        try:
            parse_sample_id(record["sample_id"])
        except ValueError:
            problems.append(
                f"{where}: field 'sample_id' {record['sample_id']!r} is not a sample of `ragassay judge label`"
            )
            continue
        rows.append(
            ImportedLabel(where, record["item_id"], record["sample_id"], record["statement"], label, who or None)
        )
    rows, repeated = _one_label_an_item(rows)
    problems.extend(repeated)
    if problems:
        raise ConfigError(f"{path} has {len(problems)} bad rows, nothing imported: " + listed_problems(problems))
    return rows


def _one_label_an_item(rows: list[ImportedLabel]) -> tuple[list[ImportedLabel], list[str]]:
    """The rows of one file with each item labelled once per person: a repeated identical row is
    that one label (the first); two rows giving one item different labels by the same person are
    both named (file:line), as the file does not say which the person meant."""
    first: dict[tuple[str, str | None], ImportedLabel] = {}
    kept, problems = [], []
    for row in rows:
        key = (row.item_id, row.who)
        earlier = first.setdefault(key, row)
        if earlier is row:
            kept.append(row)
        elif earlier.label != row.label:
            problems.append(
                f"{row.where}: item {row.item_id} is labelled {row.label} here and {earlier.label} at "
                f"{earlier.where}{f' (both by {row.who})' if row.who else ''}: keep the one you mean"
            )
    return kept, problems


def matched_labels(
    imported: list[ImportedLabel], samples: dict[str, list[SampleItem]], who: str, when: datetime
) -> list[dict]:
    """Label rows for imported labels, each matched to its item in the sample it names (drawn again
    from the batch). ConfigError naming file:line for an item not in its sample, or whose
    statement was changed since it was exported."""
    problems, rows = [], []
    for entry in imported:
        items = {item.item_id: item for item in samples[entry.sample_id]}
        item = items.get(entry.item_id)
        if item is None:
            problems.append(f"{entry.where}: item {entry.item_id} is not in sample {entry.sample_id}")
        elif item.statement != entry.statement:
            problems.append(f"{entry.where}: field 'statement' differs from the statement the judge judged")
        else:
            rows.append(label_row(item, entry.label, entry.who or who, when))
    if problems:
        raise ConfigError(
            f"{len(problems)} rows do not match their sample, nothing imported: " + listed_problems(problems)
        )
    return rows


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


def collections_of(items: Iterable[SampleItem]) -> list[str]:
    return sorted({item.query_collection for item in items})
