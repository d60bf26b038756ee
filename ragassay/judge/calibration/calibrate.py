"""`ragassay judge calibrate`'s library side: a label file or a collection's labels measured
against the judge (support.py), as its own rule reads them and as the collection uses them
(aligned), a collection's labels turned into an aligned judge (alignment.py, aligned_store.py),
the label budget (label_budget.py) and the pairwise position bias (pairwise.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ragassay.errors import ConfigError, listed_problems
from ragassay.judge.calibration.aligned_store import labelled_judgements, load_aligned_judges, store_aligned_judge
from ragassay.judge.calibration.alignment import align_judge, labels_digest
from ragassay.judge.calibration.label_budget import BudgetRequest, label_budget
from ragassay.judge.calibration.labelled_statements import (
    LabelledStatement,
    collection_labels,
    read_labelled_statements,
    seeded_sample,
)
from ragassay.judge.calibration.labels import (
    VERDICTS,
    disagreements,
    item_id_of,
    label_strata,
    labelled_statements,
)
from ragassay.judge.calibration.pairwise import calibrate_pairwise
from ragassay.judge.calibration.reports import (
    AlignmentSummary,
    AsUsedAgreement,
    CollectionCalibration,
    PairwiseCalibration,
    SupportCalibration,
)
from ragassay.judge.calibration.support import calibrate_statements
from ragassay.judge.judge import Judge
from ragassay.judge.learned_verdict import verdict_version
from ragassay.llm.cache import CompletionCache
from ragassay.llm.registry import ChatModels
from ragassay.llm.settings import ChatModelConfig
from ragassay.metrics.agreement import agreement
from ragassay.metrics.judge_error import (
    error_rates,
)
from ragassay.store.workspace import collection_paths, completion_cache_path
from ragassay.user_files import read_user_text


@dataclass(frozen=True)
class CalibrationRequest:
    """Which calibration `ragassay judge calibrate` asks for: a labels file (with a collection:
    also as that collection uses the judge), a collection's own labels (with a label budget when
    asked), or a golden file's answer pairs (pairwise); with its sample size and seed."""

    labels: Path | None = None
    collection: str | None = None
    pairwise: Path | None = None
    max_items: int | None = None
    seed: int = 0
    budget: BudgetRequest | None = None


def calibrate(
    home: Path, config: ChatModelConfig, request: CalibrationRequest
) -> SupportCalibration | PairwiseCalibration:
    """Run the calibration a request names with the judge of config. Support verdicts (a labels
    file's, a collection's own labels') go through the workspace's completion cache: a verdict an
    evaluation or an earlier calibration already asked costs nothing, and is the same verdict.
    ConfigError naming a collection that does not exist."""
    models = ChatModels()
    cache = CompletionCache(completion_cache_path(home)) if config.cache else None
    try:
        if request.collection is not None:
            collection_paths(home, request.collection)
        if request.labels is not None:
            return calibrate_judge(
                models, config, request.labels, request.max_items, request.seed, home, request.collection, cache
            )
        if request.collection is not None:
            judge = Judge(models.get(config, cache), own_odds=True)
            return calibrate_collection(judge, home, request.collection, request.seed, request.budget)
        return calibrate_pairwise(models, config, request.pairwise, request.max_items, request.seed)
    finally:
        models.close()


def calibrate_judge(
    chat_models: ChatModels,
    config: ChatModelConfig,
    path: Path,
    max_items: int | None = None,
    seed: int = 0,
    home: Path | None = None,
    collection: str | None = None,
    cache: CompletionCache | None = None,
) -> SupportCalibration:
    """The judge's support verdicts against the people's labels of a file (`calibrate_statements`),
    its calls through `cache` when given (benchmarks time them without one). The labels are read
    (and a bad file refused) before the judge is loaded.

    With a collection, also the judge as that collection's evaluations use it (`as_used`: its
    aligned judge when one is in use, else the plain judge, and why) on the same labels, which
    must not be among the collection's own (ConfigError naming each overlapping file:line)."""
    labelled = seeded_sample(read_labelled_statements(path), max_items, seed)
    if collection is not None:
        refuse_overlap(labelled, home, collection)
    # The judge's own P beside the verdict: `judge calibrate` shows both (own_odds).
    judge = Judge(chat_models.get(config, cache), own_odds=True)
    report = calibrate_statements(judge, labelled, seed)
    as_used = judge_as_used(home, collection, judge, labelled, report, seed) if collection is not None else None
    return report.model_copy(update={"labels_file": str(path), "max_items": max_items, "as_used": as_used})


def refuse_overlap(labelled: list[LabelledStatement], home: Path, collection: str) -> None:
    """ConfigError when any labelled statement is one of the collection's own labelled items, or
    repeats the statement of one: its aligned judge may have been fitted on it, and agreement on
    its own training labels would report the fit, not the judge."""
    own = labelled_statements(collection_labels(home, [collection]))
    items = {row["item_id"] for row in own}
    statements = {" ".join(row["statement"].split()).lower() for row in own}
    overlapping = [
        item.source
        for item in labelled
        if item_id_of(item.statement, item.context)[0] in items
        or " ".join(item.statement.split()).lower() in statements
    ]
    if overlapping:
        raise ConfigError(
            f"{len(overlapping)} labelled statements are also among the labels collection {collection!r} holds (which "
            "its aligned judge is fitted on): agreement on them would not be out of sample; leave them out of the "
            "file: " + listed_problems(overlapping)
        )


