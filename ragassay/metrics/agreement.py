"""How far a judge agrees with people: accuracy, balanced accuracy, Cohen's kappa with a bootstrap
interval, per-class precision and recall. Pure functions over (label, verdict) pairs; the
positive class is "supported"."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

Verdict = bool | None
BOOTSTRAP_RESAMPLES = 2000


class Agreement(BaseModel):
    """A judge against human labels over its readable verdicts (positive class: supported)."""

    model_config = ConfigDict(frozen=True)

    labelled: int
    readable: int
    accuracy: float | None
    balanced_accuracy: float | None
    kappa: float | None
    kappa_ci_low: float | None
    kappa_ci_high: float | None
    precision_supported: float | None
    recall_supported: float | None
    precision_unsupported: float | None
    recall_unsupported: float | None
    confusion: dict[str, int]
    unreadable_rate: float


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def cohen_kappa(labels: np.ndarray, verdicts: np.ndarray) -> float:
    """kappa = (p_o - p_e) / (1 - p_e), with p_o the share of agreements and
    p_e = P(label+)P(verdict+) + P(label-)P(verdict-) the agreement expected by chance.
    When p_e = 1 (every label and every verdict the same class) kappa is 0: the agreement then
    says nothing beyond chance."""
    observed = float(np.mean(labels == verdicts))
    label_positive, verdict_positive = float(np.mean(labels)), float(np.mean(verdicts))
    expected = label_positive * verdict_positive + (1 - label_positive) * (1 - verdict_positive)
    # Rounded so that float noise does not print as -0.000 when agreement equals chance.
    return 0.0 if expected >= 1 else round((observed - expected) / (1 - expected), 12) + 0.0


def kappa_interval(
    labels: np.ndarray, verdicts: np.ndarray, seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float]:
    """95% percentile bootstrap interval of kappa: resample the (label, verdict) pairs with
    replacement `resamples` times (seeded), take the 2.5th and 97.5th percentiles."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(labels), size=(resamples, len(labels)))
    kappas = [cohen_kappa(labels[pick], verdicts[pick]) for pick in picks]
    low, high = np.percentile(kappas, [2.5, 97.5])
    return round(float(low), 12) + 0.0, round(float(high), 12) + 0.0


def agreement(labels: Sequence[bool], verdicts: Sequence[Verdict], seed: int = 0) -> Agreement:
    """Agreement over readable verdicts (None is unreadable), and the unreadable rate.

    accuracy = (tp + tn) / n;  balanced accuracy = (tp / (tp + fn) + tn / (tn + fp)) / 2, the mean
    recall of the two classes (what a judge that always says "supported" scores 0.5 on);
    precision_c = correct verdicts c / verdicts c;  recall_c = correct verdicts c / labels c;
    kappa as in `cohen_kappa`, with a seeded bootstrap 95% interval (`kappa_interval`).
    """
    pairs = [(label, verdict) for label, verdict in zip(labels, verdicts, strict=True) if verdict is not None]
    tp = sum(1 for lab, v in pairs if lab and v)
    fn = sum(1 for lab, v in pairs if lab and not v)
    fp = sum(1 for lab, v in pairs if not lab and v)
    tn = sum(1 for lab, v in pairs if not lab and not v)
    confusion = {
        "supported_judged_supported": tp,
        "supported_judged_unsupported": fn,
        "unsupported_judged_supported": fp,
        "unsupported_judged_unsupported": tn,
    }
    unreadable_rate = (len(labels) - len(pairs)) / len(labels) if labels else 0.0
    if not pairs:
        return Agreement(
            labelled=len(labels),
            readable=0,
            accuracy=None,
            balanced_accuracy=None,
            kappa=None,
            kappa_ci_low=None,
            kappa_ci_high=None,
            precision_supported=None,
            recall_supported=None,
            precision_unsupported=None,
            recall_unsupported=None,
            confusion=confusion,
            unreadable_rate=unreadable_rate,
        )
    label_array = np.array([lab for lab, _ in pairs], dtype=bool)
    verdict_array = np.array([v for _, v in pairs], dtype=bool)
    recall_supported, recall_unsupported = _ratio(tp, tp + fn), _ratio(tn, tn + fp)
    balanced = (
        None if recall_supported is None or recall_unsupported is None else (recall_supported + recall_unsupported) / 2
    )
    low, high = kappa_interval(label_array, verdict_array, seed)
    return Agreement(
        labelled=len(labels),
        readable=len(pairs),
        accuracy=(tp + tn) / len(pairs),
        balanced_accuracy=balanced,
        kappa=cohen_kappa(label_array, verdict_array),
        kappa_ci_low=low,
        kappa_ci_high=high,
        precision_supported=_ratio(tp, tp + fp),
        recall_supported=recall_supported,
        precision_unsupported=_ratio(tn, tn + fn),
        recall_unsupported=recall_unsupported,
        confusion=confusion,
        unreadable_rate=unreadable_rate,
    )
