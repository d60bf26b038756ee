"""`ragassay cases run` as a CI gate and `ragassay judge calibrate`, with the real SmolLM2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ragassay import tracking
from ragassay.cli.main import app
from tests.conftest import REPO
from tests.helpers import flow_run_outcome

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


@pytest.mark.slow
@pytest.mark.flows
def test_a_suite_whose_checks_all_pass_exits_zero_and_is_logged(workspace, tmp_path):
    suite = _suite(
        tmp_path, [{"id": "melting", "input": "At what temperature does beeswax melt?", "excludes": [NEVER_SAID]}]
    )
    result = runner.invoke(app, ["cases", "run", suite, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["passed"], report["failed"], report["judge_errors"]) == (1, 0, 0)
    [case] = report["cases"]
    assert case["passed"] and case["outcome"] in ("answered", "refused") and case["passages"] >= 1
    [run] = list(tracking.find_runs(workspace, batch_id=report["batch_id"]))
    assert run.data.tags[tracking.TAG_KIND] == "cases" and run.data.metrics["cases_passed"] == 1
    logged = tracking.download_table(workspace, report["run_id"], "cases")
    assert logged["case_id"].to_list() == ["melting"] and logged["passed"].to_list() == [True]


@pytest.mark.slow
@pytest.mark.flows
def test_a_failing_check_or_a_judge_error_fails_the_case_and_the_exit_code(workspace, tmp_path):
    cases = [
        {
            "id": "missing-word",
            "input": "At what temperature does beeswax melt?",
            "contains": [NEVER_SAID],
            "excludes": [NEVER_SAID],
        },
        # A judge whose context cannot hold the prompt returns nothing readable: a judge error.
        {
            "id": "judged",
            "input": "How should a smoker be lit?",
            "judge": {"criteria": "Explains how to light a smoker.", "min_score": 0.1},
            "grounded": True,
        },
    ]
    suite = _suite(tmp_path, cases, judge={"backend": "smollm2", "context_size": 256})
    result = runner.invoke(app, ["cases", "run", suite, "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    missing, judged = report["cases"]
    assert not missing["passed"] and missing["failures"] == "contains" and "excludes ok" in missing["checks"]
    assert not judged["passed"] and judged["judge_error"] and judged["judge_score"] is None
    assert "judge FAILED: judge error" in judged["checks"]
    assert report["judge_errors"] == 1 and "1 with judge errors" in result.stderr
    # Each case is an assertion of the run's verdict: MLflow's run and the Prefect flow run say it.
    assert [(a["assertion"], a["passed"]) for a in report["assertions"]] == [
        ("case missing-word passes", False),
        ("case judged passes", False),
    ]
    [run] = list(tracking.find_runs(workspace, batch_id=report["batch_id"]))
    assert run.data.tags[tracking.TAG_VERDICT] == "failed" and run.info.run_name.startswith("failed: cases-")
    stored = tracking.client(workspace).download_artifacts(report["run_id"], tracking.ASSERTIONS_ARTIFACT)
    verdict = json.loads(Path(stored).read_text())
    assert verdict["verdict"] == "failed" and verdict["assertions"][0]["reason"] == "failed checks: contains"
    state, tables = flow_run_outcome(run.data.tags[tracking.TAG_PREFECT_FLOW_RUN])
    assert state.type.value == "FAILED" and "2 of 2 assertions failed: case missing-word passes" in state.message
    assert tables["cases-sample-assertions"] == verdict["assertions"]


@pytest.mark.flows
@pytest.mark.parametrize(
    ("cases", "message"),
    [
        ([{"id": "nothing", "input": "q"}], "case 'nothing' has no check"),
        (
            [{"id": "a", "input": "q", "contains": ["x"], "expects": "y"}],
            "cases.0.expects: unknown key; allowed keys: contains",
        ),
        ([{"id": "a", "input": "q", "judge": {"criteria": "c", "min_score": 2}}], "cases.0.judge.min_score"),
        ([{"id": "a", "input": "q", "excludes": ["x"]}, {"id": "a", "input": "r", "excludes": ["x"]}], "repeated: a"),
    ],
)
def test_malformed_suites_are_refused_with_the_field_named(workspace, tmp_path, cases, message):
    result = runner.invoke(app, ["cases", "run", _suite(tmp_path, cases)])
    assert result.exit_code == 2 and message in result.output


@pytest.mark.slow
def test_calibration_reports_agreement_with_the_shipped_labels_and_logs_a_run(workspace):
    result = runner.invoke(app, ["judge", "calibrate", "--labels", str(LABELS), "--judge-model", "smollm2", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = [json.loads(line) for line in LABELS.read_text().splitlines()]
    assert report["labelled"] == len(rows) == 52 and {r["label"] for r in rows} == {"supported", "unsupported"}
    assert report["judge_model"].startswith("smollm2:") and report["too_long"] == 0
    confusion = report["confusion"]
    assert sum(confusion.values()) == report["readable"]
    agreed = confusion["supported_judged_supported"] + confusion["unsupported_judged_unsupported"]
    if report["readable"]:
        assert report["accuracy"] == pytest.approx(agreed / report["readable"])
    assert report["unreadable_rate"] == pytest.approx(1 - report["readable"] / len(rows))
    # Every row comes back once, naming its file line.
    assert sorted(row["source"] for row in report["rows"]) == sorted(f"{LABELS}:{n}" for n in range(1, len(rows) + 1))
    run = tracking.client(workspace).get_run(report["mlflow_run_id"])
    assert run.data.params["judge_model"] == report["judge_model"] and run.data.metrics["labelled"] == len(rows)
    mlflow_client = tracking.client(workspace)
    artifacts = {
        a.path for folder in (None, "machine") for a in mlflow_client.list_artifacts(report["mlflow_run_id"], folder)
    }
    assert {"confusion_matrix.png", "reliability_diagram.png", "machine/rows.parquet"} <= artifacts
    assert tracking.download_table(workspace, report["mlflow_run_id"], "rows").height == len(rows)


@pytest.mark.slow
def test_calibration_with_the_default_judge_on_a_seeded_sample(workspace):
    """The default judge (Qwen2.5 1.5B) on 3 of the team's labels, drawn with a seed."""
    arguments = ["judge", "calibrate", "--labels", str(LABELS), "--max-items", "3", "--seed", "4", "--json"]
    first = json.loads(runner.invoke(app, arguments).stdout)
    assert (
        first["judge_model"].startswith("qwen2.5-1.5b:") and first["labelled"] == 3 and first["unreadable_rate"] == 0.0
    )
    assert all(0.0 <= row["p_supported"] <= 1.0 for row in first["rows"]) and first["seconds_per_verdict"] > 0
    again = json.loads(runner.invoke(app, arguments).stdout)
    assert [row["source"] for row in again["rows"]] == [row["source"] for row in first["rows"]], "the sample is seeded"
    assert [row["verdict"] for row in again["rows"]] == [row["verdict"] for row in first["rows"]]