def judge_as_used(
    home: Path, collection: str, judge: Judge, labelled: list[LabelledStatement], report: SupportCalibration, seed: int
) -> AsUsedAgreement:
    """Agreement of the judge as the collection's evaluations use it on these labels: through its
    aligned judge when one is in use for this judge (load_aligned_judges), else the plain verdicts."""
    aligned = load_aligned_judges(home, [collection], judge.model_id)
    fitted = aligned.by_collection.get(collection)
    by_source = {row.source: row for row in report.rows}
    readable = [
        (item, by_source[item.source])
        for item in labelled
        if by_source[item.source].verdict in VERDICTS and by_source[item.source].p_supported is not None
    ]
    verdicts = [
        fitted.supported(item.statement, item.context, row.p_supported) if fitted else row.verdict == "supported"
        for item, row in readable
    ]
    stored = collection_paths(home, collection, must_exist=False).aligned_judge
    why = (
        fitted.reason
        if fitted
        else (
            "; ".join(aligned.notes)
            or (
                json.loads(read_user_text(stored, "aligned judge")).get("reason", "")
                if stored.exists()
                else f"no aligned judge fitted: `ragassay judge calibrate --collection {collection}` fits one"
            )
        )
    )
    return AsUsedAgreement(
        collection=collection,
        aligned=fitted is not None,
        why=why,
        **agreement([item.supported for item, _ in readable], verdicts, seed).model_dump(),
    )


def calibrate_collection(
    judge: Judge, home: Path, collection: str, seed: int = 0, budget: BudgetRequest | None = None
) -> CollectionCalibration:
    """The judge against a collection's labels: the agreement report of `calibrate_statements`
    over each labelled statement once (its latest label), plus the judge's sensitivity,
    specificity and balanced accuracy weighted to the batches the labels were sampled from (what
    the judge-corrected estimates use, metrics/judge_error.py), and how many statements people
    labelled differently. ConfigError when the collection has no labels."""
    labels = collection_labels(home, [collection])
    rows = labelled_statements(labels)
    if not rows:
        raise ConfigError(
            f"collection {collection!r} has no labelled statements: label some with "
            f"`ragassay judge label --batch BATCH_ID` (an answer evaluation's batch)"
        )
    labelled, stored = _collection_statements(collection, rows, judge)
    report = calibrate_statements(judge, labelled, seed, stored)
    by_source = {row.source: row for row in report.rows}
    verdicts = {
        row["item_id"]: None
        if by_source[f"{collection}:{row['item_id']}"].verdict not in VERDICTS
        else by_source[f"{collection}:{row['item_id']}"].verdict == "supported"
        for row in rows
    }
    rates = error_rates(label_strata(labels, verdicts), seed)
    probabilities = {row["item_id"]: by_source[f"{collection}:{row['item_id']}"].p_supported for row in rows}
    aligned = align_judge(
        collection,
        labelled_judgements(rows, probabilities),
        judge.model_id,
        verdict_version(judge.model_id),
        judge.support_threshold,
        seed,
        labels_digest((row["item_id"], row["label"] == "supported") for row in rows),
    )
    store_aligned_judge(home, aligned)
    label_budget_report = None
    if budget is not None:
        # The strata the correction reads: the aligned judge's cross-fitted verdicts when it is used.
        used_verdicts = aligned.cross_fitted if aligned.used else verdicts
        label_budget_report = label_budget(label_strata(labels, used_verdicts), budget, seed).model_copy(
            update={"verdicts": "aligned" if aligned.used else "plain"}
        )
    return CollectionCalibration(
        **report.model_dump(exclude={"rows", "usage"}),
        rows=report.rows,
        usage=report.usage,
        collection=collection,
        batches=sorted(set(labels["batch_id"].to_list()) - {""}),
        imported_files=labels.filter(pl.col("sample_id").str.starts_with("imported/"))["sample_id"].n_unique(),
        people=sorted(set(labels["who"].to_list())),
        skipped=labels.filter(pl.col("label") == "skipped")["item_id"].n_unique(),
        disagreements=disagreements(labels),
        weighted=rates,
        aligned_judge=AlignmentSummary.model_validate(
            {key: value for key, value in aligned.as_json().items() if key != "cross_fitted"}
            | {"weighted": error_rates(label_strata(labels, aligned.cross_fitted), seed) if aligned.used else None}
        ),
        budget=label_budget_report,
    )


def _collection_statements(
    collection: str, rows: list[dict], judge: Judge
) -> tuple[list[LabelledStatement], dict[str, float]]:
    """A collection's labelled statements (each once, its latest label) as calibrate_statements
    takes them, and the P(supported) stored with a label that this judge gave (same model,
    prompt and threshold: the threshold decides where support_by_passage stops, so P depends on
    it too), reused rather than asked again."""
    labelled = [
        LabelledStatement(
            f"{collection}:{row['item_id']}",
            row["context"],
            row["statement"],
            row["label"] == "supported",
            row["question"] or None,
        )
        for row in rows
    ]
    stored = {
        f"{collection}:{row['item_id']}": row["p_supported"]
        for row in rows
        if (row["judge_model"], row["prompt_version"], row["support_threshold"])
        == (judge.model_id, verdict_version(judge.model_id), judge.support_threshold)
        and row["p_supported"] is not None
    }
    return labelled, stored
