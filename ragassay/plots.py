"""Pictures of a batch, for MLflow's artifact view: each function takes numbers already computed
and returns a matplotlib Figure (no pyplot state, no display; tracking/ saves them).

- metrics per configuration with their 95% intervals, one panel per metric with its own fitted
  axis, significance marked (retrieval and answers);
- recall@k curves per configuration, with intervals;
- golden-set discards by reason.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # no display: figures only go to files

import numpy as np
from matplotlib.figure import Figure

from ragassay.metrics.averaging import IntervalRow
from ragassay.metrics.corrected_rows import AnswerIntervalRow, has_correction
from ragassay.metrics.names import LOWER_IS_BETTER
from ragassay.metrics.significance import ALPHA, ComparisonRow, comparison_of, ranked_by_mean

# Colour-blind-safe (Okabe-Ito), one per configuration in order, each with its own marker and
# line style, so that configurations stay apart where their lines or points overlap (and in grey).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINE_STYLES = ("-", "--", "-.", ":")
# The smallest span a panel's y axis shows: differences of a few hundredths stay visible, and
# nothing is magnified past this.
MIN_SPAN = 0.1


def _style(index: int) -> dict:
    return {"color": PALETTE[index % len(PALETTE)], "marker": MARKERS[index % len(MARKERS)]}


def _fitted_limits(lows: list[float], highs: list[float]) -> tuple[float, float]:
    """A y range that fits the intervals shown (all metrics lie in [0, 1]), at least MIN_SPAN wide,
    with a margin, so that bars near 1 do not all look alike."""
    low, high = min(lows), max(highs)
    span = max(high - low, MIN_SPAN)
    middle = (low + high) / 2
    low, high = middle - 0.6 * span, middle + 0.6 * span
    if low < 0:
        low, high = 0.0, min(1.0, high - low)
    if high > 1:
        low, high = max(0.0, low - (high - 1)), 1.0
    # A little room past 0 and 1, so that a whisker's cap at either end stays in sight.
    room = 0.03 * (high - low)
    return low - (room if low == 0 else 0), high + (room if high == 1 else 0)


def behind_the_best(intervals: Sequence[IntervalRow], comparisons: Sequence[ComparisonRow], metric: str) -> set[str]:
    """The configurations whose paired difference from the best one on this metric is significant
    (randomization p < ALPHA)."""
    ranked = ranked_by_mean(intervals, metric)
    if len(ranked) < 2:
        return set()
    best = ranked[0].configuration
    return {
        row.configuration
        for row in ranked[1:]
        if (pair := comparison_of(comparisons, metric, best, row.configuration)) is not None
        and pair.questions
        and pair.p_value < ALPHA
    }


def interval_figure(
    intervals: Sequence[IntervalRow], metrics: list[str], title: str, comparisons: Sequence[ComparisonRow] = ()
) -> Figure:
    """One panel per metric, its y axis fitted to the intervals in it: each configuration's mean as
    a point with its 95% interval as a whisker, labelled with its value and the questions scored.
    The best configuration is named in the panel's title; a configuration significantly behind it
    (comparisons: rows of metrics/significance.compare_all_pairs, p < ALPHA) is marked `*`.
    `intervals`: rows of metrics/averaging.py's interval_table (answer rows carry their
    judge-corrected estimates too)."""
    rows = [row for row in intervals if row.metric in metrics and row.mean is not None]
    labels = list(dict.fromkeys(row.configuration for row in rows))
    metrics = [m for m in metrics if m in {row.metric for row in rows}]
    # A panel as wide as its configurations' labels need (each point's value is written on its
    # right), and as many panels a line as fit in about 16 inches.
    panel_width = max(2.4, 0.85 * (len(labels) + 1))
    columns = max(1, min(4, int(16 // panel_width), len(metrics)))
    lines = -(-max(1, len(metrics)) // columns)
    figure = Figure(figsize=(max(6.0, panel_width * columns + 1.6), 2.9 * lines + 0.9))
    panels = figure.subplots(lines, columns, squeeze=False).ravel()
    for panel, metric in zip(panels, metrics):
        _metric_panel(panel, metric, labels, rows, comparisons)
    for panel in panels[len(metrics) :]:
        panel.set_visible(False)
    figure.suptitle(title, fontsize=10)
    corrected = any(_corrected(r) is not None for r in rows)
    figure.text(
        0.01,
        0.005,
        f"point: mean; whisker: 95% bootstrap interval; n: questions scored; y axes fitted to each metric; "
        f"* significantly behind the best (paired randomization p < {ALPHA})"
        + (
            "\nhollow point, dashed whisker: judge-corrected estimate, 95% interval over questions and the labels "
            "(no point: the labels do not show the judge separating the classes)"
            if corrected
            else ""
        ),
        fontsize=7,
        color="#444444",
    )
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    return figure


def _metric_panel(
    panel, metric: str, labels: list[str], rows: Sequence[IntervalRow], comparisons: Sequence[ComparisonRow]
) -> None:
    """One metric's panel: each configuration's point and whisker (and its judge-corrected one),
    labelled with its value, n and a `*` when significantly behind the best; `not scored` where
    a configuration has none; the axis fitted; the best named in the title."""
    metric_rows = {r.configuration: r for r in rows if r.metric == metric}
    behind = behind_the_best(rows, comparisons, metric)
    for index, label in enumerate(labels):
        row = metric_rows.get(label)
        if row is None:
            continue
        low = row.mean - row.ci_low if row.ci_low is not None else 0.0
        high = row.ci_high - row.mean if row.ci_high is not None else 0.0
        panel.errorbar(index, row.mean, yerr=[[low], [high]], capsize=4, markersize=7, **_style(index))
        _corrected_point(panel, index, row)
    panel.set_ylim(
        *_fitted_limits(
            [min(_bounds(r, "low")) for r in metric_rows.values()],
            [max(_bounds(r, "high")) for r in metric_rows.values()],
        )
    )
    bottom, top = panel.get_ylim()
    for index, label in enumerate(labels):
        if (row := metric_rows.get(label)) is None:
            continue
        # Near the panel's floor or ceiling the label grows away from it, not past the axes.
        height = (row.mean - bottom) / (top - bottom)
        panel.annotate(
            f"{'*' if label in behind else ''}{row.mean:.3f}\nn={row.scored}{_corrected_label(row)}",
            (index, row.mean),
            xytext=(6, 0),
            textcoords="offset points",
            va="bottom" if height < 0.25 else "top" if height > 0.75 else "center",
            fontsize=8,
        )
    for index, label in enumerate(labels):
        if label not in metric_rows:
            panel.text(index, (bottom + top) / 2, "not\nscored", ha="center", va="center", fontsize=8, color="#666666")
    corrected_shown = any(_corrected(r) is not None for r in metric_rows.values())
    # Room on the right of the last point for its label.
    panel.set_xlim(-0.5 - (2 * CORRECTED_OFFSET if corrected_shown else 0), len(labels) - 0.05)
    panel.set_xticks(range(len(labels)), labels, fontsize=8, rotation=20 if len(labels) > 3 else 0)
    panel.set_title(
        f"{metric}{' (lower is better)' if metric in LOWER_IS_BETTER else ''}{_lead(rows, comparisons, metric)}",
        fontsize=9,
        loc="left",
    )
    panel.grid(axis="y", alpha=0.3)
    panel.tick_params(axis="y", labelsize=8)


def _lead(rows: Sequence[IntervalRow], comparisons: Sequence[ComparisonRow], metric: str) -> str:
    """A panel title's second line naming the best configuration, where it is ahead: its paired
    difference from the runner-up (over the questions both scored) is in its favour, marked "not
    significant" when p >= ALPHA; with no paired comparison, its mean is higher. Nothing over a
    tie, a zero paired difference, or one that favours the runner-up (means over different questions)."""
    ranked = ranked_by_mean(rows, metric)
    if len(ranked) < 2 or ranked[0].mean == ranked[1].mean:
        return ""
    best = ranked[0].configuration
    pair = comparison_of(comparisons, metric, best, ranked[1].configuration)
    if pair is None or not pair.questions:
        return f"\nbest: {best}"
    favours = pair.difference < 0 if metric in LOWER_IS_BETTER else pair.difference > 0
    if not favours:
        return ""
    return f"\nbest: {best}" + ("" if pair.p_value < ALPHA else " (not significant)")


# How far left of its configuration's point the judge-corrected point of a metric stands (the
# raw point's label is on its right).
CORRECTED_OFFSET = 0.32


def _corrected(row: IntervalRow) -> AnswerIntervalRow | None:
    """The row when it carries a judge-corrected interval (a judged answer metric with labels)."""
    return row if has_correction(row) else None


def _bounds(row: IntervalRow, side: str) -> list[float]:
    """The lower (or upper) ends a panel must show for one row: its interval's and, when it has
    one, its judge-corrected interval's."""
    raw = row.ci_low if side == "low" else row.ci_high
    ends = [raw if raw is not None else row.mean]
    if (corrected := _corrected(row)) is not None:
        ends.append(corrected.corrected_low if side == "low" else corrected.corrected_high)
    return ends


