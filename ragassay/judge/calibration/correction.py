"""What an evaluation's judged metrics are corrected with: the judge's verdicts on the labels its
collections hold, in strata by verdict (metrics/judge_error.JudgeCalibration), or no correction."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

from ragassay.judge.calibration.alignment import AlignedJudges
from ragassay.judge.calibration.labelled_statements import (
    collection_labels,
)
from ragassay.judge.calibration.labels import (
    current_probabilities,
    label_strata,
)
from ragassay.judge.learned_verdict import verdict_version
from ragassay.judge.support_rules import support_threshold_for
from ragassay.metrics.judge_calibration import JudgeCalibration
from ragassay.store.judge_schemas import JUDGE_LABELS


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
    rates differ between collections too much for them to correct these (judge/calibration/measured_rates.py).

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
        probabilities = current_probabilities(labels, judge_model, verdict_version(judge_model), rejudge)
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
        verdict_version(judge_model),
        threshold,
        aligned.described(),
        aligned.notes,
    )
