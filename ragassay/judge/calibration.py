"""Judge calibration (`ragassay judge calibrate`): the judge's support verdicts against
statements people labelled (metrics/agreement.py), and the position bias of its pairwise
verdicts (how often the verdict flips when the two answers swap places)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from ragassay.errors import ConfigError, listed_problems
from ragassay.judge.judge import Judge, judging_cost, support_threshold_for, verdict_of
from ragassay.judge.labels import (
    VERDICTS,
    current_verdicts,
    disagreements,
    label_strata,
    labelled_statements,
    load_labels,
)
from ragassay.judge.priors import prior_calibration
from ragassay.judge.prompts import PREFERENCE_PROMPT_VERSION, SUPPORT_PROMPT_VERSION, passages_of
from ragassay.llm.registry import ChatModels
from ragassay.llm.settings import ChatModelConfig
from ragassay.metrics.agreement import agreement
from ragassay.metrics.answers import pair_outcome, tally_pairs
from ragassay.metrics.judge_error import JudgeCalibration, error_rates, separability_text
from ragassay.progress import ProgressReporter
from ragassay.store.schemas import JUDGE_LABELS
from ragassay.store.workspace import collection_paths
from ragassay.user_files import read_user_text


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
    for number, line in enumerate(read_user_text(path, "labels file").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{where}: invalid JSON: {error.msg}")
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


def calibrate_judge(
    chat_models: ChatModels, config: ChatModelConfig, path: Path, max_items: int | None = None, seed: int = 0
) -> dict:
    """The judge's support verdicts against the people's labels of a file (`calibrate_statements`).
    The labels are read (and a bad file refused) before the judge is loaded."""
    labelled = seeded_sample(read_labelled_statements(path), max_items, seed)
    report = calibrate_statements(Judge(chat_models.get(config)), labelled, seed)
    return {"labels_file": str(path), "max_items": max_items, **report}


def calibrate_statements(judge: Judge, labelled: list[LabelledStatement], seed: int = 0) -> dict:
    """The judge's support verdicts against people's labels: accuracy, balanced accuracy, Cohen's
    kappa with a bootstrap 95% interval, per-class precision and recall, confusion matrix,
    unreadable rate, seconds per verdict, and every row with its verdict and P(supported).

    Each statement is judged as answer evaluation judges it: against each passage of its context
    (prompts.passages_of) with its question when known (Judge.support_by_passage). A row whose
    prompt does not fit the judge's context is never cut: it is counted as `too_long` and left
    out of the agreement figures."""
    groups = context_groups(labelled)
    fitting, verdicts, rows, results = [], [], [], []
    with ProgressReporter(f"judging {len(labelled)} labelled statements", total=len(labelled)) as progress:
        for group in groups:
            judged = judge.support_by_passage(
                passages_of(group[0].context), [item.statement for item in group], group[0].question
            )
            for item, result in zip(group, judged, strict=True):
                results.append(result)
                verdict = verdict_of(result)
                if not result.too_long:
                    fitting.append(item)
                    verdicts.append(verdict)
                rows.append(
                    {
                        "source": item.source,
                        "statement": item.statement,
                        "label": "supported" if item.supported else "unsupported",
                        "verdict": "too_long"
                        if result.too_long
                        else ("unreadable" if verdict is None else ("supported" if verdict else "unsupported")),
                        "p_supported": result.value.p_supported if result.value else None,
                        "error": result.error,
                    }
                )
            progress(len(rows), len(labelled))
    usage = judging_cost(results)[0]
    return {
        "judge_model": judge.model_id,
        "prompt_version": SUPPORT_PROMPT_VERSION,
        "support_threshold": judge.support_threshold,
        "seed": seed,
        "too_long": len(rows) - len(fitting),
        **asdict(agreement([item.supported for item in fitting], verdicts, seed)),
        # A statement's verdict is one call per passage: the time is per statement.
        "seconds_per_verdict": usage.seconds / len(rows) if usage.calls else None,
        "usage": usage.as_metrics("judge"),
        "rows": rows,
    }


def collection_labels(home: Path, collections: Iterable[str]) -> pl.DataFrame:
    """Every label stored in these collections (judge/labels.py)."""
    tables = [load_labels(collection_paths(home, name, must_exist=False)) for name in collections]
    return pl.concat(tables) if tables else JUDGE_LABELS.empty()


def calibrate_collection(judge: Judge, home: Path, collection: str, seed: int = 0) -> dict:
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
    report = calibrate_statements(judge, labelled, seed)
    by_source = {row["source"]: row for row in report["rows"]}
    verdicts = {
        row["item_id"]: None
        if by_source[f"{collection}:{row['item_id']}"]["verdict"] not in VERDICTS
        else by_source[f"{collection}:{row['item_id']}"]["verdict"] == "supported"
        for row in rows
    }
    rates = error_rates(label_strata(labels, verdicts), seed)
    return {
        "collection": collection,
        "batches": sorted(set(labels["batch_id"].to_list())),
        "people": sorted(set(labels["who"].to_list())),
        "skipped": labels.filter(pl.col("label") == "skipped")["item_id"].n_unique(),
        "disagreements": disagreements(labels),
        "weighted": asdict(rates) | {"separable": rates.separable, "summary": separability_text(rates)},
        **report,
    }


def label_support(judge: Judge, row: dict) -> float | None:
    """The judge's P(supported) of a labelled statement (a row of judge_labels), None when unreadable."""
    [result] = judge.support_by_passage(passages_of(row["context"]), [row["statement"]], row["question"] or None)
    return result.value.p_supported if result.value else None


