"""The batch pictures, drawn from numbers: axes that fit the data, configurations told apart where
they overlap, significance marked; each saved as a PNG as MLflow stores it."""

from __future__ import annotations

import polars as pl

from ragassay import plots
from ragassay.metrics.averaging import IntervalRow
from ragassay.metrics.significance import ComparisonRow


def _intervals(rows: list[tuple[str, str, float, float, float]]) -> list[IntervalRow]:
    return [
        IntervalRow(configuration=c, metric=m, scored=30, mean=mean, ci_low=low, ci_high=high)
        for c, m, mean, low, high in rows
    ]


def _comparisons(rows: list[dict]) -> list[ComparisonRow]:
    return [ComparisonRow.model_validate(row) for row in rows]


def test_metric_panels_fit_their_data_and_mark_who_is_significantly_behind(tmp_path):
    intervals = _intervals(
        [
            ("fulltext", "mrr", 0.90, 0.86, 0.93),
            ("hybrid", "mrr", 0.97, 0.95, 0.99),
            ("fulltext", "faithfulness", 0.40, 0.20, 0.60),
        ]
    )
    comparisons = [
        {"configuration_a": "fulltext", "configuration_b": "hybrid", "metric": "mrr", "questions": 30,
         "mean_difference": 0.07, "ci_low": 0.03, "ci_high": 0.1, "p_value": 0.001},
    ]  # fmt: skip
    figure = plots.interval_figure(intervals, ["mrr", "faithfulness"], "batch", _comparisons(comparisons))
    mrr, faithfulness = figure.axes[:2]
    low, high = mrr.get_ylim()
    assert 0.8 < low < 0.86 and 0.99 < high <= 1.03, "near 1, the axis starts near the data, not at 0"
    assert mrr.get_title(loc="left") == "mrr\nbest: hybrid"
    labels = [text.get_text() for text in mrr.texts]
    assert "*0.900\nn=30" in labels and "0.970\nn=30" in labels, "fulltext is significantly behind"
    assert "not\nscored" in [text.get_text() for text in faithfulness.texts], "hybrid scored no faithfulness"
    figure.savefig(tmp_path / "metrics.png")
    assert (tmp_path / "metrics.png").stat().st_size > 10_000


def test_recall_curves_keep_overlapping_configurations_apart_with_their_intervals(tmp_path):
    rows = [(label, f"recall@{k}", 0.9, 0.8, 1.0) for label in ("semantic", "hybrid") for k in (1, 5, 10)]
    figure = plots.recall_curve_figure(_intervals(rows), [1, 5, 10], "recall@k")
    [axes] = figure.axes
    lines = [container.lines[0] for container in axes.containers]  # each errorbar's data line
    assert [container.get_label() for container in axes.containers] == ["semantic", "hybrid"]
    x_semantic, x_hybrid = (list(line.get_xdata()) for line in lines)
    assert all(a < b for a, b in zip(x_semantic, x_hybrid)), "equal values set a little apart along k"
    assert len({(line.get_marker(), line.get_linestyle()) for line in lines}) == 2, "each its own marker and dashes"
    assert len(axes.containers[0].lines[2]) == 1, "with its intervals as whiskers"
    assert axes.get_ylim()[0] > 0.5
    figure.savefig(tmp_path / "recall.png")
    assert (tmp_path / "recall.png").stat().st_size > 10_000


def test_a_judged_metric_shows_its_corrected_estimate_beside_its_mean(tmp_path):
    from ragassay.metrics.corrected_rows import ANSWER_INTERVAL_SCHEMA, answer_interval_rows

    rows = [
        ("hybrid", "faithfulness", 0.80, 0.70, 0.88, 0.74, 0.52, 0.93),
        ("fulltext", "faithfulness", 0.60, 0.50, 0.70, None, 0.0, 1.0),  # labels that cannot tell: no estimate
        ("hybrid", "false_refusal_rate", 0.1, 0.0, 0.2, None, None, None),
    ]
    intervals = pl.DataFrame(
        [
            dict(
                zip(
                    (
                        "configuration",
                        "metric",
                        "mean",
                        "ci_low",
                        "ci_high",
                        "corrected",
                        "corrected_low",
                        "corrected_high",
                    ),
                    row,
                )
            )
            | {"scored": 20}
            for row in rows
        ],
        schema=ANSWER_INTERVAL_SCHEMA,
    )
    figure = plots.interval_figure(answer_interval_rows(intervals), ["faithfulness", "false_refusal_rate"], "answers")
    faithfulness, refusals = figure.axes[:2]
    labels = " ".join(text.get_text() for text in faithfulness.texts)
    assert "\ncorr. 0.740" in labels and "\ncorr. none" in labels, "under the raw point's value"
    low, high = faithfulness.get_ylim()
    assert low <= 0.0 and high >= 1.0, "the axis holds the corrected intervals too"
    assert not any("corr." in text.get_text() for text in refusals.texts), "refusals are not judged"
    assert "judge-corrected" in " ".join(text.get_text() for text in figure.texts)
    figure.savefig(tmp_path / "answers.png")
    assert (tmp_path / "answers.png").stat().st_size > 10_000


