"""A system under test as a retrieval configuration: its records for the golden questions, its
document ids mapped to the collection's, ranked as it ranked them, and what the run cost it
(answered / asked, errors by kind, latency p50 and p95, ids that are no document, records that
matched no question). Scored by the same functions as built-in configurations; a question whose
call failed is a row with its error and counts in no metric's mean (`answered`)."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl

from ragassay.evaluation.questions import DocKey, EvalQuestion, with_earlier_turns
from ragassay.evaluation.retrieval_scoring import SearchedConfiguration, run_table
from ragassay.fields import shown
from ragassay.llm.cache import CompletionCache
from ragassay.progress import ProgressReporter
from ragassay.run_warnings import RunWarning
from ragassay.store.workspace import collection_paths, load_documents
from ragassay.systems.doc_ids import DocIdMapper
from ragassay.systems.records import Retrieved, SystemQuestion, SystemRecord, write_records
from ragassay.systems.settings import SystemConfiguration


def _id_mappers(
    home: Path, collections: tuple[str, ...], configuration: SystemConfiguration
) -> tuple[dict[str, DocIdMapper], list[RunWarning]]:
    """Per collection, the mapper from the system's document ids to the collection's (its ids
    checked against the collection's documents where it holds any, with a warning where not)."""
    warnings: list[RunWarning] = []
    mappers = {}
    for name in collections:
        paths = collection_paths(home, name)
        documents = load_documents(paths) if paths.documents.exists() else None
        known = set(documents["doc_id"].to_list()) if documents is not None and documents.height else None
        if known is None:
            warnings.append(
                RunWarning(
                    configuration=configuration.label,
                    reason=f"collection {name} holds no documents: the system's ids could not be checked against it",
                )
            )
        mappers[name] = DocIdMapper(configuration.doc_ids, known)
    return mappers, warnings


def system_question_of(question: EvalQuestion) -> SystemQuestion:
    """A golden question as a system under test is asked it: a dialogue's turn with its
    conversation (the dialogue's id) and number."""
    return SystemQuestion(question.query_id, question.question, question.dialogue_id, question.turn)


def run_system(
    home: Path,
    collections: tuple[str, ...],
    questions: list[EvalQuestion],
    configuration: SystemConfiguration,
    depth: int,
    cache: CompletionCache | None,
) -> SearchedConfiguration:
    """The system's ranking of every question, read to rank `depth` (the evaluation's max rank,
    as built-in configurations are searched to it), with its records, costs and warnings. A
    records file without a single document id is refused (ConfigError): its scores would be
    zeros that measure nothing."""
    started = time.perf_counter()
    label = configuration.label
    # A dialogue is asked whole, its unscored (unanswerable) turns too: the system's conversation
    # is the one the golden set wrote; only the scored questions' records are kept.
    asked = with_earlier_turns(questions)
    with ProgressReporter(f"asking {label} {len(asked)} questions", total=len(asked)) as progress:
        collected = configuration.system.collect([system_question_of(q) for q in asked], cache, progress)
    scored = {q.query_id for q in questions}
    collected = replace(collected, records=[r for r in collected.records if r.query_id in scored])
    configuration.system.check_records(collected.records)
    mappers, warnings = _id_mappers(home, collections, configuration)
    ranked: list[list[tuple[DocKey, float | None]]] = []
    longer = 0
    for question, record in zip(questions, collected.records):
        if not record.answered:
            ranked.append([])
            continue
        mapper = mappers[question.query_collection]
        documents = mapper.ranking([(item.doc_id, item.score) for item in record.retrieved if item.doc_id])
        longer += len(documents) > depth
        ranked.append([((question.query_collection, doc), score) for doc, score in documents[:depth]])
    unknown = sum(sum(m.unknown.values()) for m in mappers.values())
    costs = system_costs(collected.records, unknown, len(collected.unmatched))
    warnings += system_warnings(label, collected.records, mappers, collected.unmatched, collected.repeated)
    warnings += id_space_warnings(label, configuration, questions, collected.records, ranked)
    if longer:
        warnings.append(
            RunWarning(
                configuration=label,
                reason=f"{longer} questions' lists are longer than the max rank {depth}: ranks below it are not "
                "scored (as for every configuration); raise max_rank to read them",
            )
        )
    return SearchedConfiguration(
        rankings=[[key for key, _ in ranking] for ranking in ranked],
        run=run_table(label, questions, ranked),
        costs=costs,
        seconds=round(time.perf_counter() - started, 3),
        answered=[record.answered for record in collected.records],
        warnings=warnings,
        records=collected.records,
    )


def system_costs(records: list[SystemRecord], unknown_ids: int, unmatched: int) -> dict[str, float]:
    """answered, asked, coverage = answered / asked, errors/<kind>, retries (attempts after the
    first, over every call), latency p50 and p95 of the answering attempt and of the whole call
    with its retries and waits (ms, over the calls that have one), ids that are no document,
    records that matched no question."""
    asked = len(records)
    answered = sum(record.answered for record in records)
    kinds = Counter(record.error_kind for record in records if not record.answered)
    costs = {
        "asked": float(asked),
        "answered": float(answered),
        "coverage": answered / asked if asked else 0.0,
        **{f"errors/{kind}": float(count) for kind, count in sorted(kinds.items())},
        "retries": float(sum(record.retries for record in records)),
        "unknown_doc_ids": float(unknown_ids),
        "unmatched_records": float(unmatched),
    }
    for name, values in (
        ("latency", [record.latency_ms for record in records if record.latency_ms is not None]),
        ("call_latency", [record.call_ms for record in records if record.call_ms is not None]),
    ):
        if values:
            p50, p95 = np.percentile(values, [50, 95])
            costs |= {f"{name}_p50_ms": round(float(p50), 3), f"{name}_p95_ms": round(float(p95), 3)}
    return costs


def system_warnings(
    label: str, records: list[SystemRecord], mappers: dict[str, DocIdMapper], unmatched: list[str], repeated: list[str]
) -> list[RunWarning]:
    """What a user must see: failed calls by kind (with the first message), unknown ids, records
    that matched no question or repeated one."""
    warnings = []
    failed: dict[str, list[SystemRecord]] = {}
    for record in records:
        if not record.answered:
            failed.setdefault(record.error_kind or "error", []).append(record)
    for kind, failures in sorted(failed.items()):
        warnings.append(
            RunWarning(
                configuration=label,
                metric=f"errors/{kind}",
                question=failures[0].query_id or "",
                reason=f"{len(failures)} of {len(records)} questions failed ({kind}), e.g.: {failures[0].error}; "
                "they count in no metric",
            )
        )
    unknown = Counter()
    for mapper in mappers.values():
        unknown.update(mapper.unknown)
    if unknown:
        examples = ", ".join(shown(name) for name, _ in unknown.most_common(3))
        warnings.append(
            RunWarning(
                configuration=label,
                metric="unknown_doc_ids",
                reason=f"{sum(unknown.values())} returned ids are no document of the collection (e.g. {examples}): "
                "scored in place as not relevant; map them with doc_ids:",
            )
        )
    for what, names in (("matched no golden question", unmatched), ("repeated a question's record", repeated)):
        if names:
            warnings.append(
                RunWarning(
                    configuration=label,
                    reason=f"{len(names)} records {what} (e.g. {', '.join(names[:3])}); not scored",
                )
            )
    return warnings


def id_space_warnings(
    label: str,
    configuration: SystemConfiguration,
    questions: list[EvalQuestion],
    records: list[SystemRecord],
    ranked: list[list[tuple[DocKey, float | None]]],
) -> list[RunWarning]:
    """The loud warnings of a configuration whose metrics measure a mapping, not a system: every
    question it answered came back without a document, or not one id it returned (after doc_ids:)
    is an expected document of any golden question, with examples of both id spaces and a
    `doc_ids:` rule that would map them where one is evident."""
    answered = [ranking for ranking, record in zip(ranked, records) if record.answered]
    if not answered:
        return []
    if not any(answered):
        return [
            RunWarning(
                configuration=label,
                metric="id_space",
                reason=f"every one of the {len(answered)} questions {label} answered came back without a document id, "
                "so each of its retrieval metrics is 0 without measuring anything; check the mapping of the ids "
                "(response.documents, or the records' documents / retrieved field)",
            )
        ]
    expected = {key for question in questions for key, grade in question.judgements.items() if grade > 0}
    returned = {key for ranking in answered for key, _ in ranking}
    if returned & expected:
        return []
    theirs = sorted({doc for _, doc in returned})[:3]
    ours = sorted({doc for _, doc in expected})[:3]
    system_ids = sorted({doc_id for record in records for doc_id in record.document_ids})
    rule = suggested_doc_id_rule(system_ids, {doc for _, doc in expected})
    return [
        RunWarning(
            configuration=label,
            metric="id_space",
            reason=f"not one of the {len(returned)} document ids {label} returned is an expected document of the "
            f"golden set, so every retrieval metric is 0: the system's ids look like {', '.join(theirs)}, the golden "
            f"set's like {', '.join(ours)}; "
            + (
                f"map them with `doc_ids: {rule}`"
                if rule
                else "map them with doc_ids: (strip_prefix, pattern or a mapping CSV)"
            )
            + (" (the configuration's doc_ids: rule is applied already)" if configuration.doc_ids is not None else ""),
        )
    ]


def suggested_doc_id_rule(system_ids: list[str], expected: set[str]) -> str | None:
    """A `doc_ids:` rule that maps many of a system's ids onto expected ids, where one is evident:
    the prefix most of them carry before an expected id (`{strip_prefix: "PMID:"}`), or a suffix
    after one (`{pattern: ..., replacement: ""}`); None when neither maps any id."""
    prefixes: Counter = Counter()
    suffixes: Counter = Counter()
    for system_id in system_ids[:2_000]:
        for doc_id in expected:
            if system_id != doc_id and system_id.endswith(doc_id):
                prefixes[system_id[: -len(doc_id)]] += 1
            elif system_id != doc_id and system_id.startswith(doc_id):
                suffixes[system_id[len(doc_id) :]] += 1
    if prefixes:
        prefix, _ = prefixes.most_common(1)[0]
        return f"{{strip_prefix: {json.dumps(prefix)}}}"
    if suffixes:
        suffix, _ = suffixes.most_common(1)[0]
        return f'{{pattern: {json.dumps(re.escape(suffix) + "$")}, replacement: ""}}'
    return None


RECORDS_SCHEMA = pl.Schema(
    {
        "query_id": pl.String,
        "question": pl.String,
        "answered": pl.Boolean,
        "error_kind": pl.String,
        "error": pl.String,
        "latency_ms": pl.Float64,
        "returned_ids": pl.List(pl.String),
        "retries": pl.Int64,
        "call_ms": pl.Float64,
        "answer": pl.String,
        "refused": pl.Boolean,
        "conversation_id": pl.String,
        "turn": pl.Int32,
        "note": pl.String,
    }
)


def records_table(records: list[SystemRecord]) -> pl.DataFrame:
    """What the system returned for each question, failures included (the run's `records` table)."""
    return pl.DataFrame(
        [
            {
                "query_id": r.query_id,
                "question": r.question,
                "answered": r.answered,
                "error_kind": r.error_kind,
                "error": r.error,
                "latency_ms": r.latency_ms,
                "returned_ids": r.document_ids,
                "retries": r.retries,
                "call_ms": r.call_ms,
                "answer": r.answer,
                "refused": r.refused,
                "conversation_id": r.conversation_id,
                "turn": r.turn,
                "note": r.note,
            }
            for r in records
        ],
        schema=RECORDS_SCHEMA,
    )


def configuration_records(questions: list[EvalQuestion], searched: SearchedConfiguration) -> list[SystemRecord]:
    """A configuration's records: a system's as it returned them; a built-in configuration's
    ranked documents with their scores, so any configuration can be kept and re-scored later."""
    if searched.records is not None:
        return searched.records
    ranked: dict[str, list[Retrieved]] = {}
    for row in searched.run.sort("query_id", "rank").iter_rows(named=True):
        ranked.setdefault(row["query_id"], []).append(Retrieved(row["doc_id"], None, row["score"]))
    return [
        SystemRecord(
            q.query_id,
            q.question,
            retrieved=tuple(ranked.get(q.query_id, ())),
            conversation_id=q.dialogue_id,
            turn=q.turn,
        )
        for q in questions
    ]


def save_records(folder: Path, questions: list[EvalQuestion], searched: dict[str, SearchedConfiguration]) -> list[Path]:
    """Each configuration's records as `<folder>/<label>.jsonl` (readable as `kind: records`)."""
    return [
        write_records(folder / f"{label}.jsonl", configuration_records(questions, found))
        for label, found in searched.items()
    ]
