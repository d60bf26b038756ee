"""How many more labels would narrow a judge-corrected interval to a width: the labels drawn again,
in the strata's proportions, until the corrected mean's 95% interval is that narrow
(labels_for_width), or the floor no number of labels goes below."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from ragassay.metrics.judge_error import LabelStratum, corrected_mean

# The most labels a budget looks for; and the interval's replicates while it searches (its width
# moves by about 1% between seeds at this many).
MAX_BUDGET_LABELS = 100_000


BUDGET_RESAMPLES = 2_000


class LabelBudget(BaseModel):
    """How many more labels would narrow one batch's corrected interval to target_width: now
    (current_width), at the most labels (floor_width: the questions' own sampling, error rates as
    good as known), and more_labels (None when even the floor is wider than the target; 0 when
    the interval is already that narrow)."""

    model_config = ConfigDict(frozen=True)

    target_width: float
    current_width: float
    floor_width: float
    more_labels: int | None
    labelled: int


def _grown(strata: Sequence[LabelStratum], more: int) -> list[LabelStratum]:
    """The strata with `more` labels added, shared among the strata as the labels so far are and
    falling in each stratum's cells as its labels so far do (expected counts, rounded)."""
    labelled = sum(s.labelled for s in strata)
    grown = []
    for stratum in strata:
        if not stratum.labelled:
            grown.append(stratum)
            continue
        factor = 1 + more / labelled
        grown.append(
            LabelStratum(stratum.name, stratum.population, *(round(float(c * factor)) for c in stratum.counts()))
        )
    return grown


def labels_for_width(
    values: Sequence[float | None], strata: Sequence[LabelStratum], target_width: float, seed: int = 0
) -> LabelBudget | None:
    """The fewest more labels at which corrected_mean's 95% interval of these per-question values
    is at most target_width wide, if labels drawn as the ones so far were keep their shares:
    a power analysis by the interval itself (its width at expected counts, bisected over the
    number of labels), not by a normal approximation. None when the values have no corrected
    interval (nothing scored, or the labels do not show the judge separating the classes)."""

    def width(more: int) -> float | None:
        corrected = corrected_mean(values, _grown(strata, more), seed, BUDGET_RESAMPLES)
        return None if corrected is None or corrected.estimate is None else corrected.high - corrected.low

    current, floor = width(0), width(MAX_BUDGET_LABELS)
    labelled = sum(s.labelled for s in strata)
    if current is None or floor is None:
        return None
    if current <= target_width:
        return LabelBudget(
            target_width=target_width, current_width=current, floor_width=floor, more_labels=0, labelled=labelled
        )
    if floor > target_width:
        return LabelBudget(
            target_width=target_width, current_width=current, floor_width=floor, more_labels=None, labelled=labelled
        )
    low, high = 0, MAX_BUDGET_LABELS
    while high - low > max(1, low // 50):  # within 2%: the width itself is that noisy
        middle = (low + high) // 2
        narrow = width(middle)
        if narrow is not None and narrow <= target_width:
            high = middle
        else:
            low = middle
    return LabelBudget(
        target_width=target_width, current_width=current, floor_width=floor, more_labels=high, labelled=labelled
    )
