"""Judge calibration (`ragassay judge calibrate`): the judge's support verdicts against
statements people labelled (metrics/agreement.py), and the position bias of its pairwise
verdicts (how often the verdict flips when the two answers swap places)."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ragassay.errors import CollectionDeleted, ConfigError, listed_problems
from ragassay.judge.alignment import AlignedJudge, AlignedJudges, LabelledJudgement, align_judge, labels_digest
from ragassay.judge.calibration_reports import (
    AlignmentSummary,
    AsUsedAgreement,
    CalibrationRow,
    CollectionCalibration,
    ConfigurationBudget,
    LabelBudgetReport,
    PairRow,
    PairwiseCalibration,
    SupportCalibration,
)
from ragassay.judge.judge import Judge, judging_cost, support_threshold_for, verdict_of
from ragassay.judge.labels import (
    VERDICTS,
    current_probabilities,
    disagreements,
    item_id_of,
    label_strata,
    labelled_statements,
    load_labels,
)
from ragassay.judge.prompts import PREFERENCE_PROMPT_VERSION, SUPPORT_PROMPT_VERSION, passages_of
from ragassay.llm.cache import CompletionCache
from ragassay.llm.registry import ChatModels
from ragassay.llm.settings import ChatModelConfig
from ragassay.llm.structured import Structured
from ragassay.metrics.agreement import agreement
from ragassay.metrics.answers import pair_outcome, tally_pairs
from ragassay.metrics.judge_error import (
    JudgeCalibration,
    LabelStratum,
    error_rates,
    labels_for_width,
)
from ragassay.progress import ProgressReporter
from ragassay.store.schemas import JUDGE_LABELS
from ragassay.store.tables import write_json
from ragassay.store.workspace import collection_paths, completion_cache_path
from ragassay.user_files import read_jsonl, read_user_text


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
            judge = Judge(models.get(config, cache))
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
    judge = Judge(chat_models.get(config, cache))
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


def _ask_support(judge: Judge, to_ask: list[LabelledStatement], stored: int) -> dict[str, Structured]:
    """The judge's support verdict on each statement (by source), the statements sharing a
    context asked together (Judge.support_by_passage), with progress."""
    asked: dict[str, Structured] = {}
    title = f"judging {len(to_ask)} labelled statements" + (
        f" ({stored} more have this judge's verdict stored with their label)" if stored else ""
    )
    with ProgressReporter(title, total=len(to_ask)) as progress:
        for group in context_groups(to_ask):
            judged = judge.support_by_passage(
                passages_of(group[0].context), [item.statement for item in group], group[0].question
            )
            asked.update((item.source, result) for item, result in zip(group, judged, strict=True))
            progress(len(asked), len(to_ask))
    return asked


def calibrate_statements(
    judge: Judge, labelled: list[LabelledStatement], seed: int = 0, stored: dict[str, float] | None = None
) -> SupportCalibration:
    """The judge's support verdicts against people's labels: accuracy, balanced accuracy, Cohen's
    kappa with a bootstrap 95% interval, per-class precision and recall, confusion matrix,
    unreadable rate, seconds per verdict, and every row with its verdict and P(supported).

    Each statement is judged as answer evaluation judges it: against each passage of its context
    (prompts.passages_of) with its question when known (Judge.support_by_passage). A row whose
    prompt does not fit the judge's context is never cut: it is counted as `too_long` and left
    out of the agreement figures. stored: P(supported) by source that this judge already gave
    (with the label), read against its threshold instead of asked again (`reused_verdicts`)."""
    stored = stored or {}
    to_ask = [item for item in labelled if item.source not in stored]
    asked = _ask_support(judge, to_ask, len(labelled) - len(to_ask))
    fitting, verdicts, rows = [], [], []
    own: dict[str, float | None] = {}  # the judge's own P where a learned verdict read it
    for item in labelled:
        if item.source in stored:
            p, verdict, too_long, error = (
                stored[item.source],
                stored[item.source] >= judge.support_threshold,
                False,
                None,
            )
        else:
            result = asked[item.source]
            p = result.value.p_supported if result.value else None
            own[item.source] = result.value.judge_p_supported if result.value else None
            verdict, too_long, error = verdict_of(result), result.too_long, result.error
        if not too_long:
            fitting.append(item)
            verdicts.append(verdict)
        rows.append(
            CalibrationRow(
                source=item.source,
                statement=item.statement,
                label="supported" if item.supported else "unsupported",
                verdict="too_long"
                if too_long
                else ("unreadable" if verdict is None else ("supported" if verdict else "unsupported")),
                p_supported=p,
                judge_p_supported=own.get(item.source),
                error=error,
            )
        )
    usage = judging_cost(list(asked.values()))[0]
    return SupportCalibration(
        judge_model=judge.model_id,
        prompt_version=SUPPORT_PROMPT_VERSION,
        support_threshold=judge.support_threshold,
        seed=seed,
        too_long=len(rows) - len(fitting),
        reused_verdicts=len(labelled) - len(to_ask),
        **agreement([item.supported for item in fitting], verdicts, seed).model_dump(),
        # A statement's verdict is one call per passage: the time is per statement asked, counting
        # only the statements the model was asked about (not those the completion cache answered).
        seconds_per_verdict=usage.seconds / sum(1 for r in asked.values() if r.usage.calls) if usage.calls else None,
        usage=usage,
        rows=rows,
        **judge_own_rule(judge, fitting, own, seed),
    )


def judge_own_rule(judge: Judge, fitting: list[LabelledStatement], own: dict[str, float | None], seed: int) -> dict:
    """The judge's own rule (its P(supported) >= its asking threshold) on the labels a learned
    verdict was measured on, as SupportCalibration's judge_own and judge_threshold; nothing when
    no learned verdict read the judge (or no verdict of it was asked here)."""
    if judge.learned is None or not any(own.get(item.source) is not None for item in fitting):
        return {}
    asked = [item for item in fitting if item.source in own]
    verdicts = [None if own[i.source] is None else own[i.source] >= judge.asking_threshold for i in asked]
    return {
        "judge_own": agreement([item.supported for item in asked], verdicts, seed),
        "judge_threshold": judge.asking_threshold,
    }


def collection_labels(home: Path, collections: Iterable[str]) -> pl.DataFrame:
    """Every label stored in these collections (judge/labels/store.py)."""
    tables = [load_labels(collection_paths(home, name, must_exist=False)) for name in collections]
    return pl.concat(tables) if tables else JUDGE_LABELS.empty()


@dataclass(frozen=True)
class BudgetRequest:
    """What `--target-width` asks a label budget for: one batch's per-question faithfulness of
    each configuration, and the width its corrected interval should narrow to."""

    batch_id: str
    faithfulness: dict[str, list[float | None]]
    target_width: float


def latest_labelled_batch(home: Path, collection: str) -> str:
    """The batch the collection's latest label was sampled from (ConfigError when none was)."""
    labels = collection_labels(home, [collection]).filter(pl.col("batch_id") != "").sort("labelled_at")
    if labels.height == 0:
        raise ConfigError(
            f"collection {collection!r} has no labels sampled from a batch (imported labels stand for no batch's "
            "statements): give --batch BATCH_ID of an answer batch for the budget"
        )
    return labels["batch_id"][-1]


