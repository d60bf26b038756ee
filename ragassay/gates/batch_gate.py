"""`ragassay gate` without its terminal: find the two batches, read their per-question tables
from MLflow, and compare every bound the user gave (gates/regression.py's pure functions), with
the coverage warnings beside them. The command parses, renders and sets the exit code only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragassay import tracking
from ragassay.errors import ConfigError
from ragassay.gates.regression import (
    CORRECTED,
    COVERAGE,
    DropRow,
    bounds_of_kind,
    calibration_strata,
    compare_batches,
    coverage_drops,
    parse_drop_bound,
    per_question_scores,
)


@dataclass(frozen=True)
class GateOutcome:
    """The candidate compared (the one given, or the newest other batch over the baseline's
    collections), a row per configuration and bound (regression.compare_batches' columns), and a
    warning per configuration whose coverage dropped."""

    candidate: str
    results: list[DropRow]
    warnings: list[str]

    @property
    def failed(self) -> list[DropRow]:
        return [r for r in self.results if r.failed]


def gate_batches(
    home: Path, baseline: str, candidate: str | None, max_drop: list[str], alpha: float, seed: int
) -> GateOutcome:
    """Compare the candidate batch with the baseline under each `--max-drop` bound; a ConfigError
    (exit 2) when a batch is unknown or unfinished, or no bound can be compared. Without a
    candidate, the newest finished batch over the baseline's collections."""
    bounds = [parse_drop_bound(text) for text in max_drop]
    collections = tracking.batch_collections(home, baseline)
    if collections is None:
        raise ConfigError(f"no batch {baseline!r}; `ragassay runs list` shows the batches")
    candidate = candidate or tracking.latest_batch(home, collections, excluding=baseline)
    if candidate is None or tracking.batch_collections(home, candidate) is None:
        raise ConfigError(
            f"no candidate batch {candidate!r}"
            if candidate
            else f"no other finished batch over {collections} to compare with {baseline}"
        )
    for role, named in (("baseline", baseline), ("candidate", candidate)):
        # RUNNING: its process was killed while it logged (or it still runs); KILLED: stopped. A
        # FAILED pipeline batch named on purpose is compared: the stages before the failure are whole.
        status = tracking.batch_status(home, named)
        if status in ("RUNNING", "SCHEDULED", "KILLED"):
            raise ConfigError(
                f"{role} batch {named} is {status}, not finished (stopped or killed while it logged): its tables "
                "may be incomplete, so it is not compared; `ragassay runs list` shows each batch's status"
            )
    before, after = tracking.batch_tables(home, baseline), tracking.batch_tables(home, candidate)
    results, warnings = [], []
    for kind in ("retrieval", "answers"):
        kind_bounds = bounds_of_kind(bounds, kind)
        both = kind in before and kind in after
        if both:
            scores = [
                {label: per_question_scores(kind, table) for label, table in tables[kind].items()}
                for tables in (before, after)
            ]
            warnings += [f"{kind}: {line}" for line in coverage_drops(*scores)]
        if not kind_bounds or (not both and all(b.metric == COVERAGE for b in kind_bounds)):
            continue
        if not both:
            raise ConfigError(
                f"--max-drop {next(b for b in kind_bounds if b.metric != COVERAGE).metric}: both batches need {kind} results "
                f"(baseline has {', '.join(before) or 'none'}, candidate {', '.join(after) or 'none'})"
            )
        calibration = None
        if any(b.metric.endswith(CORRECTED) for b in kind_bounds):
            table = tracking.batch_parent_table(home, candidate, "judge_calibration")
            calibration = calibration_strata(table) if table is not None else None
        results += [
            DropRow.model_validate(row)
            for row in compare_batches(*scores, kind_bounds, alpha, seed, calibration).to_dicts()
        ]
    if bounds and not results:
        raise ConfigError("no bound could be compared: neither batch kind holds what --max-drop names")
    return GateOutcome(candidate, results, warnings)
