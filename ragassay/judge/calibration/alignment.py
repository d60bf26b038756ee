"""A judge aligned to a collection's labels: what turns the judge's P(supported) of a statement,
and cheap signals beside it, into this collection's verdict, fitted on the labels people gave it.

- **Features** of a judged statement (`statement_features`): the judge's log-odds
  logit(clip(P(supported))), the statement's lexical overlap with its most similar passage
  (judge/passage_choice.lexical_similarity) and the share of its numbers found in the context.
  All three are what a support verdict already has at hand: no model call, no embedding.
- **Model**: standardized features, a logistic regression with balanced class weights
  (scikit-learn), supported when its probability is >= 0.5. Balanced weights make that cut the
  one that maximizes balanced accuracy on the labels, the figure the correction's divisor
  J = Se + Sp - 1 is made of. Measured against isotonic calibration of P alone and the same
  regression on P alone on MEMERAG-EXT's development half (benchmarks/bench_judge_alignment.py;
  BENCHMARKS.md, "Aligned judge"), and against few-shot demonstrations drawn from the labels into
  the prompt on SciFact claims (benchmarks/bench_judge_scifact.py few-shot): those ranked claims
  no better than the plain prompt and took 1.2-1.4x the seconds, so labels teach through this model.
- **Cross-fitting**: the labels are split into folds by question (StratifiedGroupKFold: the
  statements of one question's answers are never on both sides), each fold predicted by a model
  fitted on the others. These out-of-fold predictions are the only ones the comparison and the
  judge-error correction read: a prediction on a label its model was fitted on would report the
  fit, not the judge.
- **When it is used** (`USE_RULE`): at least MIN_LABELS_PER_CLASS labels of each class and
  MIN_GROUPS questions, and the cross-fitted balanced accuracy ahead of the plain threshold's in
  at least AHEAD_SHARE of cluster-bootstrap replicates (questions resampled, both judges read on
  the same replicate: ahead more often than behind), and its cross-fitted AUC not clearly below
  the plain P's (below in fewer than AUC_BELOW_SHARE of them: an aligned judge may move the cut
  without ranking better; it may not rank clearly worse). Otherwise the plain judge stays and the
  report says which condition failed. AHEAD_SHARE was 0.9 until 2026-12-06: on collections where
  the fit was level with the plain judge, using it whenever it is ahead more often than behind
  cost at most 0.005 balanced accuracy on average, and where it was ahead (a collection whose
  passages lack the evidence, SciFact's later batch) the 0.9 rule kept it out of half the
  evaluations it would have improved (BENCHMARKS.md, "A collection where the evidence is
  missing"). The corrected estimates stay honest either way: their error rates are cross-fitted.

Pure: scikit-learn and numpy, no file or model. The stored form is JSON (`as_json`), never pickle.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ragassay.judge.passage_choice import lexical_similarity
from ragassay.judge.prompts import passages_of
from ragassay.metrics.judge_error import MIN_LABELS_PER_CLASS

FEATURES = ("judge_log_odds", "lexical_overlap", "numbers_found")
# P(supported) is clipped to [EPSILON, 1 - EPSILON] before its logit: the judge reports 0 and 1.
EPSILON = 1e-4
MIN_GROUPS = 6
MAX_FOLDS = 5
AHEAD_SHARE = 0.5
AUC_BELOW_SHARE = 0.9
RESAMPLES = 1_000
# Inverse regularization strength of the logistic regression (scikit-learn's default): three
# features, tens of labels; not tuned.
REGULARIZATION = 1.0
SCHEMA_VERSION = 1
USE_RULE = (
    f"used when there are >= {MIN_LABELS_PER_CLASS} labels of each class from >= {MIN_GROUPS} questions, its "
    f"cross-fitted balanced accuracy is ahead of the plain threshold's in >= {AHEAD_SHARE:.0%} of "
    f"{RESAMPLES} question-level bootstrap replicates, and its cross-fitted AUC is not clearly below the plain "
    f"P's (below in fewer than {AUC_BELOW_SHARE:.0%} of them)"
)

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def numbers_found(statement: str, context: str) -> float:
    """The share of the statement's numbers (digit runs, with their decimal or thousands
    separators) that occur in the context as written; 1.0 when the statement has none."""
    numbers = set(_NUMBER.findall(statement))
    if not numbers:
        return 1.0
    found = set(_NUMBER.findall(context))
    return sum(number in found for number in numbers) / len(numbers)


def statement_features(statement: str, context: str, p_supported: float) -> tuple[float, ...]:
    """FEATURES of one judged statement:
    judge_log_odds = ln(p / (1 - p)), p = clip(P(supported), EPSILON, 1 - EPSILON);
    lexical_overlap = max over the context's passages of lexical_similarity(statement, passage);
    numbers_found as above."""
    p = min(max(p_supported, EPSILON), 1 - EPSILON)
    overlap = max(lexical_similarity(statement, passages_of(context)), default=0.0)
    return (math.log(p / (1 - p)), overlap, numbers_found(statement, context))


@dataclass(frozen=True)
class LabelledJudgement:
    """One labelled statement with the judge's P(supported) of it: what alignment is fitted on.
    group: the question it answers (folds and bootstrap resample whole groups)."""

    item_id: str
    group: str
    statement: str
    context: str
    p_supported: float
    supported: bool


def labels_digest(labels: Iterable[tuple[str, bool]]) -> str:
    """sha256 of the sorted (item id, supported) pairs: which labels a fit was made from."""
    pairs = sorted(f"{item}\t{'supported' if supported else 'unsupported'}" for item, supported in labels)
    return hashlib.sha256("\n".join(pairs).encode()).hexdigest()


@dataclass(frozen=True)
class Comparison:
    """The plain threshold against the aligned judge's cross-fitted predictions on the same labels:
    balanced accuracy and AUC with 95% question-level bootstrap intervals, and the share of
    replicates in which the aligned balanced accuracy was higher and in which its AUC was lower."""

    labelled: int
    labelled_supported: int
    labelled_unsupported: int
    groups: int
    folds: int
    plain_balanced_accuracy: float
    plain_balanced_accuracy_low: float
    plain_balanced_accuracy_high: float
    plain_auc: float
    plain_auc_low: float
    plain_auc_high: float
    aligned_balanced_accuracy: float
    aligned_balanced_accuracy_low: float
    aligned_balanced_accuracy_high: float
    aligned_auc: float
    aligned_auc_low: float
    aligned_auc_high: float
    ahead_share: float
    auc_behind_share: float


@dataclass(frozen=True)
class AlignedJudge:
    """A fitted aligned judge of one collection, for one judge (model, prompt version, threshold
    of its plain verdicts), and whether cross-validation let it be used (`used`, `reason`).

    cross_fitted: each training label's out-of-fold verdict (item id -> supported), what the
    judge-error correction reads for those labels."""

    collection: str
    judge_model: str
    prompt_version: str
    support_threshold: float
    labels_digest: str
    used: bool
    reason: str
    features: tuple[str, ...] = FEATURES
    mean: tuple[float, ...] = ()
    scale: tuple[float, ...] = ()
    coefficients: tuple[float, ...] = ()
    intercept: float = 0.0
    comparison: Comparison | None = None
    cross_fitted: dict[str, bool] = field(default_factory=dict)

    def probability(self, statement: str, context: str, p_supported: float) -> float:
        """P(supported) read by the fitted model: sigmoid(sum_i w_i (x_i - mean_i) / scale_i + b)."""
        x = (np.array(statement_features(statement, context, p_supported)) - self.mean) / np.array(self.scale)
        return float(1 / (1 + math.exp(-(float(x @ np.array(self.coefficients)) + self.intercept))))

    def supported(self, statement: str, context: str, p_supported: float) -> bool:
        return self.probability(statement, context, p_supported) >= 0.5

    def serves(self, judge_model: str, prompt_version: str, support_threshold: float) -> bool:
        """Whether this fit reads the P(supported) of this judge: a fit of another model or prompt
        would read probabilities it never saw."""
        return (self.judge_model, self.prompt_version, self.support_threshold) == (
            judge_model,
            prompt_version,
            support_threshold,
        )

    def as_json(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, value: dict) -> AlignedJudge:
        """The stored form back; ValueError when it is not one this version wrote."""
        if value.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"schema_version {value.get('schema_version')!r}, expected {SCHEMA_VERSION}")
        fields = {k: v for k, v in value.items() if k != "schema_version"}
        comparison = fields.pop("comparison", None)
        return cls(
            **{k: tuple(v) if k in ("features", "mean", "scale", "coefficients") else v for k, v in fields.items()},
            comparison=Comparison(**comparison) if comparison else None,
        )


@dataclass(frozen=True)
class AlignedJudges:
    """The aligned judges an evaluation uses, by collection, and why a collection has none that
    it could have (fitted for another judge, labels changed since the fit)."""

    by_collection: dict[str, AlignedJudge]
    notes: tuple[str, ...] = ()

    def described(self) -> tuple[str, ...]:
        return tuple(
            f"{name}: aligned judge fitted"
            + (f" on {judge.comparison.labelled} labels" if judge.comparison else "")
            + f" (labels digest {judge.labels_digest[:12]})"
            for name, judge in sorted(self.by_collection.items())
        )


def aligned_model(seed: int):
    """The unfitted model: standardized features into a balanced-weight logistic regression."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(
        StandardScaler(), LogisticRegression(C=REGULARIZATION, class_weight="balanced", random_state=seed)
    )