def label_budget(strata: list[LabelStratum], request: BudgetRequest, seed: int = 0) -> LabelBudgetReport:
    """Per configuration of the batch, how many more labels (drawn as these were) would narrow
    its corrected faithfulness interval to the target width (metrics/judge_error.labels_for_width);
    `more_labels` is the most any configuration needs."""
    rows = []
    for label, values in request.faithfulness.items():
        budget = labels_for_width(values, strata, request.target_width, seed)
        rows.append(
            ConfigurationBudget(configuration=label, **budget.model_dump())
            if budget
            else ConfigurationBudget(configuration=label, no_interval=True)
        )
    reachable = [row.more_labels for row in rows if row.more_labels is not None]
    return LabelBudgetReport(
        batch_id=request.batch_id,
        target_width=request.target_width,
        metric="faithfulness",
        configurations=rows,
        more_labels=max(reachable) if reachable and len(reachable) == len(rows) else None,
    )


def stored_verdict_budget(
    home: Path, collection: str, request: BudgetRequest, judge_model: str, prompt_version: str, support_threshold: float
) -> LabelBudgetReport:
    """label_budget from the verdicts stored with the collection's labels by the batch's judge
    (same model, prompt and threshold), without asking a model: what `judge label --target-width`
    shows as labels are given. `left_out` counts labels another judge gave (their verdicts by
    this judge are unknown until `judge calibrate --collection` asks it)."""
    labels = collection_labels(home, [collection]).filter(pl.col("label") != "skipped")
    same = labels.filter(
        (pl.col("judge_model") == judge_model)
        & (pl.col("prompt_version") == prompt_version)
        & (pl.col("support_threshold") == support_threshold)
    )
    probabilities = current_probabilities(same, judge_model, prompt_version, lambda row: None)
    verdicts = {item: None if p is None else p >= support_threshold for item, p in probabilities.items()}
    budget = label_budget(label_strata(same, verdicts), request)
    return budget.model_copy(
        update={
            "collection": collection,
            "verdicts": "stored plain",
            "left_out": labels["item_id"].n_unique() - same["item_id"].n_unique(),
        }
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
        SUPPORT_PROMPT_VERSION,
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
        == (judge.model_id, SUPPORT_PROMPT_VERSION, judge.support_threshold)
        and row["p_supported"] is not None
    }
    return labelled, stored


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
        if not aligned.serves(judge_model, SUPPORT_PROMPT_VERSION, threshold):
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


