"""The answer metrics' declarations (metrics/declared.py) and what is derived from them."""

from __future__ import annotations

import pytest

from ragassay.config import AnswerEvalConfig
from ragassay.config_errors import parse_config
from ragassay.errors import ConfigError
from ragassay.metrics.declared import BUILT_IN_METRICS, NEEDING_CONTEXT, NEEDING_REFERENCE, AnswerMetric
from ragassay.metrics.names import ANSWER_METRICS, JUDGED_METRICS, LOWER_IS_BETTER, METRIC_TITLES


def test_every_list_of_answer_metrics_comes_from_the_declarations():
    assert ANSWER_METRICS == (
        "context_recall",
        "faithfulness",
        "citation_precision",
        "answer_relevancy",
        "mean_support",
        "answer_correctness",
    )
    assert JUDGED_METRICS == ("context_recall", "faithfulness", "citation_precision")
    assert NEEDING_CONTEXT == ("context_recall", "faithfulness", "citation_precision", "mean_support")
    assert NEEDING_REFERENCE == ("context_recall", "answer_correctness")
    assert LOWER_IS_BETTER == ("false_refusal_rate",)
    assert METRIC_TITLES["answer_correctness"] == "answer correctness"
    # Each built-in metric's formula is the docstring of its pure function.
    assert all(metric.formula is not None and "=" in metric.formula.__doc__ for metric in BUILT_IN_METRICS)


def test_a_metric_name_that_is_no_column_name_is_refused():
    with pytest.raises(ValueError, match="snake_case"):
        AnswerMetric("Lead Support", "lead support", "the first statement supported")


def test_metrics_names_only_declared_metrics_and_assertions_only_those_it_keeps(tmp_path):
    settings = {"collections": ["sample"], "home": tmp_path}
    with pytest.raises(
        ConfigError, match=r"'faithfullness' is not an answer metric; answer metrics: context_recall, faithfulness, "
    ):
        parse_config(AnswerEvalConfig, **settings, metrics=["faithfullness"])
    with pytest.raises(ConfigError, match=r"bounds context_recall, which metrics leaves out"):
        parse_config(AnswerEvalConfig, **settings, metrics=["faithfulness"], assertions=["hybrid:context_recall>=0.5"])
    chosen = parse_config(
        AnswerEvalConfig, **settings, metrics=["faithfulness"], assertions=["hybrid:faithfulness>=0.5"]
    )
    assert chosen.metrics == ("faithfulness",)
