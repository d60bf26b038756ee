"""Statements people labelled outside ragassay (a JSONL label file: statement, context, label),
read and checked; their rows in a collection's label table; seeded samples and context groups of
them; and every label a collection stores."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ragassay.errors import ConfigError, listed_problems
from ragassay.judge.calibration.labels import item_id_of, load_labels
from ragassay.store.judge_schemas import JUDGE_LABELS
from ragassay.store.workspace import collection_paths
from ragassay.user_files import read_jsonl


@dataclass(frozen=True)
class LabelledStatement:
    """A (context, statement) pair labelled supported or not by a person, and the question its
    answer responds to when known."""

    source: str  # file:line, or collection:item id
    context: str
    statement: str
    supported: bool
    question: str | None = None


def read_labelled_statements(path: Path) -> list[LabelledStatement]:
    """Rows of a calibration file (JSONL: context, statement, label "supported"/"unsupported").

    The whole file is refused (ConfigError naming each bad file:line) when any row is bad: a
    calibration over a silently shortened label set would report a figure for other data.
    """
    rows, problems = [], []
    for where, record in read_jsonl(path, "labels file"):
        if isinstance(record, ValueError):
            problems.append(f"{where}: {record}")
            continue
        if not isinstance(record, dict):
            problems.append(f"{where}: each row must be an object with context, statement and label")
            continue
        bad = [
            name
            for name in ("context", "statement")
            if not isinstance(record.get(name), str) or not record[name].strip()
        ]
        if bad:
            problems.append(f"{where}: field {' and '.join(repr(b) for b in bad)} must be a non-empty string")
        elif record.get("label") not in ("supported", "unsupported"):
            problems.append(f"{where}: field 'label' must be 'supported' or 'unsupported', not {record.get('label')!r}")
        elif record.get("question") is not None and not isinstance(record["question"], str):
            problems.append(f"{where}: field 'question' must be a string when given")
        else:
            rows.append(
                LabelledStatement(
                    where,
                    record["context"],
                    record["statement"],
                    record["label"] == "supported",
                    record.get("question"),
                )
            )
    if problems:
        raise ConfigError(f"{path} has {len(problems)} bad rows: " + listed_problems(problems))
    if not rows:
        raise ConfigError(f"{path} holds no labelled statements")
    return rows


# Where labels written outside ragassay are stored from (`judge label --import FILE --collection C`):
# no batch, sample or judge verdict; they stand for themselves (one stratum, weighted by its count).
OUTSIDE_METRIC = "imported"


def outside_label_rows(labelled: list[LabelledStatement], collection: str, who: str, when) -> list[dict]:
    """Label rows (JUDGE_LABELS) for labelled statements in the calibration shape, to store in a
    collection: item id of (statement, context) as an evaluation's verdict would have it; sample
    `imported/<sha256 of the rows, 12 hex>`, one stratum `imported` standing for its own rows; no
    batch, configuration or judge verdict (an evaluation judges them when it reads them); the
    question (or, without one, the context) names the group that cross-validation holds out.
    One label per item: identical repeats are one, contradictory ones a ConfigError naming both
    file:lines."""
    first: dict[str, LabelledStatement] = {}
    problems, kept = [], []
    for item in labelled:
        item_id, _ = item_id_of(item.statement, item.context)
        earlier = first.setdefault(item_id, item)
        if earlier is item:
            kept.append((item_id, item))
        elif earlier.supported != item.supported:
            problems.append(
                f"{item.source}: this statement and context are labelled "
                f"{'supported' if item.supported else 'unsupported'} here and "
                f"{'supported' if earlier.supported else 'unsupported'} at {earlier.source}: keep the one you mean"
            )
    if problems:
        raise ConfigError(f"{len(problems)} contradictory rows, nothing imported: " + listed_problems(problems))
    digest = hashlib.sha256(
        json.dumps([[i, x.supported] for i, x in sorted(kept, key=lambda pair: pair[0])]).encode()
    ).hexdigest()[:12]
    return [
        {
            "item_id": item_id,
            "sample_id": f"imported/{digest}",
            "batch_id": "",
            "configuration": "",
            "query_collection": collection,
            "query_id": "imported:" + hashlib.sha256((item.question or item.context).encode()).hexdigest()[:12],
            "metric": OUTSIDE_METRIC,
            "question": item.question or "",
            "answer": "",
            "statement": item.statement,
            "context": item.context,
            "context_digest": item_id_of(item.statement, item.context)[1],
            "cited_sources": [],
            "stratum": OUTSIDE_METRIC,
            "stratum_size": len(kept),
            "judge_model": "",
            "prompt_version": "",
            "support_threshold": None,
            "judge_verdict": "",
            "p_supported": None,
            "label": "supported" if item.supported else "unsupported",
            "who": who,
            "labelled_at": when,
        }
        for item_id, item in kept
    ]


def seeded_sample(items: list, max_items: int | None, seed: int) -> list:
    """A seeded sample of at most max_items items (all of them when max_items is None), in their order."""
    if max_items is None or max_items >= len(items):
        return items
    chosen = set(random.Random(seed).sample(range(len(items)), max_items))
    return [item for index, item in enumerate(items) if index in chosen]


def context_groups(labelled: list[LabelledStatement]) -> list[list[LabelledStatement]]:
    """Rows grouped by (context, question), groups in order of first appearance: a group's
    statements are judged passage by passage together (llama.cpp then reuses each evaluated
    passage)."""
    groups: dict[tuple[str, str | None], list[LabelledStatement]] = {}
    for item in labelled:
        groups.setdefault((item.context, item.question), []).append(item)
    return list(groups.values())


def collection_labels(home: Path, collections: Iterable[str]) -> pl.DataFrame:
    """Every label stored in these collections (judge/calibration/labels/store.py)."""
    tables = [load_labels(collection_paths(home, name, must_exist=False)) for name in collections]
    return pl.concat(tables) if tables else JUDGE_LABELS.empty()
