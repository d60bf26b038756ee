"""Pictures of a batch, for MLflow's artifact view: each function takes numbers already computed
and returns a matplotlib Figure (no pyplot state, no display; tracking.py saves them).

- metrics per configuration with their 95% intervals (retrieval and answers);
- recall@k curves per configuration;
- golden-set discards by reason.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display: figures only go to files

import numpy as np
import polars as pl
from matplotlib.figure import Figure

# Metrics where a smaller value is the better one; their axis label says so.
LOWER_IS_BETTER = ("false_refusal_rate",)
# Colour-blind-safe (Okabe-Ito), one per configuration in order.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


def interval_figure(intervals: pl.DataFrame, metrics: list[str], title: str) -> Figure:
    """Grouped bars: one group per metric, one bar per configuration at its mean, the whisker its
    95% interval, its value and number of scored questions at its foot. `intervals` has the
    columns of metrics/averaging.py's interval_table."""
    shown = intervals.filter(pl.col("metric").is_in(metrics) & pl.col("mean").is_not_null())
    labels = list(dict.fromkeys(shown["configuration"].to_list()))
    metrics = [m for m in metrics if m in set(shown["metric"].to_list())]
    figure = Figure(figsize=(max(6.0, 1.1 * len(metrics) * max(1, len(labels)) ** 0.5 + 2), 4.2))
    axes = figure.subplots()
    width = 0.8 / max(1, len(labels))
    for index, label in enumerate(labels):
        rows = {r["metric"]: r for r in shown.filter(pl.col("configuration") == label).iter_rows(named=True)}
        positions = np.arange(len(metrics)) + (index - (len(labels) - 1) / 2) * width
        means = [rows[m]["mean"] if m in rows else np.nan for m in metrics]
        low = [
            rows[m]["mean"] - rows[m]["ci_low"] if m in rows and rows[m]["ci_low"] is not None else 0 for m in metrics
        ]
        high = [
            rows[m]["ci_high"] - rows[m]["mean"] if m in rows and rows[m]["ci_high"] is not None else 0 for m in metrics
        ]
        axes.bar(positions, means, width, yerr=[low, high], capsize=3, label=label, color=PALETTE[index % len(PALETTE)])
        # Each bar's value and the questions behind it, at its foot (a zero bar still shows its 0.00).
        for position, metric in zip(positions, metrics):
            if metric in rows:
                axes.text(
                    position,
                    0.01,
                    f"{rows[metric]['mean']:.2f}\nn={rows[metric]['scored']}",
                    ha="center",
                    va="bottom",
                    fontsize=6.5,
                    color="white" if rows[metric]["mean"] > 0.12 else "black",
                )
    axes.set_xticks(
        np.arange(len(metrics)), [f"{m}\n(lower is better)" if m in LOWER_IS_BETTER else m for m in metrics], fontsize=8
    )
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("mean, with 95% bootstrap interval")
    axes.set_title(title, fontsize=10)
    axes.grid(axis="y", alpha=0.3)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    return figure


def recall_curve_figure(means: dict[str, dict[str, float]], ks: list[int], title: str) -> Figure:
    """recall@k against k, one line per configuration."""
    figure = Figure(figsize=(6.0, 4.0))
    axes = figure.subplots()
    for index, (label, values) in enumerate(means.items()):
        axes.plot(
            ks,
            [values.get(f"recall@{k}", np.nan) for k in ks],
            marker="o",
            label=label,
            color=PALETTE[index % len(PALETTE)],
        )
    axes.set_xticks(ks)
    axes.set_xlabel("k (documents retrieved)")
    axes.set_ylabel("recall@k")
    axes.set_ylim(0, 1.05)
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    return figure


def discards_figure(accepted: int, discarded: dict[str, int], title: str) -> Figure:
    """Generated candidates kept and thrown away, by the gate's reason (reasons with none left out)."""
    counts = {"accepted": accepted, **{reason: count for reason, count in discarded.items() if count}}
    figure = Figure(figsize=(6.0, 0.45 * len(counts) + 1.4))
    axes = figure.subplots()
    names = list(counts)[::-1]
    bars = axes.barh(
        names, [counts[n] for n in names], color=["#009E73" if n == "accepted" else "#D55E00" for n in names]
    )
    axes.bar_label(bars, padding=3)
    axes.set_xlabel("candidate questions")
    axes.set_title(title, fontsize=10)
    axes.set_xlim(0, max(counts.values(), default=0) * 1.15 + 1)
    figure.tight_layout()
    return figure


def confusion_figure(confusion: dict[str, int], title: str):
    """Labelled class against judged class, with counts (judge calibration)."""
    classes = ("supported", "unsupported")
    counts = [[confusion[f"{label}_judged_{verdict}"] for verdict in classes] for label in classes]
    figure = Figure(figsize=(4.2, 3.6))
    axes = figure.subplots()
    axes.imshow(counts, cmap="Blues")
    for row, line in enumerate(counts):
        for column, count in enumerate(line):
            axes.text(column, row, str(count), ha="center", va="center", fontsize=14)
    axes.set_xticks([0, 1], [f"judged {c}" for c in classes])
    axes.set_yticks([0, 1], [f"labelled {c}" for c in classes])
    axes.set_title(title, fontsize=9)
    figure.tight_layout()
    return figure
