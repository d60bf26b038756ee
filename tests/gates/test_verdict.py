"""A batch's verdict: each assertion's row, the batch's and each configuration's verdict, the
message a failed flow run carries, and dotted overrides of a validated config. Pure."""

from __future__ import annotations

import pytest

from ragassay.config import PipelineConfig
from ragassay.config_errors import parse_config, with_overrides
from ragassay.errors import ConfigError
from ragassay.gates.assertions import (
    assertion_rows,
    batch_verdict,
    check_assertions,
    configuration_verdicts,
    failed_assertions_text,
    parse_assertion,
)

MEANS = {"hybrid": {"recall@5": 0.8333, "mrr": 0.9}, "fulltext": {"recall@5": 0.95}}


def checked(*texts: str):
    return check_assertions([parse_assertion(text) for text in texts], MEANS)


def test_each_assertion_row_names_its_configuration_metric_bound_value_and_outcome():
    results = checked("hybrid:recall@5>=0.9", "hybrid:mrr>=0.5", "fulltext:ndcg@5>=0.1")
    assert assertion_rows(results) == [
        {
            "assertion": "hybrid:recall@5>=0.9",
            "configuration": "hybrid",
            "metric": "recall@5",
            "operator": "at least",
            "bound": 0.9,
            "value": 0.8333,
            "outcome": "failed",
            "reason": None,
        },
        {
            "assertion": "hybrid:mrr>=0.5",
            "configuration": "hybrid",
            "metric": "mrr",
            "operator": "at least",
            "bound": 0.5,
            "value": 0.9,
            "outcome": "passed",
            "reason": None,
        },
        # Nothing scored: unknown, so it fails, with no value rather than a 0.
        {
            "assertion": "fulltext:ndcg@5>=0.1",
            "configuration": "fulltext",
            "metric": "ndcg@5",
            "operator": "at least",
            "bound": 0.1,
            "value": None,
            "outcome": "failed",
            "reason": None,
        },
    ]


def test_the_verdict_is_failed_passed_or_none_and_each_configuration_has_its_own():
    assert batch_verdict([]) == "none"
    assert batch_verdict(checked("hybrid:mrr>=0.5")) == "passed"
    mixed = checked("hybrid:recall@5>=0.9", "fulltext:recall@5>=0.9")
    assert batch_verdict(mixed) == "failed"
    verdicts = configuration_verdicts(mixed)
    assert (verdicts["hybrid"], verdicts["fulltext"], verdicts["semantic"]) == ("failed", "passed", "none")


def test_a_failed_verdict_names_each_failed_bound_and_what_was_measured():
    results = checked("hybrid:recall@5>=0.9", "hybrid:mrr>=0.5", "fulltext:ndcg@5>=0.1")
    text = "2 of 3 assertions failed: hybrid:recall@5>=0.9 (measured 0.8333); fulltext:ndcg@5>=0.1 (nothing scored)"
    assert failed_assertions_text(results) == text
    assert failed_assertions_text(checked("hybrid:mrr>=0.5")) == "" and failed_assertions_text([]) == ""


@pytest.fixture
def pipeline(home) -> PipelineConfig:
    return parse_config(
        PipelineConfig,
        collection="sample",
        ingest={"paths": ["docs"]},
        golden={"generate": True, "count": 3},
        retrieval={"configurations": [{"label": "hybrid", "search_type": "hybrid"}]},
        answers={"max_questions": 6, "configurations": [{"label": "a"}, {"label": "b", "k": 4}]},
    )


def test_overrides_change_only_the_dotted_keys_and_are_validated_as_the_file_is(pipeline):
    changed = with_overrides(
        pipeline,
        {
            "answers.max_questions": 2,
            "answers.configurations.1.k": 2,
            "golden.generate": False,
            "retrieval.assertions": ["hybrid:recall@5>=0.5"],
        },
    )
    assert changed.answers.max_questions == 2 and changed.golden.generate is False
    assert [c.k for c in changed.answers.configurations] == [pipeline.answers.configurations[0].k, 2]
    assert changed.retrieval.assertions == ("hybrid:recall@5>=0.5",)
    # What the overrides do not name keeps its value.
    assert changed.golden.count == 3 and changed.home == pipeline.home
    assert with_overrides(pipeline, None) is pipeline and with_overrides(pipeline, {}) is pipeline


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"answers.max_question": 2}, "answers.max_question: unknown key; allowed keys: assertions, configurations"),
        ({"answers.max_questions": "many"}, "answers.max_questions: Input should be a valid integer"),
        ({"answers.configurations.5.k": 2}, "answers.configurations.5 is not a section or a list item"),
        ({"collection.name": "x"}, "'collection.name' is not a setting"),
        ({"answers..k": 2}, "'answers..k' is not a dotted key"),
        ({"retrieval.assertions": ["nobody:recall@5>=0.5"]}, "names configuration 'nobody'; labels: hybrid"),
    ],
)
def test_a_bad_override_is_a_config_error_naming_the_key(pipeline, overrides, message):
    with pytest.raises(ConfigError, match="overrides") as raised:
        with_overrides(pipeline, overrides)
    assert message in str(raised.value)


def test_overrides_keep_a_secret_header_a_secret_not_its_mask(home):
    from ragassay.config import RetrievalEvalConfig

    system = {
        "kind": "http",
        "url": "http://127.0.0.1:9/rag",
        "headers": {"Authorization": "Bearer literal-token"},
        "response": {"documents": "$.ids[*]"},
    }
    config = parse_config(
        RetrievalEvalConfig, collections=["sample"], configurations=[{"label": "prod", "system": system}]
    )
    changed = with_overrides(config, {"max_questions": 3})
    header = changed.configurations[0].system.headers["Authorization"]
    assert changed.max_questions == 3 and header.get_secret_value() == "Bearer literal-token"