def judge_calibration(
    home: Path, collections: Iterable[str], judge_model: str, rejudge: Callable[[dict], float | None]
) -> JudgeCalibration | None:
    """What the judged numbers of an evaluation are corrected with: the labels of its collections
    when they hold any (each labelled statement's verdict by this judge: stored with the label
    when this judge made it, else asked again through rejudge(label row) -> P(supported)), else
    the bundled prior of this judge (judge/priors.py), else None (no correction)."""
    collections = list(collections)
    threshold = support_threshold_for(judge_model)
    labels = collection_labels(home, collections).filter(pl.col("label") != "skipped")
    if labels.height == 0:
        return prior_calibration(judge_model, SUPPORT_PROMPT_VERSION, threshold)
    verdicts = current_verdicts(labels, judge_model, SUPPORT_PROMPT_VERSION, threshold, rejudge)
    strata = label_strata(labels, verdicts)
    batches = labels["batch_id"].n_unique()
    description = (
        f"{labels['item_id'].n_unique()} statements people labelled in collection{'s' if len(collections) > 1 else ''} "
        f"{', '.join(collections)} ({batches} batch{'es' if batches > 1 else ''})"
    )
    return JudgeCalibration("labels", description, tuple(strata), judge_model, SUPPORT_PROMPT_VERSION, threshold)


# The worse answer of a "refusal" pair: what a pipeline that declines an answerable question says.
REFUSAL_TEXT = "I cannot answer this from the documents."


def preference_pairs(golden_path: Path) -> list[dict]:
    """Pairs with a known better answer, built from a golden file's questions and reference answers:
    for each question, its reference answer against (a) the next question's reference answer (fluent
    but off the question) and (b) a refusal. A judge without position bias names the reference
    answer better whichever place it is shown in."""
    entries = []
    for line in golden_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            if record.get("reference_answer"):
                entries.append(record)
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
) -> dict:
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
                {
                    **pair,
                    "better_first": better_first.value.preferred if better_first.value else None,
                    "better_second": better_second.value.preferred if better_second.value else None,
                    "outcome": outcome,
                }
            )
            progress(done, len(pairs))
    tally = tally_pairs([row["outcome"] for row in rows])
    readable = tally["questions"] - tally["unreadable"]
    usage = judging_cost(results)[0]
    return {
        "golden_file": str(golden_path),
        "judge_model": judge.model_id,
        "prompt_version": PREFERENCE_PROMPT_VERSION,
        "pairs": len(rows),
        "readable": readable,
        "flip_rate": tally["inconsistent_share"] if readable else None,
        "accuracy": tally["wins_a"] / readable if readable else None,
        "ties": tally["ties"],
        "unreadable_rate": tally["unreadable"] / len(rows) if rows else 0.0,
        "seconds_per_verdict": usage.seconds / usage.calls if usage.calls else None,
        "usage": usage.as_metrics("judge"),
        "rows": rows,
    }