def test_no_best_is_named_over_a_zero_or_contrary_paired_difference_and_labels_stay_in_the_panel(tmp_path):
    # Issue 38's picture: hybrid's 0.200 over 5 questions against fulltext's 0.000 over 3, and no
    # difference on the 3 both scored; recall's means favour hybrid, its paired difference fulltext.
    intervals = _intervals(
        [
            ("fulltext", "faithfulness", 0.0, 0.0, 0.2),
            ("hybrid", "faithfulness", 0.2, 0.0, 0.4),
            ("fulltext", "recall@5", 0.5, 0.3, 0.7),
            ("hybrid", "recall@5", 0.6, 0.4, 0.8),
            ("fulltext", "mrr", 0.7, 0.5, 0.9),
            ("hybrid", "mrr", 1.0, 0.9, 1.0),
        ]
    )
    comparisons = [
        {"configuration_a": "fulltext", "configuration_b": "hybrid", "metric": "faithfulness", "questions": 3,
         "mean_difference": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p_value": 1.0},
        {"configuration_a": "fulltext", "configuration_b": "hybrid", "metric": "recall@5", "questions": 3,
         "mean_difference": -0.1, "ci_low": -0.3, "ci_high": 0.1, "p_value": 0.4},
        {"configuration_a": "fulltext", "configuration_b": "hybrid", "metric": "mrr", "questions": 30,
         "mean_difference": 0.3, "ci_low": -0.05, "ci_high": 0.5, "p_value": 0.08},
    ]  # fmt: skip
    figure = plots.interval_figure(intervals, ["faithfulness", "recall@5", "mrr"], "batch", _comparisons(comparisons))
    faithfulness, recall, mrr = figure.axes[:3]
    assert faithfulness.get_title(loc="left") == "faithfulness", "no best over a zero paired difference"
    assert recall.get_title(loc="left") == "recall@5", "nor where the paired difference favours the other"
    assert mrr.get_title(loc="left") == "mrr\nbest: hybrid (not significant)"
    figure.savefig(tmp_path / "lead.png")
    # Each label inside its panel: a value at the floor grows up from it, one at the ceiling down.
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    for panel in (faithfulness, mrr):
        box = panel.get_window_extent(renderer)
        for text in panel.texts:
            extent = text.get_window_extent(renderer)
            assert box.y0 - 1 <= extent.y0 and extent.y1 <= box.y1 + 1, text.get_text()
            assert extent.x1 <= box.x1 + 1, text.get_text()


def test_the_aligned_judge_shows_its_agreement_before_and_after_with_intervals(tmp_path):
    from ragassay.judge.calibration.alignment import Comparison

    comparison = Comparison(
        labelled=60,
        labelled_supported=45,
        labelled_unsupported=15,
        groups=40,
        folds=5,
        plain_balanced_accuracy=0.62,
        plain_balanced_accuracy_low=0.50,
        plain_balanced_accuracy_high=0.75,
        plain_auc=0.66,
        plain_auc_low=0.52,
        plain_auc_high=0.80,
        aligned_balanced_accuracy=0.71,
        aligned_balanced_accuracy_low=0.58,
        aligned_balanced_accuracy_high=0.83,
        aligned_auc=0.74,
        aligned_auc_low=0.60,
        aligned_auc_high=0.87,
        ahead_share=0.91,
        auc_behind_share=0.10,
    )
    figure = plots.alignment_figure(comparison, False, "not clearly ahead: ahead in 71% of replicates", "handbook")
    accuracy, auc = figure.axes
    assert (accuracy.get_title(), auc.get_title()) == ("balanced accuracy", "AUC")
    shown = {text.get_text() for axes in figure.axes for text in axes.texts}
    assert {"0.620", "0.710", "0.660", "0.740"} <= shown
    assert "60 labels (15 unsupported)" in figure._suptitle.get_text() and "not used" in figure._suptitle.get_text()
    assert "not clearly ahead" in " ".join(text.get_text() for text in figure.texts)
    figure.savefig(tmp_path / "alignment.png")
    assert (tmp_path / "alignment.png").stat().st_size > 10_000