def cross_fitted_probabilities(
    features: np.ndarray, labels: np.ndarray, groups: Sequence[str], seed: int = 0
) -> tuple[np.ndarray, int] | None:
    """Each row's P(supported) from a model fitted without its fold (StratifiedGroupKFold by group,
    min(MAX_FOLDS, groups, labels of the smaller class) folds), and the number of folds; None when
    a fold's training side holds one class only (a class whose labels come from too few groups)."""
    from sklearn.model_selection import StratifiedGroupKFold

    folds = min(MAX_FOLDS, len(set(groups)), int(labels.sum()), int((~labels).sum()))
    predicted = np.empty(len(labels))
    splitter = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    for train, test in splitter.split(features, labels, groups):
        if len(set(labels[train])) < 2:
            return None
        model = aligned_model(seed).fit(features[train], labels[train])
        predicted[test] = model.predict_proba(features[test])[:, 1]
    return predicted, folds


def balanced_accuracy(labels: np.ndarray, verdicts: np.ndarray) -> float:
    """(Se + Sp) / 2 = (TP / P + TN / N) / 2; equal to sklearn's balanced_accuracy_score (a test
    holds them equal), without its input checks, which cost more than the figure in a bootstrap."""
    return float((verdicts[labels].mean() + (~verdicts[~labels]).mean()) / 2)


def auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """The area under the ROC curve as the Mann-Whitney statistic,
    AUC = (sum of the positives' ranks - P (P + 1) / 2) / (P N), ties at their mean rank
    (scipy.stats.rankdata); equal to sklearn's roc_auc_score (a test holds them equal)."""
    from scipy.stats import rankdata

    positives = int(labels.sum())
    negatives = labels.size - positives
    return float((rankdata(scores)[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def group_replicates(labels: np.ndarray, groups: Sequence[str], seed: int = 0) -> list[np.ndarray]:
    """RESAMPLES cluster-bootstrap replicates of labelled items, as row indices: groups drawn with
    replacement, each bringing all its items; a replicate holding one class is drawn again."""
    by_group: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        by_group.setdefault(group, []).append(index)
    members = list(by_group.values())
    rng = np.random.default_rng(seed)
    replicates = []
    while len(replicates) < RESAMPLES:
        rows = np.concatenate([members[g] for g in rng.integers(0, len(members), len(members))])
        if labels[rows].all() or not labels[rows].any():
            continue
        replicates.append(rows)
    return replicates


def compare(
    labels: np.ndarray,
    plain_p: np.ndarray,
    threshold: float,
    aligned_p: np.ndarray,
    groups: Sequence[str],
    folds: int,
    seed: int = 0,
) -> Comparison:
    """Comparison of the plain verdicts (plain_p >= threshold; AUC of plain_p) with the aligned
    ones (aligned_p >= 0.5; AUC of aligned_p) on the same labels, with a cluster bootstrap over
    groups (RESAMPLES replicates; a replicate holding one class is drawn again)."""
    plain_verdicts, aligned_verdicts = plain_p >= threshold, aligned_p >= 0.5
    drawn = np.array(
        [
            (
                balanced_accuracy(labels[rows], plain_verdicts[rows]),
                auc(labels[rows], plain_p[rows]),
                balanced_accuracy(labels[rows], aligned_verdicts[rows]),
                auc(labels[rows], aligned_p[rows]),
            )
            for rows in group_replicates(labels, groups, seed)
        ]
    )
    low, high = np.percentile(drawn, [2.5, 97.5], axis=0)
    point = (
        balanced_accuracy(labels, plain_verdicts),
        auc(labels, plain_p),
        balanced_accuracy(labels, aligned_verdicts),
        auc(labels, aligned_p),
    )
    figures = [value for i in range(4) for value in (point[i], float(low[i]), float(high[i]))]
    return Comparison(
        int(labels.size),
        int(labels.sum()),
        int((~labels).sum()),
        len(set(groups)),
        folds,
        *figures,
        ahead_share=float(np.mean(drawn[:, 2] > drawn[:, 0])),
        auc_behind_share=float(np.mean(drawn[:, 3] < drawn[:, 1])),
    )


def align_judge(
    collection: str,
    items: Sequence[LabelledJudgement],
    judge_model: str,
    prompt_version: str,
    support_threshold: float,
    seed: int = 0,
    digest: str | None = None,
) -> AlignedJudge:
    """The aligned judge of a collection's labelled judgements: fitted on all of them, compared
    with the plain threshold on cross-fitted predictions, used only by USE_RULE. digest: of the
    labels it stands for (labels_digest), by default of the items' own."""
    digest = digest or labels_digest((item.item_id, item.supported) for item in items)
    unaligned = AlignedJudge(collection, judge_model, prompt_version, support_threshold, digest, False, "")
    supported = sum(item.supported for item in items)
    unsupported = len(items) - supported
    groups = [item.group for item in items]
    if min(supported, unsupported) < MIN_LABELS_PER_CLASS:
        return replace(
            unaligned,
            reason=f"only {supported} supported and {unsupported} unsupported labels (an aligned judge needs "
            f">= {MIN_LABELS_PER_CLASS} of each class): the plain judge stays",
        )
    if len(set(groups)) < MIN_GROUPS:
        return replace(
            unaligned,
            reason=f"the labels come from {len(set(groups))} questions (an aligned judge needs >= {MIN_GROUPS}, so that "
            "its cross-validation holds out whole questions): the plain judge stays",
        )
    features = np.array([statement_features(i.statement, i.context, i.p_supported) for i in items])
    labels = np.array([item.supported for item in items])
    plain_p = np.array([item.p_supported for item in items])
    fitted = cross_fitted_probabilities(features, labels, groups, seed)
    if fitted is None:
        return replace(
            unaligned,
            reason="the labels of one class come from too few questions to hold some out in every fold: "
            "the plain judge stays",
        )
    aligned_p, folds = fitted
    comparison = compare(labels, plain_p, support_threshold, aligned_p, groups, folds, seed)
    model = aligned_model(seed).fit(features, labels)
    scaler, regression = model[0], model[-1]
    used, reason = _verdict_on(comparison)
    return AlignedJudge(
        collection,
        judge_model,
        prompt_version,
        support_threshold,
        digest,
        used,
        reason,
        FEATURES,
        tuple(float(v) for v in scaler.mean_),
        tuple(float(v) for v in scaler.scale_),
        tuple(float(v) for v in regression.coef_[0]),
        float(regression.intercept_[0]),
        comparison,
        {item.item_id: bool(p >= 0.5) for item, p in zip(items, aligned_p, strict=True)},
    )


def _verdict_on(comparison: Comparison) -> tuple[bool, str]:
    figures = (
        f"cross-fitted balanced accuracy {comparison.aligned_balanced_accuracy:.3f} against the plain "
        f"{comparison.plain_balanced_accuracy:.3f} (ahead in {comparison.ahead_share:.0%} of replicates), "
        f"AUC {comparison.aligned_auc:.3f} against {comparison.plain_auc:.3f}"
    )
    if comparison.ahead_share < AHEAD_SHARE:
        return False, f"not ahead of the plain threshold in most replicates: {figures}; the plain judge stays"
    if comparison.auc_behind_share >= AUC_BELOW_SHARE:
        return False, (
            f"its AUC is below the plain P's in {comparison.auc_behind_share:.0%} of replicates: {figures}; "
            "the plain judge stays"
        )
    return True, f"ahead of the plain threshold: {figures}"
