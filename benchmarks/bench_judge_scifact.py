"""The aligned judge (issue 36) on a second collection of people's labels nobody here had used for
judging: SciFact's claims against the abstracts its annotators marked as supporting or
contradicting them (../shared/datasets/scifact/queries.jsonl, `metadata`; the BEIR copy the
retrieval benchmarks read). Nothing was chosen or tuned on it: the judge, its threshold, the
aligned judge's features and its use rule are what ships, as MEMERAG-EXT's development half set
them.

    .venv/bin/python benchmarks/bench_judge_scifact.py judge --pairs 300 --out /tmp/scifact.json
    .venv/bin/python benchmarks/bench_judge_scifact.py align /tmp/scifact.json

`judge`: a seeded sample of claims, one labelled abstract each (SUPPORT -> supported, CONTRADICT
-> unsupported; SciFact's "not enough info" claims name no abstract in this copy), each judged by
calibrate_statements (what `ragassay judge calibrate` runs: the default judge, support-probability/5,
no question: a claim is a statement on its own). The context is the abstract's title and text as
one passage. Writes each pair's P(supported) with its label.

`align`: the issue's goal, "with 60 labels of a collection, balanced accuracy >= 0.65 on that
collection's other statements", and the same at 30 and 100 labels. For each of SAMPLES seeded
draws of n labelled pairs: align_judge on them (what `judge calibrate --collection` runs: fit,
cross-validate by claim, the use rule), then the verdicts an evaluation of the collection would
use (the aligned judge's where its rule lets it be used, the plain threshold's otherwise) on every
pair not drawn; balanced accuracy and AUC there, against the plain judge's on the same pairs. Then
the corrected supported rate of the pairs not drawn (metrics/judge_error.corrected_mean, error
rates from the drawn labels) against people's rate: coverage and width, beside the interval
MEMERAG-EXT's rates give (the bundled prior that corrected every collection without labels until
this benchmark showed it does not carry over; out of sample here). Nothing is judged again.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact"
SEED = 2026
SAMPLES = 50
LABEL_COUNTS = (30, 60, 100)
GOAL_BALANCED_ACCURACY = 0.65


def labelled_pairs() -> list[dict]:
    """Every (claim, abstract) pair SciFact's annotators labelled, one per claim: the claim's first
    labelled abstract in id order (a claim with two is one judgement, not two correlated ones)."""
    corpus = {}
    for line in (SCIFACT / "corpus.jsonl").read_text().splitlines():
        row = json.loads(line)
        corpus[row["_id"]] = f"{row['title']}. {row['text']}".strip()
    pairs = []
    for line in (SCIFACT / "queries.jsonl").read_text().splitlines():
        query = json.loads(line)
        evidence = sorted(query["metadata"].items())
        if not evidence:
            continue
        document, annotations = evidence[0]
        labels = {annotation["label"] for annotation in annotations}
        if len(labels) != 1 or document not in corpus:
            continue  # a pair its annotators labelled both ways is no one's verdict
        pairs.append(
            {
                "id": f"scifact-{query['_id']}-{document}",
                "claim": query["_id"],
                "statement": query["text"],
                "context": corpus[document],
                "label": "supported" if labels == {"SUPPORT"} else "unsupported",
            }
        )
    return pairs


def judge(count: int, out: Path) -> None:
    from ragassay.judge.calibration import LabelledStatement, calibrate_statements
    from ragassay.judge.judge import Judge
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig

    pairs = labelled_pairs()
    chosen = random.Random(SEED).sample(pairs, count)
    print(
        f"{len(pairs)} labelled pairs; judging {count}: "
        f"{sum(p['label'] == 'supported' for p in chosen)} supported, "
        f"{sum(p['label'] == 'unsupported' for p in chosen)} unsupported",
        flush=True,
    )
    labelled = [LabelledStatement(p["id"], p["context"], p["statement"], p["label"] == "supported") for p in chosen]
    models = ChatModels()
    support_judge = Judge(models.get(ChatModelConfig(backend="qwen2.5-1.5b")))
    started = time.perf_counter()
    report = calibrate_statements(support_judge, labelled)
    seconds = time.perf_counter() - started
    models.close()
    p_by_id = {row.source: row.p_supported for row in report.rows}
    for pair in chosen:
        pair["p"] = p_by_id[pair["id"]]
    out.write_text(
        json.dumps(
            {
                "model": support_judge.model_id,
                "support_threshold": support_judge.support_threshold,
                "seconds": seconds,
                "pairs": chosen,
            },
            indent=1,
        )
    )
    print(f"{count} pairs in {seconds:.0f} s ({seconds / count:.1f} s a pair); {out}")


def judged_items(path: Path) -> tuple[list, str, float]:
    """The judged pairs as LabelledJudgements (group: the claim), unreadable ones left out as
    calibrate_statements leaves them out of agreement."""
    from ragassay.judge.alignment import LabelledJudgement

    judged = json.loads(path.read_text())
    items = [
        LabelledJudgement(p["id"], p["claim"], p["statement"], p["context"], p["p"], p["label"] == "supported")
        for p in judged["pairs"]
        if p["p"] is not None
    ]
    return items, judged["model"], judged["support_threshold"]


def _figures(items: list, verdicts: list[bool], scores: list[float]) -> tuple[float, float]:
    from ragassay.judge.alignment import auc, balanced_accuracy

    labels = np.array([item.supported for item in items])
    return balanced_accuracy(labels, np.array(verdicts)), auc(labels, np.array(scores))


def whole_set(items: list, threshold: float) -> None:
    from ragassay.judge.alignment import FEATURES, auc, balanced_accuracy, statement_features

    labels = np.array([item.supported for item in items])
    p = np.array([item.p_supported for item in items])
    features = np.array([statement_features(i.statement, i.context, i.p_supported) for i in items])
    print(
        f"{len(items)} readable pairs ({labels.sum()} supported, {(~labels).sum()} unsupported); plain judge: "
        f"balanced accuracy {balanced_accuracy(labels, p >= threshold):.3f} at P >= {threshold}, AUC {auc(labels, p):.3f}"
    )
    cuts = sorted(set(p.tolist()))
    best = max(cuts, key=lambda cut: balanced_accuracy(labels, p >= cut))
    print(
        f"  the best cut on all of them (in-sample, what no team can pick): P >= {best:.3f}, "
        f"balanced accuracy {balanced_accuracy(labels, p >= best):.3f}"
    )
    print(
        "  each feature's AUC alone: "
        + ", ".join(f"{n} {auc(labels, features[:, i]):.3f}" for i, n in enumerate(FEATURES))
    )


def align(path: Path) -> None:
    from ragassay.judge.alignment import align_judge
    from ragassay.judge.measured_rates import measured_on
    from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION
    from ragassay.metrics.judge_error import corrected_mean, simple_strata

    items, model, threshold = judged_items(path)
    whole_set(items, threshold)
    # The bundled prior until 2026-12-05: the judge's counts on MEMERAG-EXT's development half.
    prior = measured_on("MEMERAG-EXT's development half", model, SUPPORT_PROMPT_VERSION, threshold)
    assert prior is not None, f"no counts of {model} {SUPPORT_PROMPT_VERSION} at {threshold} on MEMERAG-EXT"
    for count in LABEL_COUNTS:
        rows = []
        for sample in range(SAMPLES):
            rng = random.Random(SEED + sample)
            drawn = set(rng.sample(range(len(items)), count))
            labelled = [items[i] for i in sorted(drawn)]
            rest = [item for i, item in enumerate(items) if i not in drawn]
            aligned = align_judge("scifact", labelled, model, SUPPORT_PROMPT_VERSION, threshold, SEED + sample)
            plain_verdicts = [item.p_supported >= threshold for item in rest]
            plain = _figures(rest, plain_verdicts, [item.p_supported for item in rest])
            if aligned.mean:  # fitted (enough labels of each class), used or not
                scores = [aligned.probability(i.statement, i.context, i.p_supported) for i in rest]
                fitted_verdicts = [s >= 0.5 for s in scores]
                fitted = _figures(rest, fitted_verdicts, scores)
            else:
                fitted, fitted_verdicts = plain, plain_verdicts
            used = aligned.used
            verdicts = fitted_verdicts if used else plain_verdicts
            label_strata = simple_strata(
                [item.supported for item in labelled],
                [aligned.cross_fitted[i.item_id] if used else i.p_supported >= threshold for i in labelled],
            )
            people = float(np.mean([item.supported for item in rest]))
            values = [float(v) for v in verdicts]
            corrected = corrected_mean(values, label_strata, seed=SEED + sample)
            from_prior = corrected_mean([float(v) for v in plain_verdicts], [prior.stratum()], seed=SEED + sample)
            rows.append(
                {
                    "used": used,
                    "fitted": bool(aligned.mean),
                    "plain": plain,
                    "fitted_figures": fitted,
                    "evaluation": fitted if used else plain,
                    "covered": corrected.low <= people <= corrected.high,
                    "width": corrected.high - corrected.low,
                    "no_estimate": corrected.estimate is None,
                    "prior_covered": from_prior.low <= people <= from_prior.high,
                    "prior_width": from_prior.high - from_prior.low,
                }
            )
        _report(count, rows)


def _report(count: int, rows: list[dict]) -> None:
    def mean(key: str, index: int, where=lambda row: True) -> str:
        chosen = [row[key][index] for row in rows if where(row)]
        return f"{np.mean(chosen):.3f}" if chosen else "-"

    evaluation_ba = np.array([row["evaluation"][0] for row in rows])
    print(
        f"\n{count} labels, {len(rows)} seeded draws: aligned judge fitted in {sum(r['fitted'] for r in rows)}, "
        f"used in {sum(r['used'] for r in rows)}"
    )
    print(
        f"  on the pairs not drawn, mean balanced accuracy / AUC: plain {mean('plain', 0)} / {mean('plain', 1)}; "
        f"fitted aligned judge (used or not) {mean('fitted_figures', 0, lambda r: r['fitted'])} / "
        f"{mean('fitted_figures', 1, lambda r: r['fitted'])}; what the evaluation uses {mean('evaluation', 0)} / "
        f"{mean('evaluation', 1)}"
    )
    print(
        f"  evaluation's balanced accuracy >= {GOAL_BALANCED_ACCURACY}: {np.mean(evaluation_ba >= GOAL_BALANCED_ACCURACY):.0%} "
        f"of draws (quartiles {np.percentile(evaluation_ba, 25):.3f} / {np.median(evaluation_ba):.3f} / "
        f"{np.percentile(evaluation_ba, 75):.3f})"
    )
    covered = np.array([r["covered"] for r in rows])
    widths = np.array([r["width"] for r in rows])
    none = np.array([r["no_estimate"] for r in rows])
    print(
        f"  corrected supported rate of the rest, error rates from the labels: holds people's rate in "
        f"{covered.mean():.0%}, median width {np.median(widths):.3f}, no estimate {none.mean():.0%}; "
        f"from MEMERAG-EXT's rates (the bundled prior until 2026-12-05): holds {np.mean([r['prior_covered'] for r in rows]):.0%}, "
        f"median width {np.median([r['prior_width'] for r in rows]):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    judging = commands.add_parser("judge")
    judging.add_argument("--pairs", type=int, default=300)
    judging.add_argument("--out", type=Path, required=True)
    aligning = commands.add_parser("align")
    aligning.add_argument("judged", type=Path)
    args = parser.parse_args()
    if args.command == "judge":
        judge(args.pairs, args.out)
    else:
        align(args.judged)


if __name__ == "__main__":
    main()
