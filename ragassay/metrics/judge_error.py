"""Judged metrics with the judge's own error in them: the judge's sensitivity and specificity
estimated from people's labels, a judged mean corrected for them (Rogan-Gladen), and a 95%
interval that covers both the sampling of questions and the judge's error. Pure numpy.

The model, in writing:
- every support verdict is right or wrong at rates that depend only on the true class of the
  statement: sensitivity Se = P(judged supported | supported), specificity
  Sp = P(judged unsupported | unsupported). Not on the configuration, the document or the metric
  (faithfulness, context recall and citation precision ask the same support prompt).
- a judged metric is a mean over questions of each question's share of supported verdicts,
  m = (1/Q) sum_q (1/n_q) sum_j v_qj: linear in the verdicts. So E[m] = Se * theta + (1 - Sp) *
  (1 - theta), where theta is the same mean of the true labels (what people would have given),
  and theta = (m + Sp - 1) / (Se + Sp - 1) (Rogan and Gladen, 1978). J = Se + Sp - 1 is Youden's
  index, 2 * balanced accuracy - 1: at J = 0 the judge cannot tell the classes apart and nothing
  can be corrected.
- Se and Sp come from labelled statements, sampled in strata (judge label samples a batch's
  statements by the judge's verdict, so that both verdicts are represented). Each stratum s
  stands for W_s statements; within it, the labelled statements are a simple random sample.
  Per stratum, the shares of the four cells (label, current verdict) get a Dirichlet posterior
  with the Jeffreys prior 1/2 on each cell the stratum can hold (a verdict value seen in it);
  the population's cells are P(y, v) = sum_s W_s p_s(y, v) / sum_s W_s, and
  Se = P(1, 1) / P(1, .), Sp = P(0, 0) / P(0, .). For a simple sample (one stratum, four cells)
  this is Se ~ Beta(tp + 1/2, fn + 1/2) and Sp ~ Beta(tn + 1/2, fp + 1/2).

The interval: R replicates, each reweighting the questions and drawing (Se, Sp) from their
posterior; theta* = (m* + Sp* - 1) / (Se* + Sp* - 1), clipped to [0, 1]; the 2.5th and 97.5th
percentiles. The questions are reweighted by the Bayesian bootstrap (Rubin, 1981: Dirichlet(1, ...,
1) weights, the smooth form of resampling them with replacement, as the raw interval does in
metrics/averaging.py) with two pseudo-questions at the bounds of a value (0 and 1; -1 and 1 for a
difference) of weight 1/2 each: m* = sum_i w_i x_i, w ~ Dirichlet(1, ..., 1, 1/2, 1/2). For yes/no
values that draws m* from Jeffreys' Beta(k + 1/2, n - k + 1/2); its point is a batch whose few
questions all score 1 (or 0): resampling them alone would say that m is exactly 1 and, through
the clipping, that the corrected rate is exactly 1 too, where five questions say little. With
many questions the pseudo-questions weigh nothing.
A replicate with J* <= 0 says nothing about theta and is left out. That is the whole of the
estimate only because one is made at all only when J's own 95% interval lies above 0 (balanced
accuracy's above 0.5); otherwise the labels do not show that the judge can tell the classes
apart: there is no corrected estimate, its interval is [0, 1], and `ErrorRates.separable` says
why. Coverage, measured (tests/metrics/test_judge_error.py; BENCHMARKS.md, "Judge-corrected
estimates"): 93-97% of 4,000 seeded replications cover the true rate at rates 0.3-0.9, 30-300
labels and 5-150 questions, where the raw interval covers it in 0-10% at 150 questions.

What the interval does not cover: judge errors that depend on more than the true class (a judge
worse on one configuration's style, or on documents unlike the labelled ones: the default
judge's error rates measured on two other collections differ by far more than their intervals,
judge/calibration/measured_rates.py, which is why only a collection's own labels correct its numbers), labels
that people would give differently, and the choice of the judge's threshold on the labels themselves.

A paired difference of two configurations judged by one judge is (m_b - m_a) / J: the judge's
offset 1 - Sp cancels and only the scale 1 / J is left, so the sign and the randomization p of
the raw difference hold; the corrected difference says how large it is in people's terms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, computed_field

from ragassay.metrics.conversations import group_index

# Cells of a labelled statement: (people's label, the judge's verdict), True = supported.
CELLS = ((True, True), (True, False), (False, True), (False, False))
JEFFREYS = 0.5
RESAMPLES = 4_000
# Below this many labelled statements of either class, the correction warns that its interval is
# wide because of the labels (it is never made narrower than they allow).
MIN_LABELS_PER_CLASS = 10


@dataclass(frozen=True)
class LabelStratum:
    """Labelled statements of one stratum of a sample: how many statements it stands for, and the
    count of each (label, verdict) cell among its labels."""

    name: str
    population: float
    supported_judged_supported: int = 0
    supported_judged_unsupported: int = 0
    unsupported_judged_supported: int = 0
    unsupported_judged_unsupported: int = 0

    def counts(self) -> np.ndarray:
        return np.array(
            [
                self.supported_judged_supported,
                self.supported_judged_unsupported,
                self.unsupported_judged_supported,
                self.unsupported_judged_unsupported,
            ],
            dtype=np.float64,
        )

    @property
    def labelled(self) -> int:
        return int(self.counts().sum())


class ErrorRates(BaseModel):
    """The judge's error rates from labels: point estimates and 95% intervals; with them, whether
    the labels show the judge separating the classes and that said in words (both in its dump)."""

    model_config = ConfigDict(frozen=True)

    labelled: int
    labelled_supported: int
    labelled_unsupported: int
    sensitivity: float | None
    specificity: float | None
    balanced_accuracy: float | None
    sensitivity_low: float
    sensitivity_high: float
    specificity_low: float
    specificity_high: float
    balanced_accuracy_low: float
    balanced_accuracy_high: float

    @computed_field
    @property
    def separable(self) -> bool:
        """Whether the labels show the judge telling the classes apart: balanced accuracy's 95%
        interval lies above 0.5."""
        return self.balanced_accuracy is not None and self.balanced_accuracy_low > 0.5

    @computed_field
    @property
    def summary(self) -> str:
        """separable, in words (separability_text)."""
        return separability_text(self)


def _cell_priors(stratum: LabelStratum) -> np.ndarray:
    """Jeffreys' 1/2 on each cell whose verdict occurs in the stratum, 0 on the others: a stratum
    sampled by the judge's verdict holds only that verdict while the judge is the same one."""
    counts = stratum.counts()
    judged_supported = counts[0] + counts[2] > 0
    judged_unsupported = counts[1] + counts[3] > 0
    possible = np.array([judged_supported, judged_unsupported, judged_supported, judged_unsupported])
    return np.where(possible, JEFFREYS, 0.0)