def _corrected_point(panel, index: int, row: IntervalRow) -> None:
    """A judged metric's judge-corrected estimate beside its raw point: hollow, with a dashed
    whisker for its interval (the interval alone when there is no estimate)."""
    if (row := _corrected(row)) is None:
        return
    style = _style(index)
    x = index - CORRECTED_OFFSET
    estimate = row.corrected
    middle = estimate if estimate is not None else (row.corrected_low + row.corrected_high) / 2
    bars = panel.errorbar(
        x,
        middle,
        yerr=[[middle - row.corrected_low], [row.corrected_high - middle]],
        capsize=3,
        markersize=6 if estimate is not None else 0,
        markerfacecolor="white",
        color=style["color"],
        marker=style["marker"],
        linewidth=1,
    )
    bars[-1][0].set_linestyle("--")


def _corrected_label(row: IntervalRow) -> str:
    """The judge-corrected estimate under the raw point's own label (a label beside the hollow
    point would run into the previous configuration's)."""
    if (row := _corrected(row)) is None:
        return ""
    return f"\ncorr. {row.corrected:.3f}" if row.corrected is not None else "\ncorr. none"


def recall_curve_figure(intervals: Sequence[IntervalRow], ks: list[int], title: str) -> Figure:
    """recall@k against k, one line per configuration with its own colour, marker and dashes, each
    point's 95% interval as a whisker, the configurations set a little apart along k so that equal
    values do not hide one another; the y axis fitted to the intervals."""
    figure = Figure(figsize=(6.4, 4.2))
    axes = figure.subplots()
    labels = list(dict.fromkeys(row.configuration for row in intervals))
    # Offsets in k's own units, a fraction of the smallest gap between cut-offs.
    gap = min((b - a for a, b in zip(sorted(ks), sorted(ks)[1:])), default=1)
    offsets = np.linspace(-0.12, 0.12, len(labels)) * gap if len(labels) > 1 else [0.0]
    lows, highs = [], []
    for index, label in enumerate(labels):
        rows = {r.metric: r for r in intervals if r.configuration == label and r.mean is not None}
        points = [(k, rows[f"recall@{k}"]) for k in ks if f"recall@{k}" in rows]
        if not points:
            continue
        x = [k + offsets[index] for k, _ in points]
        means = [row.mean for _, row in points]
        low = [row.mean - (row.ci_low if row.ci_low is not None else row.mean) for _, row in points]
        high = [(row.ci_high if row.ci_high is not None else row.mean) - row.mean for _, row in points]
        lows += [m - d for m, d in zip(means, low)]
        highs += [m + d for m, d in zip(means, high)]
        axes.errorbar(
            x,
            means,
            yerr=[low, high],
            capsize=3,
            linestyle=LINE_STYLES[index % len(LINE_STYLES)],
            label=label,
            markersize=6,
            **_style(index),
        )
    axes.set_xticks(ks)
    axes.set_xlabel("k (documents retrieved)")
    axes.set_ylabel("recall@k, with 95% bootstrap interval")
    if lows:
        axes.set_ylim(*_fitted_limits(lows, highs))
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize=8, loc="lower right")
    else:
        # No configuration scored a question: say so, where an empty legend would only warn.
        axes.text(0.5, 0.5, "no configuration scored a question", ha="center", va="center", transform=axes.transAxes)
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


