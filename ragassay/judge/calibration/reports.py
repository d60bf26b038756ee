"""What a judge calibration reports, as types: a judge's support verdicts against people's labels
(from a file, or a collection's own with their weighted error rates, the aligned judge and the
label budget), and its pairwise verdicts' position bias. judge/calibration/calibrate.py fills them,
judge/calibration/log.py logs them, `ragassay judge calibrate` renders them and prints them as
JSON (each type's fields by name)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ragassay.judge.calibration.alignment import Comparison
from ragassay.llm.structured import Usage
from ragassay.metrics.agreement import Agreement
from ragassay.metrics.judge_error import ErrorRates


class _Report(BaseModel):
    model_config = ConfigDict(frozen=True)


class CalibrationRow(_Report):
    """One labelled statement and the judge's verdict on it (`too_long` when its prompt did not
    fit the judge's context, `unreadable` when no verdict could be read)."""

    source: str
    statement: str
    label: Literal["supported", "unsupported"]
    verdict: Literal["supported", "unsupported", "unreadable", "too_long"]
    p_supported: float | None
    error: str | None
    # The judge model's own P(supported) where a learned verdict read it into p_supported.
    judge_p_supported: float | None = None


class AsUsedAgreement(Agreement):
    """The judge's agreement with the same labels as a collection's evaluations use it: through
    its aligned judge when one is in use (`aligned`), else the plain verdicts, and why."""

    collection: str
    aligned: bool
    why: str


class ConfigurationBudget(_Report):
    """One configuration's label budget (metrics/label_need.LabelBudget's figures), or
    no_interval where the labels do not yet show the judge separating the classes."""

    configuration: str
    target_width: float | None = None
    current_width: float | None = None
    floor_width: float | None = None
    more_labels: int | None = None
    labelled: int | None = None
    no_interval: bool = False


class LabelBudgetReport(_Report):
    """How many more labels would narrow a batch's corrected faithfulness interval to a width:
    per configuration, and the most any needs (None when one cannot reach it). verdicts: whose
    verdicts the strata hold (plain, aligned, or the plain ones stored with the labels);
    left_out: labels another judge gave (a stored-verdict budget only)."""

    batch_id: str
    target_width: float
    metric: str
    configurations: list[ConfigurationBudget]
    more_labels: int | None
    verdicts: str | None = None
    collection: str | None = None
    left_out: int | None = None


class AlignmentSummary(_Report):
    """The aligned judge fitted on a collection's labels as a report shows it (judge/calibration/alignment.
    AlignedJudge without its per-label cross-fitted verdicts), and when used, the weighted error
    rates of its cross-fitted verdicts (what corrected estimates then use)."""

    schema_version: int
    collection: str
    judge_model: str
    prompt_version: str
    support_threshold: float
    labels_digest: str
    used: bool
    reason: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    comparison: Comparison | None
    weighted: ErrorRates | None = None


class _JudgeRun(_Report):
    """What every calibration says of the judge it ran and where it was logged: the judge and its
    prompt, the seconds a verdict took and what the calls cost (mlflow_run_id, experiment: set
    once the calibration run is logged)."""

    judge_model: str
    prompt_version: str
    seconds_per_verdict: float | None
    usage: Usage
    mlflow_run_id: str | None = None
    experiment: str | None = None


class SupportCalibration(_JudgeRun, Agreement):
    """The judge's support verdicts against people's labels (judge/calibration/support.
    calibrate_statements): its agreement figures, what it cost, every row; from a labels file
    (labels_file, max_items) and, with a collection named, as that collection uses it (as_used).
    mlflow_run_id and experiment: where the calibration run was logged."""

    support_threshold: float
    seed: int
    too_long: int
    reused_verdicts: int
    rows: list[CalibrationRow]
    labels_file: str | None = None
    max_items: int | None = None
    as_used: AsUsedAgreement | None = None
    # Where a learned verdict read the judge: the judge's own rule on the same labels (its
    # P(supported) >= its threshold, `judge_threshold`), for the two side by side.
    judge_own: Agreement | None = None
    judge_threshold: float | None = None


class CollectionCalibration(SupportCalibration):
    """The judge against a collection's own labels (judge/calibration/calibrate.calibrate_collection): the
    support report over each labelled statement once, who labelled from which batches, its error
    rates weighted to the batches the labels stand for, the aligned judge, and the label budget
    when asked."""

    collection: str
    batches: list[str]  # the answer batches the labels were sampled from
    imported_files: int = 0  # labelled statements imported in the calibration shape, by file
    people: list[str]
    skipped: int
    disagreements: int
    weighted: ErrorRates
    aligned_judge: AlignmentSummary
    budget: LabelBudgetReport | None = None


class PairRow(_Report):
    """One answer pair asked in both orders (better first, better second) and the outcome."""

    question: str
    better: str
    worse: str
    kind: str
    better_first: str | None
    better_second: str | None
    outcome: str


class PairwiseCalibration(_JudgeRun):
    """Position bias of the judge's pairwise verdicts (judge/calibration/pairwise.calibrate_pairwise)."""

    golden_file: str
    pairs: int
    readable: int
    flip_rate: float | None
    accuracy: float | None
    ties: int
    unreadable_rate: float
    rows: list[PairRow]