def population_cells(strata: Sequence[LabelStratum]) -> np.ndarray:
    """P(label, verdict) over the statements the strata stand for (plug-in, no prior): each
    stratum's cell shares weighted by its population."""
    total = sum(s.population for s in strata if s.labelled)
    cells = np.zeros(4)
    for stratum in strata:
        if stratum.labelled:
            cells += stratum.population / total * stratum.counts() / stratum.labelled
    return cells


def draw_cells(strata: Sequence[LabelStratum], draws: int, rng: np.random.Generator) -> np.ndarray:
    """`draws` samples of P(label, verdict) from the strata's Dirichlet posteriors, shape (draws, 4)."""
    labelled = [s for s in strata if s.labelled]
    total = sum(s.population for s in labelled)
    cells = np.zeros((draws, 4))
    for stratum in labelled:
        alpha = stratum.counts() + _cell_priors(stratum)
        gamma = np.where(alpha > 0, rng.gamma(np.maximum(alpha, 1e-300), size=(draws, 4)), 0.0)
        cells += stratum.population / total * gamma / gamma.sum(axis=1, keepdims=True)
    return cells


def _rates(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Se, Sp) of cell shares [..., 4]: Se = P(1,1) / P(1,.), Sp = P(0,0) / P(0,.); NaN where a
    class has no share."""
    with np.errstate(invalid="ignore", divide="ignore"):
        sensitivity = cells[..., 0] / (cells[..., 0] + cells[..., 1])
        specificity = cells[..., 3] / (cells[..., 2] + cells[..., 3])
    return sensitivity, specificity


def _class_counts(strata: Sequence[LabelStratum]) -> tuple[int, int]:
    counts = sum((s.counts() for s in strata), np.zeros(4))
    return int(counts[0] + counts[1]), int(counts[2] + counts[3])


def error_rates(strata: Sequence[LabelStratum], seed: int = 0, resamples: int = RESAMPLES) -> ErrorRates:
    """Sensitivity, specificity and balanced accuracy = (Se + Sp) / 2 of the judge over the
    statements the strata stand for, each with the 2.5th and 97.5th percentiles of its posterior
    draws (draw_cells). A class without labels has no point estimate, and its interval is [0, 1]."""
    supported, unsupported = _class_counts(strata)
    if not supported and not unsupported:
        return ErrorRates(
            labelled=0,
            labelled_supported=0,
            labelled_unsupported=0,
            sensitivity=None,
            specificity=None,
            balanced_accuracy=None,
            sensitivity_low=0.0,
            sensitivity_high=1.0,
            specificity_low=0.0,
            specificity_high=1.0,
            balanced_accuracy_low=0.0,
            balanced_accuracy_high=1.0,
        )
    sensitivity, specificity = (None if np.isnan(r) else float(r) for r in _rates(population_cells(strata)))
    balanced = None if sensitivity is None or specificity is None else (sensitivity + specificity) / 2
    drawn_se, drawn_sp = _rates(draw_cells(strata, resamples, np.random.default_rng(seed)))
    se_low, se_high = np.percentile(np.nan_to_num(drawn_se, nan=0.5), [2.5, 97.5])
    sp_low, sp_high = np.percentile(np.nan_to_num(drawn_sp, nan=0.5), [2.5, 97.5])
    ba_low, ba_high = np.percentile(np.nan_to_num((drawn_se + drawn_sp) / 2, nan=0.5), [2.5, 97.5])
    return ErrorRates(
        labelled=supported + unsupported,
        labelled_supported=supported,
        labelled_unsupported=unsupported,
        sensitivity=sensitivity,
        specificity=specificity,
        balanced_accuracy=balanced,
        sensitivity_low=float(se_low) if supported else 0.0,
        sensitivity_high=float(se_high) if supported else 1.0,
        specificity_low=float(sp_low) if unsupported else 0.0,
        specificity_high=float(sp_high) if unsupported else 1.0,
        balanced_accuracy_low=float(ba_low) if supported and unsupported else 0.0,
        balanced_accuracy_high=float(ba_high) if supported and unsupported else 1.0,
    )


@dataclass(frozen=True)
class Corrected:
    """A judged mean (or paired difference) corrected for the judge's error: the estimate (None
    when the labels do not show the judge telling the classes apart) and its 95% interval."""

    raw: float
    estimate: float | None
    low: float
    high: float
    questions: int


def _reweighted_means(
    values: np.ndarray, bounds: tuple[float, float], resamples: int, rng, groups: Sequence[str] | None = None
) -> np.ndarray:
    """`resamples` means of the values under Bayesian-bootstrap weights, with a pseudo-question of
    weight 1/2 at each bound (module docstring): m* = sum_i w_i x_i, w ~ Dirichlet(1, ..., 1, 1/2, 1/2).
    groups: each value's group (a golden dialogue's turns; metrics/conversations.py): the values
    of a group share one weight, so a dialogue's turns are reweighted together. Every group of
    one value is the plain form, with the same draws."""
    # Gamma(1) is the exponential, drawn much faster; normalized gamma draws are Dirichlet.
    index, count = group_index(groups) if groups is not None else (np.arange(values.size), values.size)
    weights = rng.standard_exponential((resamples, count))[:, index]
    pseudo = rng.gamma(JEFFREYS, size=(resamples, 2))
    total = weights @ values + pseudo @ np.asarray(bounds, dtype=np.float64)
    return total / (weights.sum(axis=1) + pseudo.sum(axis=1))


def _corrected_draws(raw_draws: np.ndarray, sensitivity: np.ndarray, specificity: np.ndarray, offset: bool):
    """theta* = (m* + Sp* - 1) / J* (offset) or m* / J* (a difference), J* = Se* + Sp* - 1; NaN
    (left out) where J* <= 0 or a rate is undefined."""
    youden = sensitivity + specificity - 1
    uninformative = ~(youden > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = ((raw_draws + specificity - 1) if offset else raw_draws) / youden
    values[uninformative] = np.nan
    return values


def corrected_mean(
    values: Sequence[float | None],
    strata: Sequence[LabelStratum],
    seed: int = 0,
    resamples: int = RESAMPLES,
    groups: Sequence[str] | None = None,
) -> Corrected | None:
    """The Rogan-Gladen corrected mean of per-question judged values (None: not scored) and its
    95% interval over questions and labels (module docstring). None when nothing was scored.
    groups: each value's group, reweighted together (_reweighted_means).

    estimate = clip((m + Sp - 1) / (Se + Sp - 1), 0, 1) with the plug-in Se, Sp; None, and the
    interval [0, 1], unless the labels show the judge separating the classes (ErrorRates.separable).
    """
    counted = np.array([value for value in values if value is not None], dtype=np.float64)
    if counted.size == 0:
        return None
    raw = float(counted.mean())
    rates = error_rates(strata, seed, resamples)
    if not rates.separable:
        return Corrected(raw, None, 0.0, 1.0, int(counted.size))
    rng = np.random.default_rng(seed)
    scored_groups = [g for g, v in zip(groups, values, strict=True) if v is not None] if groups is not None else None
    means = _reweighted_means(counted, (0.0, 1.0), resamples, rng, scored_groups)
    sensitivity, specificity = _rates(draw_cells(strata, resamples, rng))
    draws = np.clip(_corrected_draws(means, sensitivity, specificity, offset=True), 0, 1)
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    youden = rates.sensitivity + rates.specificity - 1
    estimate = float(np.clip((raw + rates.specificity - 1) / youden, 0, 1))
    return Corrected(raw, estimate, float(low), float(high), int(counted.size))


def corrected_difference(
    a: np.ndarray,
    b: np.ndarray,
    strata: Sequence[LabelStratum],
    seed: int = 0,
    resamples: int = RESAMPLES,
    groups: Sequence[str] | None = None,
) -> Corrected | None:
    """The corrected paired difference of two configurations judged by one judge, b - a over the
    same questions (same order): (m_b - m_a) / (Se + Sp - 1), its interval from replicates that
    reweight the questions in pairs (module docstring; a group's together) and draw (Se, Sp), in
    [-1, 1]. None without questions; no estimate, interval [-1, 1], when the labels do not show
    the judge separating the classes."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size == 0:
        return None
    differences = b - a
    raw = float(differences.mean())
    rates = error_rates(strata, seed, resamples)
    if not rates.separable:
        return Corrected(raw, None, -1.0, 1.0, int(a.size))
    rng = np.random.default_rng(seed)
    means = _reweighted_means(differences, (-1.0, 1.0), resamples, rng, groups)
    sensitivity, specificity = _rates(draw_cells(strata, resamples, rng))
    draws = np.clip(_corrected_draws(means, sensitivity, specificity, offset=False), -1, 1)
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    estimate = float(np.clip(raw / (rates.sensitivity + rates.specificity - 1), -1, 1))
    return Corrected(raw, estimate, float(low), float(high), int(a.size))


def simple_strata(labels: Sequence[bool], verdicts: Sequence[bool], name: str = "labels") -> list[LabelStratum]:
    """One stratum of a simple random sample of labelled statements (its population: itself)."""
    cells = dict.fromkeys(CELLS, 0)
    for label, verdict in zip(labels, verdicts, strict=True):
        cells[(bool(label), bool(verdict))] += 1
    return [
        LabelStratum(
            name,
            float(len(labels)),
            cells[(True, True)],
            cells[(True, False)],
            cells[(False, True)],
            cells[(False, False)],
        )
    ]


def separability_text(rates: ErrorRates) -> str:
    """One line on whether the labels show the judge telling supported from unsupported."""
    if rates.balanced_accuracy is None:
        return "the labels hold only one class, so the judge's error cannot be measured"
    measured = (
        f"balanced accuracy {rates.balanced_accuracy:.2f} [{rates.balanced_accuracy_low:.2f}, "
        f"{rates.balanced_accuracy_high:.2f}]"
    )
    if rates.separable:
        return f"on {rates.labelled} labels the judge tells supported from unsupported ({measured})"
    if rates.balanced_accuracy <= 0.5:
        return (
            f"on {rates.labelled} labels the judge cannot tell supported from unsupported ({measured}: chance is 0.5)"
        )
    # A good point estimate beside "cannot tell" reads as a contradiction unless it says why: the
    # interval still reaches chance, nearly always because one class has few labels.
    rarer, fewest = min(
        ("supported", rates.labelled_supported), ("unsupported", rates.labelled_unsupported), key=lambda c: c[1]
    )
    return (
        f"on {rates.labelled} labels the judge cannot yet be shown to tell supported from unsupported: its "
        f"{measured} still reaches chance (0.5), with only {fewest} {rarer} labels; more labels of "
        f"{rarer} statements narrow it"
    )