def label_support(judge: Judge, row: dict) -> float | None:
    """The judge's P(supported) of a labelled statement (a row of judge_labels), None when unreadable."""
    [result] = judge.support_by_passage(passages_of(row["context"]), [row["statement"]], row["question"] or None)
    return result.value.p_supported if result.value else None


def judge_calibration(
    home: Path,
    collections: Iterable[str],
    judge_model: str,
    rejudge: Callable[[dict], float | None],
    aligned: AlignedJudges | None = None,
) -> JudgeCalibration | None:
    """What the judged numbers of an evaluation are corrected with: the labels of its collections
    when they hold any (each labelled statement's verdict by this judge, from its P(supported):
    stored with the label when this judge made it, else asked again through rejudge(label row) ->
    P(supported)), else None: no correction. Never another collection's labels: the judge's error
    rates differ between collections too much for them to correct these (judge/measured_rates.py).

    In a collection with an aligned judge the verdicts are the aligned judge's, as the evaluation
    gave them: for the labels it was fitted on, their cross-fitted verdicts (never a prediction of
    a model fitted on that label); for any other, its prediction."""
    collections = list(collections)
    aligned = aligned or AlignedJudges({})
    threshold = support_threshold_for(judge_model)
    verdicts: dict[str, bool | None] = {}
    tables = []
    for name in collections:
        labels = collection_labels(home, [name]).filter(pl.col("label") != "skipped")
        tables.append(labels)
        probabilities = current_probabilities(labels, judge_model, SUPPORT_PROMPT_VERSION, rejudge)
        fitted = aligned.by_collection.get(name)
        rows = {row["item_id"]: row for row in labels.iter_rows(named=True)}
        for item, p in probabilities.items():
            if p is None:
                verdicts[item] = None
            elif fitted is None:
                verdicts[item] = p >= threshold
            elif item in fitted.cross_fitted:
                verdicts[item] = fitted.cross_fitted[item]
            else:
                verdicts[item] = fitted.supported(rows[item]["statement"], rows[item]["context"], p)
    labels = pl.concat(tables) if tables else JUDGE_LABELS.empty()
    if labels.height == 0:
        return None
    strata = label_strata(labels, verdicts)
    batches = labels["batch_id"].n_unique()
    description = (
        f"{labels['item_id'].n_unique()} statements people labelled in collection{'s' if len(collections) > 1 else ''} "
        f"{', '.join(collections)} ({batches} batch{'es' if batches > 1 else ''})"
    )
    return JudgeCalibration(
        "labels",
        description,
        tuple(strata),
        judge_model,
        SUPPORT_PROMPT_VERSION,
        threshold,
        aligned.described(),
        aligned.notes,
    )


