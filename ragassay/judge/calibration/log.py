"""What a judge calibration run logs to MLflow, decided here rather than by the command: the
report's settings as params (the judge, its prompt, the labels' source, the seed), its figures
as metrics (plain and weighted, as the collection's evaluations use the judge, the label budget,
the aligned judge's fit), and its rows as the run's table."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from pydantic import BaseModel

from ragassay import tracking
from ragassay.judge.calibration.reports import CollectionCalibration, PairwiseCalibration, SupportCalibration

# Settings of a report, logged as params where the report has them.
PARAMS = ("judge_model", "prompt_version", "labels_file", "golden_file", "support_threshold", "max_items", "seed")
# Numbers of a report that are settings, not figures (logged as params above).
NOT_FIGURES = ("max_items", "seed", "support_threshold", "judge_threshold")


def _numbers(values: BaseModel | None, prefix: str = "", leave_out: tuple[str, ...] = ()) -> dict[str, float]:
    """The fields of a report that are numbers (not flags), names prefixed."""
    if values is None:
        return {}
    return {
        f"{prefix}{key}": value
        for key, value in values.model_dump().items()
        if isinstance(value, int | float) and not isinstance(value, bool) and key not in leave_out
    }


def calibration_log_values(
    report: SupportCalibration | PairwiseCalibration,
) -> tuple[dict[str, str], dict[str, float]]:
    """The params and metrics of a calibration report (judge/calibration/calibrate.calibrate_judge,
    calibrate_collection, calibrate_pairwise)."""
    dumped = report.model_dump()
    params = {key: str(dumped[key]) for key in PARAMS if dumped.get(key) is not None}
    metrics = {**_numbers(report, leave_out=NOT_FIGURES), **report.usage.as_metrics("judge")}
    if isinstance(report, SupportCalibration) and report.judge_own is not None:
        # The judge's own rule beside the learned verdict that reads it.
        params["judge_own_threshold"] = str(report.judge_threshold)
        metrics |= _numbers(report.judge_own, "judge_own_")
    if isinstance(report, SupportCalibration) and report.as_used is not None:
        used = report.as_used
        params |= {"as_used_collection": used.collection, "as_used_aligned": str(used.aligned)}
        metrics |= _numbers(used, "as_used_")
    if isinstance(report, CollectionCalibration):
        params["collection"] = report.collection
        metrics |= _numbers(report.weighted, "weighted_")
        if report.budget is not None:
            budget = report.budget
            params |= {"budget_batch": budget.batch_id, "budget_target_width": str(budget.target_width)}
            if budget.more_labels is not None:
                metrics["budget_more_labels"] = budget.more_labels
        # The fit is logged with the digest of the labels it was made from (a later fit on other
        # labels is another run), its figures as metrics beside the plain judge's.
        aligned = report.aligned_judge
        params |= {
            "aligned_judge_used": str(aligned.used),
            "aligned_judge_labels_digest": aligned.labels_digest,
            "aligned_judge_reason": aligned.reason,
            "aligned_judge_features": ",".join(aligned.features),
        }
        comparison = aligned.model_dump()["comparison"] or {}
        metrics |= {f"alignment_{key}": value for key, value in comparison.items()}
        metrics |= _numbers(aligned.weighted, "aligned_weighted_")
    return params, metrics


def log_calibration_report(home: Path, report: SupportCalibration | PairwiseCalibration, kind: str) -> str:
    """Log the report as one MLflow run (`judge-calibration-KIND`); its run id."""
    params, metrics = calibration_log_values(report)
    rows = pl.DataFrame([row.model_dump() for row in report.rows], infer_schema_length=None)
    collection = report.collection if isinstance(report, CollectionCalibration) else None
    return tracking.log_calibration(
        home,
        f"judge-calibration-{kind}",
        params,
        metrics,
        rows,
        report.confusion if isinstance(report, SupportCalibration) else None,
        collection,
        report.batches if isinstance(report, CollectionCalibration) else [],
        calibration_figures(report),
    )


def calibration_figures(report: SupportCalibration | PairwiseCalibration) -> dict:
    """A collection's calibration with a fitted aligned judge: its agreement with the labels before
    and after alignment (plots.alignment_figure), beside the run's reliability diagram."""
    if not isinstance(report, CollectionCalibration) or report.aligned_judge.comparison is None:
        return {}
    from ragassay import plots

    aligned = report.aligned_judge
    title = f"the judge aligned to {report.collection}'s labels ({report.judge_model.split('@')[0][:50]})"
    return {"alignment": plots.alignment_figure(aligned.comparison, aligned.used, aligned.reason, title)}
