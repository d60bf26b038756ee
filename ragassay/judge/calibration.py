"""Judge calibration (`ragassay judge calibrate`): the judge's support verdicts against
statements people labelled (metrics/agreement.py), as its own rule reads them and as the
collection uses them (aligned), a collection's labels turned into an aligned judge, and the
calibration an evaluation's judged metrics are corrected with. Label files and samples are in
label_files.py, the label budget in label_budget.py, stored aligned judges in
aligned_store.py, the pairwise position bias in pairwise_calibration.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ragassay.errors import ConfigError, listed_problems
from ragassay.judge.aligned_store import labelled_judgements, load_aligned_judges, store_aligned_judge
from ragassay.judge.alignment import AlignedJudges, align_judge, labels_digest
from ragassay.judge.calibration_reports import (
    AlignmentSummary,
    AsUsedAgreement,
    CalibrationRow,
    CollectionCalibration,
    PairwiseCalibration,
    SupportCalibration,
)
from ragassay.judge.judge import Judge, judging_cost, support_threshold_for, verdict_of
from ragassay.judge.label_budget import BudgetRequest, label_budget
from ragassay.judge.label_files import (
    LabelledStatement,
    collection_labels,
    context_groups,
    read_labelled_statements,
    seeded_sample,
)
from ragassay.judge.labels import (
    VERDICTS,
    current_probabilities,
    disagreements,
    item_id_of,
    label_strata,
    labelled_statements,
)
from ragassay.judge.pairwise_calibration import calibrate_pairwise
from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION, passages_of
from ragassay.llm.cache import CompletionCache
from ragassay.llm.registry import ChatModels
from ragassay.llm.settings import ChatModelConfig
from ragassay.llm.structured import Structured
from ragassay.metrics.agreement import agreement
from ragassay.metrics.judge_error import (
    JudgeCalibration,
    error_rates,
)
from ragassay.progress import ProgressReporter
from ragassay.store.schemas import JUDGE_LABELS
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
    """The judge's own rule (its P(supported) against the statement's most similar passage >= its
    asking threshold) on the labels a learned verdict was measured on, as SupportCalibration's
    judge_own and judge_threshold; nothing when no learned verdict was used (or the judge's own P
    was not asked here)."""
    if judge.learned is None or not any(own.get(item.source) is not None for item in fitting):
        return {}
    asked = [item for item in fitting if item.source in own]
    verdicts = [None if own[i.source] is None else own[i.source] >= judge.asking_threshold for i in asked]
    return {
        "judge_own": agreement([item.supported for item in asked], verdicts, seed),
        "judge_threshold": judge.asking_threshold,
    }


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