RELIABILITY_BINS = 5


def reliability_figure(labels: list[bool], p_supported: list[float], threshold: float, title: str):
    """The judge's P(supported) against the share of statements people labelled supported, in
    RELIABILITY_BINS bins of equal count (scikit-learn's calibration_curve, strategy "quantile":
    a judge's P crowds near 1, so equal-width bins would leave most empty), each point marked with
    its count; the diagonal is a judge whose P is the labels' rate, the dashed line its threshold."""
    import numpy as np
    from sklearn.calibration import calibration_curve

    figure = Figure(figsize=(4.6, 4.0))
    axes = figure.subplots()
    axes.plot([0, 1], [0, 1], color="0.7", linewidth=1, label="P = labels' rate")
    axes.axvline(threshold, color="0.4", linestyle="--", linewidth=1, label=f"threshold {threshold}")
    if len(set(labels)) == 2 and len(labels) >= RELIABILITY_BINS:
        probabilities = np.array(p_supported)
        rate, mean_p = calibration_curve(np.array(labels), probabilities, n_bins=RELIABILITY_BINS, strategy="quantile")
        # Each bin's count, binned as calibration_curve bins (its quantile edges and searchsorted).
        edges = np.percentile(probabilities, np.linspace(0, 100, RELIABILITY_BINS + 1))
        totals = np.bincount(np.searchsorted(edges[1:-1], probabilities), minlength=len(edges))
        counts = totals[totals != 0]
        axes.plot(mean_p, rate, marker="o", color="tab:blue", label="labelled statements")
        for x, y, count in zip(mean_p, rate, counts, strict=True):
            axes.annotate(str(int(count)), (x, y), textcoords="offset points", xytext=(4, -10), fontsize=8)
    else:
        axes.text(0.5, 0.5, "needs labels of both classes", ha="center", va="center", transform=axes.transAxes)
    axes.set_xlim(0, 1)
    axes.set_ylim(-0.02, 1.02)
    axes.set_xlabel("judge P(supported), mean of the bin")
    axes.set_ylabel("share labelled supported")
    axes.set_title(title, fontsize=8)
    axes.legend(fontsize=7, loc="upper left", title="numbers: statements in the bin", title_fontsize=7)
    figure.tight_layout()
    return figure


