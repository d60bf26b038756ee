"""Which draw of labels narrows the corrected interval with the fewest labels (issue 36, item 3):
today's draw (half of the labels from each of the judge's verdicts) against a uniform draw (a
simple random sample of the batch's statements), and against draws that put
labels where the stratified variance is (Neyman's allocation, proportional allocation) and against
finer strata by closeness to the threshold, on seeded simulated batches.

    .venv/bin/python benchmarks/bench_label_draw.py [--replicates 40] [--seed 0]
    .venv/bin/python benchmarks/bench_label_draw.py --judged /tmp/scifact.json

With --judged (what `bench_judge_scifact.py judge --out` writes), the world is not simulated: it
is SciFact's judged claims, each its own question, with people's labels and the judge's P, and
every draw labels claims of that one batch (so at n near its size every draw labels nearly all).

A world: Q questions of 4 statements; each statement's true label is supported with probability
`rate`; the judge's P(supported) is drawn from Beta(8, 1.5) for supported statements and Beta(2, 2)
for unsupported ones (AUC about 0.85, near the default judge on MEMERAG's development half), its
verdict P >= 0.85. Each draw labels n statements of the batch's strata (simple random samples
within each), and the interval is what ragassay computes (metrics/judge_error.corrected_mean of
the per-question judged faithfulness, with its separability gate: no labels showing the judge
separating the classes is the interval [0, 1]). Printed per world and draw: the median width at
each n over seeded replicates, and the labels at which the median width reaches the target (read between
grid points), as a ratio to today's draw.

The allocations need the strata's label rates before any label is given: Neyman's uses the
default judge's sensitivity and specificity on MEMERAG-EXT's development half (judge/calibration/measured_rates.py,
the bundled prior until 2026-12-05) to predict them, as a collection
without labels would.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ragassay.metrics.judge_error import LabelStratum, corrected_mean

THRESHOLD = 0.85
GRID = (30, 45, 60, 80, 100, 130, 160, 200, 250, 300)
PRIOR_SENSITIVITY, PRIOR_SPECIFICITY = 39 / 51, 10 / 15


def world(rate: float, questions: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(true labels, judge P, question of each statement) of a seeded batch."""
    rng = np.random.default_rng(seed)
    statements = questions * 4
    labels = rng.random(statements) < rate
    p = np.where(labels, rng.beta(8, 1.5, statements), rng.beta(2, 2, statements))
    return labels, p, np.repeat(np.arange(questions), 4)


def judged_world(path: Path) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """SciFact's judged claims as a world: people's labels, the judge's P, one question a claim."""
    pairs = [pair for pair in json.loads(path.read_text())["pairs"] if pair["p"] is not None]
    labels = np.array([pair["label"] == "supported" for pair in pairs])
    title = f"SciFact, {len(pairs)} claims people labelled, true rate {labels.mean():.2f}"
    return title, labels, np.array([pair["p"] for pair in pairs]), np.arange(len(pairs))


def strata_of(p: np.ndarray, banded: bool) -> np.ndarray:
    """Stratum of each statement: its verdict (0 unsupported, 1 supported), or with bands, also
    whether P is near the threshold (within 0.12 of it) or far from it."""
    verdict = (p >= THRESHOLD).astype(int)
    if not banded:
        return verdict
    near = np.abs(p - THRESHOLD) < 0.12
    return verdict * 2 + near.astype(int)


def allocation(sizes: np.ndarray, verdict: np.ndarray, n: int, how: str, judged_supported: float) -> np.ndarray:
    """Labels per stratum (at least 2 each, as far as a stratum holds them); `verdict` is each
    stratum's verdict (1 supported)."""
    if how == "halves":
        # Half the labels to each verdict; within one, shared as its strata's statements are.
        share = np.zeros(len(sizes))
        for value in (0, 1):
            members = verdict == value
            if sizes[members].sum():
                share[members] = 0.5 * sizes[members] / sizes[members].sum()
    elif how == "proportional":
        share = sizes / sizes.sum()
    else:  # neyman, the strata's label rates predicted from the prior
        youden = PRIOR_SENSITIVITY + PRIOR_SPECIFICITY - 1
        theta = float(np.clip((judged_supported + PRIOR_SPECIFICITY - 1) / youden, 0.05, 0.95))
        rate_supported = np.clip(PRIOR_SENSITIVITY * theta / max(judged_supported, 1e-9), 0.05, 0.95)
        rate_unsupported = np.clip((1 - PRIOR_SENSITIVITY) * theta / max(1 - judged_supported, 1e-9), 0.05, 0.95)
        rates = np.where(verdict == 1, rate_supported, rate_unsupported)
        spread = sizes * np.sqrt(rates * (1 - rates))
        share = spread / spread.sum()
    return np.minimum(np.maximum(2, np.floor(share * n)).astype(int), sizes)


