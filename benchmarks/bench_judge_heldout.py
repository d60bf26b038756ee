"""Corrected faithfulness on answers the labels never saw (issue 36): MEMERAG-EXT's development
half only (its test half has been looked at three times for earlier issues and is no longer a
test half; it is not read here).

    .venv/bin/python benchmarks/bench_judge_selection.py after --out /tmp/after.json
    .venv/bin/python benchmarks/bench_judge_heldout.py /tmp/after.json

Reads each development sentence's P(supported) as the shipped judge gave it (`after --out`: the
default judge through calibrate_statements, support-probability/5). Then, for each of SPLITS
seeded splits of the questions: a share of them are a team's labelled statements, the rest an
evaluated batch whose answers no label saw. Per answer, faithfulness = supported sentences /
sentences, as people said and as the judge said; the batch's mean over answers is corrected
(metrics/judge_error.corrected_mean, what an answer evaluation prints) with error rates from:

- the labels, plain judge: the labelled statements' (label, P >= threshold) counts;
- the labels, aligned judge: align_judge on the labelled statements; where its use rule lets it
  be used, the batch's verdicts are the aligned judge's and the error rates come from its
  cross-fitted verdicts on the labels (never from predictions on the labels it was fitted on);
  otherwise as the plain row;
- the general prior: the counts on this half (judge/calibration/measured_rates.py; the bundled prior that
  corrected collections without labels until 2026-12-05). They were measured on this very half,
  held-out answers included, so this row's coverage is flattering by construction; its width is
  what a team without labels is shown.

Printed per row: how often the interval holds people's mean over the held-out answers (coverage),
its median width, and how often the labels could not show the judge separating the classes (no
estimate: interval [0, 1]). Nothing is judged again; the splits take a minute.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
from bench_judge_agreement import LABELS, ROWS, question_of

SEED = 2026
SPLITS = 200


def labelled_judgements(path: Path) -> tuple[list, str, float]:
    """Each development sentence as a LabelledJudgement with the P its verdict had."""
    from ragassay.judge.calibration.alignment import LabelledJudgement

    measured = json.loads(path.read_text())
    statements = {row["id"]: row for row in map(json.loads, LABELS.read_text().splitlines()) if row}
    questions = {f"memerag-ext-{row['query_id']}" for row in map(json.loads, ROWS.read_text().splitlines())}
    items = []
    for sentence_id, label, p_supported in measured["rows"]:
        if p_supported is None:
            continue  # unreadable: left out of agreement, as calibrate_statements does
        statement = statements[sentence_id]
        assert question_of(sentence_id) in questions, sentence_id
        items.append(
            LabelledJudgement(
                sentence_id,
                question_of(sentence_id),
                statement["statement"],
                statement["context"],
                p_supported,
                label == "supported",
            )
        )
    return items, measured["model"], measured["support_threshold"]


def answer_means(items: list, verdicts: list[bool]) -> tuple[list[float], float]:
    """Per answer (question) the judge's faithfulness, and people's mean over the answers."""
    judged: dict[str, list[bool]] = {}
    people: dict[str, list[bool]] = {}
    for item, verdict in zip(items, verdicts, strict=True):
        judged.setdefault(item.group, []).append(verdict)
        people.setdefault(item.group, []).append(item.supported)
    return [float(np.mean(v)) for v in judged.values()], float(np.mean([np.mean(v) for v in people.values()]))


def held_out(items: list, model: str, threshold: float, labelled_share: float) -> None:
    from ragassay.judge.calibration.alignment import align_judge
    from ragassay.judge.calibration.measured_rates import measured_on
    from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION
    from ragassay.metrics.judge_error import corrected_mean, simple_strata

    prior = measured_on("MEMERAG-EXT's development half", model, SUPPORT_PROMPT_VERSION, threshold)
    assert prior is not None, f"no counts of {model} {SUPPORT_PROMPT_VERSION} at {threshold} on MEMERAG-EXT"
    groups = sorted({item.group for item in items})
    rows: dict[str, list[tuple[bool, float, bool]]] = {"plain": [], "aligned": [], "prior": []}
    used = 0
    for split in range(SPLITS):
        chosen = set(random.Random(SEED + split).sample(groups, round(labelled_share * len(groups))))
        labelled = [item for item in items if item.group in chosen]
        evaluated = [item for item in items if item.group not in chosen]
        plain_labels = simple_strata(
            [item.supported for item in labelled], [item.p_supported >= threshold for item in labelled]
        )
        plain_verdicts = [item.p_supported >= threshold for item in evaluated]
        aligned = align_judge("dev", labelled, model, SUPPORT_PROMPT_VERSION, threshold, SEED)
        if aligned.used:
            used += 1
            aligned_labels = simple_strata(
                [item.supported for item in labelled], [aligned.cross_fitted[item.item_id] for item in labelled]
            )
            aligned_verdicts = [aligned.supported(i.statement, i.context, i.p_supported) for i in evaluated]
        else:
            aligned_labels, aligned_verdicts = plain_labels, plain_verdicts
        for name, strata, verdicts in (
            ("plain", plain_labels, plain_verdicts),
            ("aligned", aligned_labels, aligned_verdicts),
            ("prior", [prior.stratum()], plain_verdicts),
        ):
            values, people = answer_means(evaluated, verdicts)
            corrected = corrected_mean(values, strata, seed=SEED + split)
            rows[name].append(
                (corrected.low <= people <= corrected.high, corrected.high - corrected.low, corrected.estimate is None)
            )
    labelled_count = round(labelled_share * len(groups))
    print(
        f"{SPLITS} splits: {labelled_count} of {len(groups)} questions labelled (about "
        f"{round(labelled_share * len(items))} of {len(items)} sentences), the rest evaluated; "
        f"aligned judge used in {used} of {SPLITS}"
    )
    print(
        f"{'error rates from':<34} {'coverage':>9} {'median width':>13} {'no estimate':>12} "
        f"{'where estimated: coverage':>26} {'median width':>13}"
    )
    for name, title in (
        ("plain", "the labels, plain judge"),
        ("aligned", "the labels, aligned where used"),
        ("prior", "the general prior (in-sample)"),
    ):
        covered, widths, none = (np.array(column) for column in zip(*rows[name], strict=True))
        estimated = ~none
        print(
            f"{title:<34} {covered.mean():>9.3f} {np.median(widths):>13.3f} {none.mean():>12.1%} "
            f"{covered[estimated].mean():>26.3f} {np.median(widths[estimated]):>13.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("verdicts", type=Path, help="the JSON `bench_judge_selection.py after --out` wrote")
    parser.add_argument(
        "--labelled-share", type=float, nargs="+", default=[0.5, 0.7], help="shares of the questions labelled"
    )
    arguments = parser.parse_args()
    items, model, threshold = labelled_judgements(arguments.verdicts)
    for share in arguments.labelled_share:
        held_out(items, model, threshold, share)
        print()


if __name__ == "__main__":
    main()