def alignment_figure(comparison, used: bool, reason: str, title: str):
    """Agreement with people before and after aligning the judge to a collection's labels: balanced
    accuracy and AUC of the plain threshold and of the aligned judge's cross-fitted verdicts (each
    label predicted by a fit that never saw it), with 95% bootstrap intervals over questions; the
    dashed line is a judge that cannot tell the classes apart (0.5). `comparison`: the aligned
    judge's Comparison (judge/calibration/alignment.py); `used`, `reason`: whether evaluations use it and why."""
    figure = Figure(figsize=(6.4, 3.4))
    panels = figure.subplots(1, 2, sharey=True)
    for axes, (name, key) in zip(panels, (("balanced accuracy", "balanced_accuracy"), ("AUC", "auc")), strict=True):
        for position, (side, colour) in enumerate((("plain", "0.45"), ("aligned", "tab:blue"))):
            value = getattr(comparison, f"{side}_{key}")
            low, high = getattr(comparison, f"{side}_{key}_low"), getattr(comparison, f"{side}_{key}_high")
            axes.errorbar(position, value, yerr=[[value - low], [high - value]], fmt="o", color=colour, capsize=5)
            axes.annotate(f"{value:.3f}", (position, value), textcoords="offset points", xytext=(8, -3), fontsize=8)
        axes.axhline(0.5, color="0.6", linestyle="--", linewidth=1)
        axes.set_xticks([0, 1], ["plain threshold", "aligned (cross-fitted)"], fontsize=8)
        axes.set_xlim(-0.5, 1.5)
        axes.set_ylim(0, 1.02)
        axes.set_title(name, fontsize=9)
    panels[0].set_ylabel("agreement with people's labels")
    verdict = "used by evaluations" if used else "not used"
    figure.suptitle(
        f"{title}\n{comparison.labelled} labels ({comparison.labelled_unsupported} unsupported), "
        f"{comparison.folds} folds by question; aligned judge {verdict}",
        fontsize=8,
    )
    figure.text(0.5, 0.01, _wrapped(reason, 110), ha="center", va="bottom", fontsize=7, color="0.3")
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    return figure


def _wrapped(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)[:2])