def stratum_of(name: str, population: int, labels: np.ndarray, verdicts: np.ndarray) -> LabelStratum:
    """A stratum of `population` statements from the labels and verdicts drawn in it."""
    return LabelStratum(
        name,
        float(population),
        int(np.sum(labels & verdicts)),
        int(np.sum(labels & ~verdicts)),
        int(np.sum(~labels & verdicts)),
        int(np.sum(~labels & ~verdicts)),
    )


def interval_width(labels, p, question, n: int, how: str, banded: bool, seed: int) -> float:
    rng = np.random.default_rng(seed)
    verdicts = p >= THRESHOLD
    values = [float(verdicts[question == q].mean()) for q in np.unique(question)]
    if how == "uniform":
        # A simple random sample of the batch's statements, one stratum standing for all of them:
        # what labelling statements as they come (or at random) gives.
        chosen = rng.choice(labels.size, size=min(n, labels.size), replace=False)
        strata = [stratum_of("all", labels.size, labels[chosen], verdicts[chosen])]
        corrected = corrected_mean(values, strata, seed, 1000)
        return 1.0 if corrected.estimate is None else corrected.high - corrected.low
    stratum = strata_of(p, banded)
    kinds = np.arange(4 if banded else 2)
    sizes = np.array([int(np.sum(stratum == k)) for k in kinds])
    counts = allocation(sizes, kinds // 2 if banded else kinds, n, how, float(verdicts.mean()))
    strata = []
    for kind, count in zip(kinds, counts, strict=True):
        members = np.flatnonzero(stratum == kind)
        if count == 0 or members.size == 0:
            continue
        chosen = rng.choice(members, size=count, replace=False)
        strata.append(stratum_of(f"s{kind}", members.size, labels[chosen], verdicts[chosen]))
    corrected = corrected_mean(values, strata, seed, 1000)
    return 1.0 if corrected.estimate is None else corrected.high - corrected.low


def labels_to_reach(medians: list[float], target: float) -> float | None:
    """The label count at which the median width first reaches `target`, read between the two
    grid points around it on log-log axes (a width falls about as 1/sqrt(n)), so that a draw a few
    labels ahead is not rounded to a whole grid step; None beyond the grid."""
    for (n0, w0), (n1, w1) in zip(zip(GRID, medians), zip(GRID[1:], medians[1:]), strict=False):
        if w0 <= target:
            return float(n0)
        if w1 <= target:
            if w1 >= w0:
                return float(n1)
            fraction = (np.log(w0) - np.log(target)) / (np.log(w0) - np.log(w1))
            return float(np.exp(np.log(n0) + fraction * (np.log(n1) - np.log(n0))))
    return float(GRID[-1]) if medians[-1] <= target else None


DRAWS = (
    ("uniform (simple random)", "uniform", False),
    ("halves (today)", "halves", False),
    ("proportional", "proportional", False),
    ("neyman", "neyman", False),
    ("halves, banded by P", "halves", True),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", type=float, default=0.25)
    parser.add_argument("--judged", type=Path, help="judged SciFact claims (bench_judge_scifact.py judge --out)")
    args = parser.parse_args()
    worlds = (
        [judged_world(args.judged)]
        if args.judged
        else [
            (f"true rate {rate}, {q} questions", *world(rate, q, args.seed))
            for rate, q in ((0.85, 150), (0.7, 150), (0.5, 150))
        ]
    )
    for title, labels, p, question in worlds:
        judged = float(np.mean(p >= THRESHOLD))
        print(f"world: {title}, judged supported {judged:.2f}, target width {args.target}")
        needed = {}
        for name, how, banded in DRAWS:
            medians = [
                float(
                    np.median(
                        [
                            interval_width(labels, p, question, n, how, banded, args.seed * 1000 + r)
                            for r in range(args.replicates)
                        ]
                    )
                )
                for n in GRID
            ]
            needed[name] = labels_to_reach(medians, args.target)
            print(f"  {name:22s} " + " ".join(f"{n}:{w:.3f}" for n, w in zip(GRID, medians, strict=True)))
        today, uniform = needed["halves (today)"], needed["uniform (simple random)"]
        for name, reach in needed.items():
            parts = [
                f"{reach / base:.2f}x {whose}"
                for base, whose in ((today, "today's"), (uniform, "uniform's"))
                if base is not None and reach is not None
            ]
            ratio = f" ({', '.join(parts)})" if parts else ""
            print(
                f"  labels to width {args.target}: {name}: "
                + (f"{reach:.0f}{ratio}" if reach is not None else "beyond the grid")
            )


if __name__ == "__main__":
    main()