# The worse answer of a "refusal" pair: what a pipeline that declines an answerable question says.
REFUSAL_TEXT = "I cannot answer this from the documents."


def preference_pairs(golden_path: Path) -> list[dict]:
    """Pairs with a known better answer, built from a golden file's questions and reference answers:
    for each question, its reference answer against (a) the next question's reference answer (fluent
    but off the question) and (b) a refusal. A judge without position bias names the reference
    answer better whichever place it is shown in."""
    entries, problems = [], []
    for where, record in read_jsonl(golden_path, "golden file"):
        if isinstance(record, ValueError):
            problems.append(f"{where}: {record}")
        elif not isinstance(record, dict):
            problems.append(f"{where}: each row must be an object")
        elif not isinstance(record.get("question"), str) or not isinstance(record.get("reference_answer") or "", str):
            problems.append(f"{where}: 'question' and 'reference_answer' must be strings")
        elif record.get("reference_answer"):
            entries.append(record)
    if problems:
        raise ConfigError(f"golden file {golden_path} has {len(problems)} bad rows: " + listed_problems(problems))
    if len(entries) < 2:
        raise ConfigError(
            f"{golden_path} needs at least two rows with a question and a reference_answer to build answer pairs"
        )
    pairs = []
    for index, entry in enumerate(entries):
        other = entries[(index + 1) % len(entries)]
        for kind, worse in (("off_question", other["reference_answer"]), ("refusal", REFUSAL_TEXT)):
            pairs.append(
                {"question": entry["question"], "better": entry["reference_answer"], "worse": worse, "kind": kind}
            )
    return pairs


def calibrate_pairwise(
    chat_models: ChatModels, config: ChatModelConfig, golden_path: Path, max_items: int | None = None, seed: int = 0
) -> PairwiseCalibration:
    """Position bias of the judge's pairwise verdicts: every pair asked with the better answer
    first and with it second (no reference answer shown).

    flip rate = pairs whose verdict names a different answer (or tie) in the two orders / readable
    pairs; accuracy = pairs that name the better answer in both orders / readable pairs."""
    pairs = seeded_sample(preference_pairs(golden_path), max_items, seed)
    judge = Judge(chat_models.get(config))
    rows, results = [], []
    with ProgressReporter(f"judging {len(pairs)} answer pairs in both orders", total=len(pairs)) as progress:
        for done, pair in enumerate(pairs, start=1):
            better_first = judge.preference(pair["question"], None, pair["better"], pair["worse"])
            better_second = judge.preference(pair["question"], None, pair["worse"], pair["better"])
            results += [better_first, better_second]
            outcome = pair_outcome(
                better_first.value.preferred if better_first.value else None,
                better_second.value.preferred if better_second.value else None,
            )
            rows.append(
                PairRow(
                    **pair,
                    better_first=better_first.value.preferred if better_first.value else None,
                    better_second=better_second.value.preferred if better_second.value else None,
                    outcome=outcome,
                )
            )
            progress(done, len(pairs))
    tally = tally_pairs([row.outcome for row in rows])
    readable = tally["questions"] - tally["unreadable"]
    usage = judging_cost(results)[0]
    return PairwiseCalibration(
        golden_file=str(golden_path),
        judge_model=judge.model_id,
        prompt_version=PREFERENCE_PROMPT_VERSION,
        pairs=len(rows),
        readable=readable,
        flip_rate=tally["inconsistent_share"] if readable else None,
        accuracy=tally["wins_a"] / readable if readable else None,
        ties=tally["ties"],
        unreadable_rate=tally["unreadable"] / len(rows) if rows else 0.0,
        seconds_per_verdict=usage.seconds / usage.calls if usage.calls else None,
        usage=usage,
        rows=rows,
    )
