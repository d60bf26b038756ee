"""What a judge calibration run logs to MLflow, decided here rather than by the command: the
report's settings as params (the judge, its prompt, the labels' source, the seed), its figures
as metrics (plain and weighted, as the collection's evaluations use the judge, the label budget,
the aligned judge's fit), and its rows as the run's table."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ragassay import tracking


def _numbers(values: dict, prefix: str = "") -> dict[str, float]:
    """The entries that are numbers (not flags), keys prefixed."""
    return {
        f"{prefix}{key}": value
        for key, value in values.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }


def calibration_log_values(report: dict) -> tuple[dict[str, str], dict[str, float]]:
    """The params and metrics of a calibration report (judge/calibration.calibrate_judge,
    calibrate_collection, calibrate_pairwise)."""
    scalar = _numbers(report) | _numbers(report.get("weighted", {}), "weighted_")
    params = {
        key: str(report[key])
        for key in (
            "judge_model",
            "prompt_version",
            "labels_file",
            "golden_file",
            "support_threshold",
            "max_items",
            "seed",
            "collection",
        )
        if key in report
    }
    metrics = {
        **{key: value for key, value in scalar.items() if key not in ("max_items", "seed", "support_threshold")},
        **report["usage"],
    }
    if "as_used" in report:
        used = report["as_used"]
        params |= {"as_used_collection": used["collection"], "as_used_aligned": str(used["aligned"])}
        metrics |= _numbers(used, "as_used_")
    if "budget" in report:
        budget = report["budget"]
        params |= {"budget_batch": budget["batch_id"], "budget_target_width": str(budget["target_width"])}
        if budget["more_labels"] is not None:
            metrics["budget_more_labels"] = budget["more_labels"]
    aligned = report.get("aligned_judge")
    if aligned is not None:
        # The fit is logged with the digest of the labels it was made from (a later fit on other
        # labels is another run), its figures as metrics beside the plain judge's.
        params |= {
            "aligned_judge_used": str(aligned["used"]),
            "aligned_judge_labels_digest": aligned["labels_digest"],
            "aligned_judge_reason": aligned["reason"],
            "aligned_judge_features": ",".join(aligned["features"]),
        }
        metrics |= {f"alignment_{key}": value for key, value in (aligned["comparison"] or {}).items()}
        metrics |= _numbers(aligned.get("weighted", {}), "aligned_weighted_")
    return params, metrics


def log_calibration_report(home: Path, report: dict, kind: str) -> str:
    """Log the report as one MLflow run (`judge-calibration-KIND`); its run id."""
    params, metrics = calibration_log_values(report)
    rows = pl.DataFrame(report["rows"], infer_schema_length=None)
    return tracking.log_calibration(
        home,
        f"judge-calibration-{kind}",
        params,
        metrics,
        rows,
        report.get("confusion"),
        report.get("collection"),
        report.get("batches", []),
    )
