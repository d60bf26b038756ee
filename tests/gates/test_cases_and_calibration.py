"""`ragassay cases run` as a CI gate and `ragassay judge calibrate`, with the real SmolLM2."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from ragassay import tracking
from ragassay.cli.main import app
from tests.conftest import REPO

runner = CliRunner()
LABELS = REPO / "data" / "judge" / "labelled_statements.jsonl"
NEVER_SAID = "xyzzy-plugh"  # a string no answer from the sample corpus holds


@pytest.fixture
def workspace(sample_home, monkeypatch):
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    return sample_home


def _suite(tmp_path, cases: list[dict], **settings) -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"name": "test-suite", "collections": ["sample"], "cases": cases, **settings}))
    return str(path)


def test_a_suite_whose_checks_all_pass_exits_zero_and_is_logged(workspace, tmp_path):
    suite = _suite(tmp_path, [{"id": "melting", "input": "At what temperature does beeswax melt?", "excludes": [NEVER_SAID]}])
    result = runner.invoke(app, ["cases", "run", suite, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["passed"], report["failed"], report["judge_errors"]) == (1, 0, 0)
    [case] = report["cases"]
    assert case["passed"] and case["outcome"] in ("answered", "refused") and case["passages"] >= 1
    [run] = [r for r in tracking.find_runs(workspace, batch_id=report["batch_id"])]
    assert run.data.tags[tracking.TAG_KIND] == "cases" and run.data.metrics["cases_passed"] == 1
    logged = tracking.download_table(workspace, report["run_id"], "cases")
    assert logged["case_id"].to_list() == ["melting"] and logged["passed"].to_list() == [True]


def test_a_failing_check_or_a_judge_error_fails_the_case_and_the_exit_code(workspace, tmp_path):
    cases = [
        {"id": "missing-word", "input": "At what temperature does beeswax melt?", "contains": [NEVER_SAID], "excludes": [NEVER_SAID]},
        # A judge whose context cannot hold the prompt returns nothing readable: a judge error.
        {"id": "judged", "input": "How should a smoker be lit?", "judge": {"criteria": "Explains how to light a smoker.", "min_score": 0.1},
         "grounded": True},
    ]
    suite = _suite(tmp_path, cases, judge={"context_size": 256})
    result = runner.invoke(app, ["cases", "run", suite, "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    missing, judged = report["cases"]
    assert not missing["passed"] and missing["failures"] == "contains" and "excludes ok" in missing["checks"]
    assert not judged["passed"] and judged["judge_error"] and judged["judge_score"] is None
    assert "judge FAILED: judge error" in judged["checks"]
    assert report["judge_errors"] == 1 and "1 with judge errors" in result.stderr


@pytest.mark.parametrize(
    ("cases", "message"),
    [
        ([{"id": "nothing", "input": "q"}], "case 'nothing' has no check"),
        ([{"id": "a", "input": "q", "contains": ["x"], "expects": "y"}], "cases.0.expects: unknown key; allowed keys: contains"),
        ([{"id": "a", "input": "q", "judge": {"criteria": "c", "min_score": 2}}], "cases.0.judge.min_score"),
        ([{"id": "a", "input": "q", "excludes": ["x"]}, {"id": "a", "input": "r", "excludes": ["x"]}], "repeated: a"),
    ],
)
def test_malformed_suites_are_refused_with_the_field_named(workspace, tmp_path, cases, message):
    result = runner.invoke(app, ["cases", "run", _suite(tmp_path, cases)])
    assert result.exit_code == 2 and message in result.output


def test_calibration_reports_agreement_with_the_shipped_labels(workspace):
    result = runner.invoke(app, ["judge", "calibrate", "--labels", str(LABELS), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = [json.loads(line) for line in LABELS.read_text().splitlines()]
    assert report["labelled"] == len(rows) == 40 and {r["label"] for r in rows} == {"supported", "unsupported"}
    confusion = report["confusion"]
    assert sum(confusion.values()) == report["readable"]
    agreed = confusion["supported_judged_supported"] + confusion["unsupported_judged_unsupported"]
    assert report["accuracy"] == pytest.approx(agreed / report["readable"])
    assert -1.0 <= report["kappa"] <= 1.0 and report["unreadable_rate"] == pytest.approx(1 - report["readable"] / 40)
    assert [row["label"] for row in report["rows"]] == [r["label"] for r in rows]


def test_calibration_refuses_a_bad_labels_file_naming_the_line(workspace, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({"context": "Wax melts at 63 C.", "statement": "Wax melts.", "label": "supported"}) + "\n"
        + json.dumps({"context": "Wax melts at 63 C.", "statement": "Wax boils.", "label": "maybe"}) + "\n"
    )
    result = runner.invoke(app, ["judge", "calibrate", "--labels", str(labels)])
    assert result.exit_code == 2 and f"{labels}:2" in result.output and "'maybe'" in result.output
