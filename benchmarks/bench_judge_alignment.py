"""The aligned judge (issue 36) on labels nobody here wrote: MEMERAG-EXT's development half only
(its test half has been looked at three times for earlier issues and is no longer a test half;
it is not read here).

    .venv/bin/python benchmarks/bench_judge_selection.py measure --out /tmp/selection.json
    .venv/bin/python benchmarks/bench_judge_alignment.py /tmp/selection.json

Reads the per-passage verdicts `bench_judge_selection.py measure` wrote (the default judge against
each passage alone, question shown) and replays support-probability/5 on them (the passages
judge/passage_choice.passages_to_ask picks, stopping at the first that supports the statement, the
highest P), so each sentence gets the P(supported) an answer evaluation's verdict has. Then:

1. **Candidates**, each cross-fitted exactly as judge/calibration/alignment.py does (StratifiedGroupKFold by
   question, the same folds for all): the plain threshold; isotonic calibration of P (balanced
   weights); a logistic regression on the judge's log-odds alone; the shipped one on all
   FEATURES. Balanced accuracy and AUC with question-level bootstrap intervals (alignment.compare).
2. **How many labels**: `align_judge` (what `ragassay judge calibrate --collection` runs) on seeded
   samples of 30 and 50 labels and on all of them, 20 samples each: how often its use rule lets
   it be used, and its cross-fitted figures against the plain threshold's.

Nothing here is timed: fitting is milliseconds; the verdicts are what costs (bench_judge_speed.py).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
from bench_judge_agreement import LABELS, ROWS, question_of

SEED = 2026
SAMPLES = 20


def replayed(path: Path) -> list:
    """Each development sentence as a LabelledJudgement with support-probability/5's P."""
    from ragassay.judge.calibration.alignment import LabelledJudgement
    from ragassay.judge.passage_choice import passages_to_ask
    from ragassay.judge.support_rules import support_threshold_for
    from ragassay.llm.messages import one_line

    measured = json.loads(path.read_text())
    threshold = support_threshold_for(measured["model"])
    statements = {row["id"]: row for row in map(json.loads, LABELS.read_text().splitlines()) if row}
    sources = {f"memerag-ext-{row['query_id']}": row for row in map(json.loads, ROWS.read_text().splitlines())}
    items = []
    for sentence in measured["sentences"]:
        statement = statements[sentence["id"]]["statement"]
        passages = [p["text"] for p in sources[question_of(sentence["id"])]["context"]]
        by_passage = {call["passage"]: call["p"] for call in sentence["calls"]}
        asked = []
        for position in passages_to_ask(statement, passages):
            asked.append(by_passage[position])
            if asked[-1] is None or asked[-1] >= threshold:
                break
        if any(p is None for p in asked):
            continue  # unreadable: left out of agreement, as calibrate_statements does
        context = "\n".join(f"[{number}] {one_line(text)}" for number, text in enumerate(passages, start=1))
        items.append(
            LabelledJudgement(
                sentence["id"],
                question_of(sentence["id"]),
                statement,
                context,
                max(asked),
                sentence["label"] == "supported",
            )
        )
    return items, measured["model"], threshold


def candidates(items: list, threshold: float) -> None:
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold
    from sklearn.utils.class_weight import compute_sample_weight

    from ragassay.judge.calibration import alignment

    features = np.array([alignment.statement_features(i.statement, i.context, i.p_supported) for i in items])
    labels = np.array([item.supported for item in items])
    plain_p = np.array([item.p_supported for item in items])
    groups = [item.group for item in items]
    folds = min(alignment.MAX_FOLDS, len(set(groups)), int(labels.sum()), int((~labels).sum()))
    splits = list(StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=SEED).split(features, labels, groups))

    def cross_fitted(fit_predict) -> np.ndarray:
        predicted = np.empty(len(labels))
        for train, test in splits:
            predicted[test] = fit_predict(train, test)
        return predicted

    def isotonic(train, test):
        weights = compute_sample_weight("balanced", labels[train])
        model = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1)
        return model.fit(plain_p[train], labels[train], sample_weight=weights).predict(plain_p[test])

    def log_odds_only(train, test):
        model = LogisticRegression(class_weight="balanced").fit(features[train][:, :1], labels[train])
        return model.predict_proba(features[test][:, :1])[:, 1]

    def shipped(train, test):
        return alignment.aligned_model(SEED).fit(features[train], labels[train]).predict_proba(features[test])[:, 1]

    print(
        f"{len(items)} sentences ({labels.sum()} supported, {(~labels).sum()} unsupported) from "
        f"{len(set(groups))} questions, {folds} folds by question; plain: P >= {threshold}"
    )
    print(f"{'candidate':<44} {'balanced accuracy':<26} {'AUC':<26} ahead")
    for name, function in (
        ("isotonic calibration of P (balanced)", isotonic),
        ("logistic regression on log-odds", log_odds_only),
        ("logistic regression on FEATURES (shipped)", shipped),
    ):
        c = alignment.compare(labels, plain_p, threshold, cross_fitted(function), groups, folds, SEED)
        if name.startswith("isotonic"):
            print(
                f"{'plain threshold':<44} {_ci(c.plain_balanced_accuracy, c.plain_balanced_accuracy_low, c.plain_balanced_accuracy_high):<26} "
                f"{_ci(c.plain_auc, c.plain_auc_low, c.plain_auc_high):<26}"
            )
        print(
            f"{name:<44} {_ci(c.aligned_balanced_accuracy, c.aligned_balanced_accuracy_low, c.aligned_balanced_accuracy_high):<26} "
            f"{_ci(c.aligned_auc, c.aligned_auc_low, c.aligned_auc_high):<26} {c.ahead_share:.0%}"
        )


def label_counts(items: list, model: str, threshold: float) -> None:
    from ragassay.judge.calibration.alignment import align_judge
    from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION

    print(f"\nalign_judge on seeded samples ({SAMPLES} each; all labels once)")
    for count in (30, 50, len(items)):
        samples = 1 if count == len(items) else SAMPLES
        fits = [
            align_judge(
                "dev", random.Random(SEED + s).sample(items, count), model, SUPPORT_PROMPT_VERSION, threshold, SEED
            )
            for s in range(samples)
        ]
        compared = [f.comparison for f in fits if f.comparison is not None]
        line = f"  {count:>3} labels: used in {sum(f.used for f in fits)}/{samples}"
        if compared:
            line += (
                f"; compared in {len(compared)}: mean cross-fitted BA {np.mean([c.aligned_balanced_accuracy for c in compared]):.3f} "
                f"against plain {np.mean([c.plain_balanced_accuracy for c in compared]):.3f}, "
                f"AUC {np.mean([c.aligned_auc for c in compared]):.3f} against {np.mean([c.plain_auc for c in compared]):.3f}"
            )
        print(line)
        reasons: dict[str, int] = {}
        for fit in fits:
            kind = "used" if fit.used else fit.reason.split(" (")[0].split(":")[0]
            kind = "too few labels of a class" if kind.startswith("only ") else kind
            reasons[kind] = reasons.get(kind, 0) + 1
        print("       " + "; ".join(f"{kind}: {n}" for kind, n in sorted(reasons.items())))


def _ci(point: float, low: float, high: float) -> str:
    return f"{point:.3f} [{low:.3f}, {high:.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("measured", type=Path, help="the JSON bench_judge_selection.py measure wrote")
    arguments = parser.parse_args()
    items, model, threshold = replayed(arguments.measured)
    candidates(items, threshold)
    label_counts(items, model, threshold)


if __name__ == "__main__":
    main()
