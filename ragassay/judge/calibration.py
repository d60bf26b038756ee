"""Judge calibration: the judge's support verdicts against statements people labelled, as
accuracy, Cohen's kappa and a confusion matrix (`ragassay judge calibrate`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from ragassay.errors import ConfigError
from ragassay.judge.judge import Judge, judging_cost, verdict_of
from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION
from ragassay.llm.models import ChatModelConfig, ChatModels
from ragassay.metrics.answers import Verdict
from ragassay.progress import ProgressReporter


@dataclass(frozen=True)
class Agreement:
    """A judge against human labels (positive class: supported)."""

    labelled: int
    readable: int
    accuracy: float | None
    kappa: float | None
    confusion: dict[str, int]
    unreadable_rate: float


def agreement(labels: Sequence[bool], verdicts: Sequence[Verdict]) -> Agreement:
    """Accuracy, Cohen's kappa and the confusion matrix over readable verdicts, and the unreadable rate.

    accuracy = (tp + tn) / n;  kappa = (p_o - p_e) / (1 - p_e), with p_o the accuracy and
    p_e = P(label+)P(verdict+) + P(label-)P(verdict-) the agreement expected by chance.
    When p_e = 1 (every label and every verdict the same class) kappa is set to 0: the agreement
    then says nothing beyond chance.
    """
    pairs = [(label, verdict) for label, verdict in zip(labels, verdicts, strict=True) if verdict is not None]
    n = len(pairs)
    confusion = {
        "supported_judged_supported": sum(1 for lab, v in pairs if lab and v),
        "supported_judged_unsupported": sum(1 for lab, v in pairs if lab and not v),
        "unsupported_judged_supported": sum(1 for lab, v in pairs if not lab and v),
        "unsupported_judged_unsupported": sum(1 for lab, v in pairs if not lab and not v),
    }
    unreadable_rate = (len(labels) - n) / len(labels) if labels else 0.0
    if n == 0:
        return Agreement(len(labels), 0, None, None, confusion, unreadable_rate)
    observed = (confusion["supported_judged_supported"] + confusion["unsupported_judged_unsupported"]) / n
    label_positive = sum(1 for lab, _ in pairs if lab) / n
    verdict_positive = sum(1 for _, v in pairs if v) / n
    expected = label_positive * verdict_positive + (1 - label_positive) * (1 - verdict_positive)
    # Rounded so that float noise does not print as -0.000 when agreement equals chance.
    kappa = 0.0 if expected == 1 else round((observed - expected) / (1 - expected), 12) + 0.0
    return Agreement(len(labels), n, observed, kappa, confusion, unreadable_rate)


@dataclass(frozen=True)
class LabelledStatement:
    """A (context, statement) pair labelled supported or not by a person."""

    source: str  # file:line
    context: str
    statement: str
    supported: bool


def read_labelled_statements(path: Path) -> list[LabelledStatement]:
    """Rows of a calibration file (JSONL: context, statement, label "supported"/"unsupported").

    The whole file is refused (ConfigError naming each bad file:line) when any row is bad: a
    calibration over a silently shortened label set would report a figure for other data.
    """
    if not path.is_file():
        raise ConfigError(f"labels file {path} does not exist")
    rows, problems = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{where}: invalid JSON: {error.msg}")
            continue
        if not isinstance(record, dict):
            problems.append(f"{where}: each row must be an object with context, statement and label")
            continue
        bad = [name for name in ("context", "statement") if not isinstance(record.get(name), str) or not record[name].strip()]
        if bad:
            problems.append(f"{where}: field {' and '.join(repr(b) for b in bad)} must be a non-empty string")
        elif record.get("label") not in ("supported", "unsupported"):
            problems.append(f"{where}: field 'label' must be 'supported' or 'unsupported', not {record.get('label')!r}")
        else:
            rows.append(LabelledStatement(where, record["context"], record["statement"], record["label"] == "supported"))
    if problems:
        raise ConfigError(f"{path} has {len(problems)} bad rows: " + "; ".join(problems))
    if not rows:
        raise ConfigError(f"{path} holds no labelled statements")
    return rows


def calibrate_judge(chat_models: ChatModels, config: ChatModelConfig, path: Path) -> dict:
    """The judge's support verdicts against people's labels: accuracy, Cohen's kappa, confusion
    matrix, unreadable rate, and every row with its verdict. The labels are read (and a bad file
    refused) before the judge is loaded."""
    labelled = read_labelled_statements(path)
    judge = Judge(chat_models.get(config))
    verdicts, rows, results = [], [], []
    with ProgressReporter(f"judging {len(labelled)} labelled statements") as progress:
        for done, item in enumerate(labelled, start=1):
            result = judge.support(item.context, item.statement)
            results.append(result)
            verdict = verdict_of(result)
            verdicts.append(verdict)
            rows.append(
                {"source": item.source, "statement": item.statement, "label": "supported" if item.supported else "unsupported",
                 "verdict": "unreadable" if verdict is None else ("supported" if verdict else "unsupported"), "error": result.error}
            )
            progress(done, len(labelled))
    return {
        "labels_file": str(path),
        "judge_model": judge.model_id,
        "prompt_version": SUPPORT_PROMPT_VERSION,
        **asdict(agreement([item.supported for item in labelled], verdicts)),
        "usage": judging_cost(results)[0].as_metrics("judge"),
        "rows": rows,
    }
