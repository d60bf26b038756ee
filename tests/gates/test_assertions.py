"""`--assert` bounds: which evaluation each one bounds, in a pipeline file too, and what they may
name. Pure: configs are built and checked, nothing runs."""

from __future__ import annotations

import pytest

from ragassay.config import AnswerEvalConfig, PipelineConfig, route_assertions
from ragassay.config_errors import parse_config
from ragassay.errors import ConfigError

PROD = {"label": "prod", "system": {"kind": "records", "path": "prod.jsonl"}}
NIGHTLY = {"label": "nightly", "system": {"kind": "trec", "path": "nightly.trec"}}


def test_a_coverage_bound_goes_to_every_stage_that_has_its_system():
    values = {
        "collection": "sample",
        "ingest": {"enabled": False},
        "retrieval": {"configurations": [{"label": "hybrid", "search_type": "hybrid"}, PROD, NIGHTLY]},
        "answers": {"configurations": [PROD]},
    }
    routed = route_assertions(
        values,
        ["prod:coverage>=0.98", "nightly:coverage>=0.9", "hybrid:recall@5>=0.8", "prod:faithfulness>=0.7"],
    )
    assert routed["retrieval"]["assertions"] == ["prod:coverage>=0.98", "nightly:coverage>=0.9", "hybrid:recall@5>=0.8"]
    assert routed["answers"]["assertions"] == ["prod:coverage>=0.98", "prod:faithfulness>=0.7"]
    config = parse_config(PipelineConfig, **routed)
    assert config.answers.assertions == ("prod:coverage>=0.98", "prod:faithfulness>=0.7")
    # Each stage's config keeps the system as written (it has no models of the pipeline's to take).
    assert [c.label for c in config.retrieval_config().configurations] == ["hybrid", "prod", "nightly"]
    assert config.answer_config().configurations[0].system.kind == "records"


def test_coverage_bounds_only_a_system_under_test(home):
    with pytest.raises(ConfigError, match="'hybrid' is built in and answers every question"):
        parse_config(
            AnswerEvalConfig,
            collections=["sample"],
            configurations=[{"label": "hybrid"}, PROD],
            assertions=["hybrid:coverage>=0.9"],
        )
    with pytest.raises(ConfigError, match=r"answer metric must be one of .*answer_correctness.*coverage"):
        parse_config(AnswerEvalConfig, collections=["sample"], configurations=[PROD], assertions=["prod:ndcg@5>=0.9"])
    config = parse_config(
        AnswerEvalConfig,
        collections=["sample"],
        configurations=[PROD],
        assertions=["prod:coverage>=0.9", "prod:answer_correctness>=0.5"],
    )
    assert config.assertions == ("prod:coverage>=0.9", "prod:answer_correctness>=0.5")


def test_a_judged_metrics_corrected_estimate_can_be_bounded_and_goes_to_answers(home):
    from ragassay.gates.assertions import check_assertions, parse_answer_assertion

    routed = route_assertions({"collection": "sample"}, ["hybrid:faithfulness.corrected_low>=0.6"])
    assert routed["answers"]["assertions"] == ["hybrid:faithfulness.corrected_low>=0.6"]
    assert "retrieval" not in routed
    config = parse_config(
        AnswerEvalConfig,
        collections=["sample"],
        configurations=[{"label": "hybrid"}],
        assertions=["hybrid:faithfulness.corrected_low>=0.6", "hybrid:faithfulness>=0.7"],
    )
    means = {"hybrid": {"faithfulness": 0.8, "faithfulness_corrected_low": 0.55}}
    results = check_assertions([parse_answer_assertion(text) for text in config.assertions], means)
    assert [(r.assertion, r.value, r.passed) for r in results] == [
        ("hybrid:faithfulness.corrected_low>=0.6", 0.55, False),
        ("hybrid:faithfulness>=0.7", 0.8, True),  # the plain name is the raw mean
    ]
    # Without labels there is no corrected estimate: the bound fails, and says why.
    [unknown] = check_assertions(
        [parse_answer_assertion("hybrid:faithfulness.corrected_low>=0.6")], {"hybrid": {"faithfulness": 0.8}}
    )
    assert not unknown.passed and unknown.value is None and "no labels of these documents" in unknown.reason
    # Nothing to correct: a metric without judge verdicts has no corrected estimate.
    with pytest.raises(ConfigError, match="answer metric must be one of"):
        parse_config(
            AnswerEvalConfig,
            collections=["sample"],
            configurations=[{"label": "hybrid"}],
            assertions=["hybrid:answer_relevancy.corrected>=0.5"],
        )
