"""The judge's support verdicts against statements people labelled (metrics/agreement.py), as its
own rule reads them and as a learned verdict does: `calibrate_statements`, and one labelled
statement's P(supported) asked again (`label_support`)."""

from __future__ import annotations

from ragassay.judge.calibration.labelled_statements import (
    LabelledStatement,
    context_groups,
)
from ragassay.judge.calibration.reports import (
    CalibrationRow,
    SupportCalibration,
)
from ragassay.judge.judge import Judge, judging_cost, verdict_of
from ragassay.judge.learned_verdict import verdict_version
from ragassay.judge.prompts import passages_of
from ragassay.llm.structured import Structured
from ragassay.metrics.agreement import agreement
from ragassay.progress import ProgressReporter


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


def _calibration_row(
    item: LabelledStatement, stored: dict[str, float], asked: dict[str, Structured], threshold: float
) -> tuple[CalibrationRow, bool | None]:
    """One labelled statement's row and verdict: its stored P read against the threshold, or the
    verdict just asked."""
    own = None
    if item.source in stored:
        p, verdict, too_long, error = stored[item.source], stored[item.source] >= threshold, False, None
    else:
        result = asked[item.source]
        p = result.value.p_supported if result.value else None
        own = result.value.judge_p_supported if result.value else None
        verdict, too_long, error = verdict_of(result), result.too_long, result.error
    said = (
        "too_long" if too_long else ("unreadable" if verdict is None else ("supported" if verdict else "unsupported"))
    )
    row = CalibrationRow(
        source=item.source,
        statement=item.statement,
        label="supported" if item.supported else "unsupported",
        verdict=said,
        p_supported=p,
        judge_p_supported=own,
        error=error,
    )
    return row, verdict


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
    rows, own = [], {}  # own: the judge's own P where a learned verdict read it
    fitting, verdicts = [], []
    for item in labelled:
        row, verdict = _calibration_row(item, stored, asked, judge.support_threshold)
        if item.source not in stored:
            own[item.source] = row.judge_p_supported
        if row.verdict != "too_long":
            fitting.append(item)
            verdicts.append(verdict)
        rows.append(row)
    usage = judging_cost(list(asked.values()))[0]
    return SupportCalibration(
        judge_model=judge.model_id,
        prompt_version=verdict_version(judge.model_id),
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


def label_support(judge: Judge, row: dict) -> float | None:
    """The judge's P(supported) of a labelled statement (a row of judge_labels), None when unreadable."""
    [result] = judge.support_by_passage(passages_of(row["context"]), [row["statement"]], row["question"] or None)
    return result.value.p_supported if result.value else None
