"""Labels written in a file: a sample exported for people to fill in (CSV or JSONL, the judge's
verdict left out), and a filled-in file read back, each row checked and matched to its item."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from ragassay.errors import ConfigError, listed_problems
from ragassay.judge.calibration.labels.sample import SampleItem, parse_sample_id
from ragassay.judge.calibration.labels.store import label_row
from ragassay.user_files import read_jsonl, read_user_text, write_user_text

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


# A spreadsheet reads a cell that starts with one of these as a formula (`=HYPERLINK(...)` in a
# question would run when the CSV is opened): OWASP's advice is to start such a cell with `'`,
# which a spreadsheet shows as text and drops when it saves the file again.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """A CSV cell a spreadsheet shows as the text it is: `'` before a formula's first character
    (and before a leading `'`, so that read_spreadsheet_cell gives back exactly the text)."""
    return f"'{text}" if text.startswith((*FORMULA_STARTS, "'")) else text


def read_spreadsheet_cell(text: str) -> str:
    """A cell as spreadsheet_safe wrote it, back to its text: the `'` it put before a formula's
    first character or a `'` removed (a spreadsheet that saved the file again dropped it itself)."""
    return text[1:] if text.startswith("'") and text[1:].startswith((*FORMULA_STARTS, "'")) else text


def export_sample(items: list[SampleItem], path: Path, labels: pl.DataFrame) -> int:
    """Write a sample for labelling elsewhere: JSONL (one object per item) or CSV (by the file's
    suffix, .csv; cited_sources as numbers joined by ';'; a cell a spreadsheet would run as a
    formula written spreadsheet_safe), with each item's stored label when it has one (else empty).
    Returns the rows written."""
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
            cells = {**row, "cited_sources": ";".join(str(n) for n in row["cited_sources"])}
            writer.writerow({k: spreadsheet_safe(v) if isinstance(v, str) else v for k, v in cells.items()})
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
        records = [
            (
                f"{path}:{reader.line_num}",
                {k: read_spreadsheet_cell(v) if isinstance(v, str) else v for k, v in row.items()},
            )
            for row in reader
        ]
    else:
        records = read_jsonl(path, "labels file")
    problems, rows = [], []
    for where, record in records:
        read = _label_row(where, record)
        if isinstance(read, str):
            problems.append(read)
        elif read is not None:
            rows.append(read)
    rows, repeated = _one_label_an_item(rows)
    problems.extend(repeated)
    if problems:
        raise ConfigError(f"{path} has {len(problems)} bad rows, nothing imported: " + listed_problems(problems))
    return rows


def _label_row(where: str, record) -> ImportedLabel | str | None:
    """One row of a label file: the label it gives, None when it gives none yet (an empty label),
    or what is wrong with it (`where: ...`)."""
    if isinstance(record, ValueError):
        return f"{where}: {record}"
    if not isinstance(record, dict):
        return f"{where}: each row must be an object of an exported sample"
    bad = [
        name
        for name in ("item_id", "sample_id", "statement")
        if not isinstance(record.get(name), str) or not record[name]
    ]
    if bad:
        return f"{where}: field {' and '.join(repr(b) for b in bad)} must be a non-empty string"
    raw_label = record.get("label")
    if raw_label in (None, ""):
        return None
    label = _LABEL_SPELLINGS.get(str(raw_label).strip().lower()) if isinstance(raw_label, str) else None
    if label is None:
        return f"{where}: field 'label' must be supported, unsupported, skip or empty, not {raw_label!r}"
    who = record.get("who")
    if who not in (None, "") and not isinstance(who, str):
        return f"{where}: field 'who' must be a string"
    try:
        parse_sample_id(record["sample_id"])
    except ValueError:
        return f"{where}: field 'sample_id' {record['sample_id']!r} is not a sample of `ragassay judge label`"
    return ImportedLabel(where, record["item_id"], record["sample_id"], record["statement"], label, who or None)


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
