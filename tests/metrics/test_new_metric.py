"""Two answer metrics added from one module outside the library (tests/plugins/toy_metrics.py),
with no other file touched: each is in the per-question table, the means with their intervals,
`--assert`, `ragassay gate --max-drop`, the MLflow runs, the batch's Markdown report and each
question's trace, as the built-in metrics are. Real models: SmolLM2 answers and judges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLE

pytestmark = [pytest.mark.flows, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
ADDED = ("brevity", "lead_supported")


def test_metrics_declared_in_a_plugin_module_reach_every_table_report_gate_and_trace(sample_home, tmp_path):
    from ragassay import tracking
    from ragassay.golden.store import add_from_file

    add_from_file(sample_home, "sample", SAMPLE / "golden.jsonl")
    configs = tmp_path / "configs.json"
    hybrid = {
        "label": "hybrid",
        "search_type": "hybrid",
        "k": 2,
        "max_answer_tokens": 64,
        "model": {"backend": "smollm2"},
    }
    configs.write_text(json.dumps({"configurations": [hybrid]}))
    environment = {
        **os.environ,
        "RAGASSAY_HOME": str(sample_home),
        "RAGASSAY_PLUGINS": "tests.plugins.toy_metrics",
        "PYTHONPATH": str(REPO),
    }
    ragassay = str(Path(sys.executable).parent / "ragassay")
    evaluate = [ragassay, "eval", "answers", "-c", "sample", "--configs", str(configs), "--max-questions", "2"]
    evaluate += ["--judge-backend", "smollm2", "--no-pairwise", "--assert", "hybrid:brevity>=0", "--json"]
    batches = []
    # A baseline with every metric, and a candidate for the gate that asks for brevity alone (its
    # answers from the call cache): it pays for no judge call.
    for chosen in ([], ["--metrics", "brevity"]):
        finished = subprocess.run([*evaluate, *chosen], capture_output=True, text=True, env=environment, cwd=REPO)
        assert finished.returncode == 0, finished.stderr[-3000:]
        batches.append(json.loads(finished.stdout))
    report, brief = batches
    assert brief["metrics"]["hybrid"]["judge_calls"] == 0 and "brevity_scored" in brief["metrics"]["hybrid"]
    assert not any(f"{name}_scored" in brief["metrics"]["hybrid"] for name in ("faithfulness", *ADDED[1:]))
    run_id = report["run_ids"]["hybrid"]
    # The per-question table, and the judgments behind the judged one.
    answers = tracking.download_table(sample_home, run_id, "answers")
    judgments = tracking.download_table(sample_home, run_id, "judgments")
    assert set(ADDED) <= set(answers.columns)
    assert answers["brevity"].to_list() == [1.0 if len(a.split()) <= 40 else 0.0 for a in answers["answer"]]
    with_statements = answers.filter((answers["outcome"] == "answered") & (answers["statements"] > 0))
    assert judgments.filter(judgments["metric"] == "lead_supported").height == with_statements.height
    assert answers["lead_supported"].is_not_null().sum() <= with_statements.height
    # The means with their intervals, and the MLflow run's metrics.
    intervals = {row["metric"]: row for row in report["intervals"] if row["configuration"] == "hybrid"}
    logged = tracking.find_runs(sample_home, report["batch_id"], role="configuration")[0].data.metrics
    for metric in ADDED:
        scored = report["metrics"]["hybrid"][f"{metric}_scored"]
        assert logged[f"{metric}_scored"] == scored == intervals[metric]["scored"]
        if scored:  # lead_supported has none when SmolLM2 declined both questions
            assert intervals[metric]["mean"] == pytest.approx(report["metrics"]["hybrid"][metric])
            assert logged[metric] == pytest.approx(report["metrics"]["hybrid"][metric])
    assert report["metrics"]["hybrid"]["brevity_scored"] == 2
    # --assert bounds it.
    assert [(a["assertion"], a["passed"]) for a in report["assertions"]] == [("hybrid:brevity>=0", True)]
    # The Markdown report in the batch's description names it.
    parent = tracking.client(sample_home).get_run(report["parent_run_id"])
    assert "brevity" in parent.data.tags[tracking.DESCRIPTION_TAG]
    # Each answered question's trace carries both scores.
    traces = tracking.find_traces(sample_home, run_id)
    for trace in traces:
        assessments = {a.name: a for a in trace.info.assessments}
        assert set(ADDED) <= set(assessments)
    # ragassay gate bounds its drop between two batches.
    gate = [ragassay, "gate", "--baseline", report["batch_id"], "--candidate", batches[1]["batch_id"]]
    gated = subprocess.run(
        [*gate, "--max-drop", "hybrid:brevity=0.1", "--json"], capture_output=True, text=True, env=environment, cwd=REPO
    )
    assert gated.returncode == 0, gated.stderr[-3000:]
    assert "brevity" in gated.stdout