def test_a_context_too_long_for_the_judge_is_counted_not_cut(tmp_path):
    from ragassay.judge.calibration.calibrate import calibrate_judge
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig

    labels = tmp_path / "labels.jsonl"
    rows = [
        {"context": "Wax melts at 63 C. " * 200, "statement": "Wax melts at 63 C.", "label": "supported"},
        {"context": "Wax melts at 63 C.", "statement": "Wax melts at 63 C.", "label": "supported"},
        {"context": "Wax melts at 63 C.", "statement": "Wax boils at 63 C.", "label": "unsupported"},
    ]
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    models = ChatModels()
    report = calibrate_judge(models, ChatModelConfig(backend="smollm2", context_size=512), labels)
    models.close()
    assert report.too_long == 1 and report.labelled == 2
    assert next(row.verdict for row in report.rows) == "too_long"


def test_pairwise_calibration_measures_how_often_verdicts_flip(workspace):
    result = runner.invoke(
        app,
        [
            "judge",
            "calibrate",
            "--pairwise",
            str(REPO / "data" / "sample" / "golden.jsonl"),
            "--judge-model",
            "smollm2",
            "--max-items",
            "4",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["pairs"] == 4 and len(report["rows"]) == 4
    flips = sum(1 for row in report["rows"] if row["outcome"] == "inconsistent")
    if report["readable"]:
        assert report["flip_rate"] == pytest.approx(flips / report["readable"])
    assert {row["kind"] for row in report["rows"]} <= {"off_question", "refusal"}
    assert "confusion_matrix.png" not in {
        a.path for a in tracking.client(workspace).list_artifacts(report["mlflow_run_id"])
    }


def test_a_malformed_pairs_file_is_refused_naming_its_lines(workspace, tmp_path):
    """The pairs file goes through the checks every file a person writes goes through (it was read
    with a bare json.loads: a malformed line was a crash, exit 3)."""
    pairs = tmp_path / "golden.jsonl"
    pairs.write_text(
        '{"question": "q1", "reference_answer": "a1"}\n{"question": "q2", \n["a list"]\n', encoding="utf-8"
    )
    result = runner.invoke(app, ["judge", "calibrate", "--pairwise", str(pairs), "--judge-model", "smollm2"])
    assert result.exit_code == 2, result.output
    output = " ".join(result.output.split())
    assert f"{pairs}:2: invalid JSON" in output and f"{pairs}:3: each row must be an object" in output
    missing = runner.invoke(app, ["judge", "calibrate", "--pairwise", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_calibration_needs_labels_or_pairs(workspace):
    result = runner.invoke(app, ["judge", "calibrate"])
    assert result.exit_code == 2 and "--labels" in result.output and "--pairwise" in result.output
    budget_alone = runner.invoke(app, ["judge", "calibrate", "--labels", str(LABELS), "--target-width", "0.1"])
    assert budget_alone.exit_code == 2 and "--target-width and --batch go with --collection NAME alone" in " ".join(
        budget_alone.output.split()
    )


def test_calibration_refuses_a_bad_labels_file_naming_the_line(workspace, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({"context": "Wax melts at 63 C.", "statement": "Wax melts.", "label": "supported"})
        + "\n"
        + json.dumps({"context": "Wax melts at 63 C.", "statement": "Wax boils.", "label": "maybe"})
        + "\n"
    )
    result = runner.invoke(app, ["judge", "calibrate", "--labels", str(labels)])
    assert result.exit_code == 2 and f"{labels}:2" in result.output and "'maybe'" in result.output
