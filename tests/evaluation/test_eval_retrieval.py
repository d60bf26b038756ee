"""Retrieval evaluation end to end: the flow, its MLflow batch, the runs commands, the CI gate."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.eval_retrieval import eval_retrieval_flow
from ragassay import tracking
from ragassay.cli.main import app
from ragassay.config import RetrievalEvalConfig
from ragassay.config_errors import parse_config
from ragassay.errors import ConfigError
from ragassay.golden.store import add_from_file
from ragassay.store.schemas import GOLDEN
from ragassay.store.tables import write_table
from ragassay.store.workspace import collection_paths
from tests.conftest import SAMPLE
from tests.helpers import flow_run_outcome, report_of

pytestmark = pytest.mark.flows  # every test here runs flows

runner = CliRunner()
CONFIGURATIONS = [
    {"label": "fulltext", "search_type": "fulltext"},
    {"label": "semantic", "search_type": "semantic"},
    {"label": "hybrid", "search_type": "hybrid", "fusion": {"k": 60}},
]


@pytest.fixture(scope="module")
def evaluated(sample_home):
    """The sample golden set evaluated once under three configurations."""
    add_from_file(sample_home, "sample", SAMPLE / "golden.jsonl")
    config = parse_config(
        RetrievalEvalConfig,
        collections=["sample"],
        configurations=CONFIGURATIONS,
        home=sample_home,
        assertions=["hybrid:recall@5>=0.8"],
    )
    return config, eval_retrieval_flow(config)


def test_report_has_means_for_every_configuration_and_metric(evaluated):
    config, report = evaluated
    assert report.questions == 30 and not report.warnings
    assert set(report.means) == {"fulltext", "semantic", "hybrid"}
    for means in report.means.values():
        assert set(means) == {str(m) for m in config.metrics()} | {"questions_scored"}
        assert means["questions_scored"] == 30
        assert all(0.0 <= value <= 1.0 for name, value in means.items() if name != "questions_scored")
    assert [a.model_dump() for a in report.assertions] == [
        {
            "assertion": "hybrid:recall@5>=0.8",
            "value": report.means["hybrid"]["recall@5"],
            "passed": True,
            "reason": None,
            "configuration": "hybrid",
            "metric": "recall@5",
            "operator": ">=",
            "bound": 0.8,
        }
    ]
    pairs = {(c.configuration_a, c.configuration_b) for c in report.comparisons}
    assert pairs == {("fulltext", "semantic"), ("fulltext", "hybrid"), ("semantic", "hybrid")}


def test_batch_is_one_parent_and_one_child_per_configuration_in_mlflow(evaluated, sample_home):
    config, report = evaluated
    runs = tracking.find_runs(sample_home, batch_id=report.batch_id)
    parents = [r for r in runs if r.data.tags[tracking.TAG_ROLE] == "batch"]
    children = [r for r in runs if r.data.tags[tracking.TAG_ROLE] == "configuration"]
    assert [p.info.run_id for p in parents] == [report.parent_run_id]
    assert {c.data.tags[tracking.TAG_LABEL] for c in children} == {"fulltext", "semantic", "hybrid"}
    hybrid = next(c for c in children if c.data.tags[tracking.TAG_LABEL] == "hybrid")
    assert hybrid.data.tags["mlflow.parentRunId"] == report.parent_run_id
    params = hybrid.data.params
    assert (
        params["config.search_type"] == "hybrid"
        and params["config.fusion.k"] == "60"
        and params["config.rerank"] == "off"
    )
    assert params["golden_size.sample"] == "30" and len(params["golden_digest.sample"]) == 16
    assert params["index_digest.sample"] and params["embedding_model.sample"].startswith("all-MiniLM-L6-v2-int8@")
    assert hybrid.data.metrics["recall_at_5"] == pytest.approx(report.means["hybrid"]["recall@5"])
    assert hybrid.data.metrics["ndcg_at_10"] == pytest.approx(report.means["hybrid"]["ndcg@10"])
    per_question = tracking.download_table(sample_home, hybrid.info.run_id, "per_question")
    assert per_question.height == 30 and per_question["recall@5"].mean() == pytest.approx(
        report.means["hybrid"]["recall@5"]
    )
    run = tracking.download_table(sample_home, hybrid.info.run_id, "run")
    # Each list to the evaluation's max rank (100), here every document of the sample.
    documents = sum(1 for path in (SAMPLE / "corpus").rglob("*") if path.is_file())
    assert run.group_by("query_id").agg(pl.len())["len"].max() == min(config.depth, documents)
    assert tracking.download_table(sample_home, report.parent_run_id, "comparisons").height == len(report.comparisons)


def test_runs_commands_list_show_and_compare_the_batch(evaluated, sample_home, monkeypatch):
    _, report = evaluated
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    listed = json.loads(runner.invoke(app, ["runs", "list", "--batch", report.batch_id, "--json"]).stdout)
    assert len(listed) == 4 and {r["kind"] for r in listed} == {"retrieval"}
    by_collection = json.loads(runner.invoke(app, ["runs", "list", "-c", "sample", "--json"]).stdout)
    assert {r["run_id"] for r in listed} <= {r["run_id"] for r in by_collection}
    shown = json.loads(runner.invoke(app, ["runs", "show", report.run_ids["semantic"], "--json"]).stdout)
    assert shown["configuration"] == "semantic" and shown["params"]["config.search_type"] == "semantic"
    # Each question's values, and where their Parquet table is (issue 58, case 8).
    arguments = ["runs", "show", report.run_ids["semantic"], "--questions"]
    questions = json.loads(runner.invoke(app, [*arguments, "--json"]).stdout)
    stored = tracking.download_table(sample_home, report.run_ids["semantic"], "per_question")
    assert questions["questions"] == stored.to_dicts() and len(questions["questions"]) == 30
    assert questions["questions_table"].endswith("/machine/per_question.parquet")
    human = runner.invoke(app, arguments, env={"COLUMNS": "400"})
    assert human.exit_code == 0 and "30 questions" in human.stdout and questions["questions_table"] in human.stdout
    parent = runner.invoke(app, ["runs", "show", report.parent_run_id, "--questions"])
    assert parent.exit_code == 2 and "--questions needs a configuration's run" in parent.output
    compared = runner.invoke(app, ["runs", "compare", report.batch_id, "--json"])
    assert compared.exit_code == 0
    payload = json.loads(compared.stdout)
    assert payload["means"]["fulltext"]["mrr"] == pytest.approx(report.means["fulltext"]["mrr"])
    assert len(payload["comparisons"]) == len(report.comparisons)
    human = runner.invoke(app, ["runs", "compare", report.batch_id])
    assert "paired differences" in human.stdout
    # Each pair is named whole on a row of its own (b - a) above its metrics.
    first = report.comparisons[0]
    assert f"{first.configuration_b} - {first.configuration_a}" in human.stdout
    assert runner.invoke(app, ["runs", "show", "0" * 32]).exit_code == 2


def test_a_failed_gate_exits_1_and_names_the_bound(sample_home, monkeypatch):
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    result = runner.invoke(
        app,
        [
            "eval",
            "retrieval",
            "-c",
            "sample",
            "--mode",
            "fulltext",
            "--max-questions",
            "5",
            "--assert",
            "fulltext:recall@1>=1.01",
            "--assert",
            "fulltext:mrr>=0",
        ],
    )
    assert result.exit_code == 1
    assert "assertion failed: fulltext:recall@1>=1.01" in result.stderr
    assert "fulltext:mrr>=0" not in result.stderr
    assert "batch" in result.stdout

    # Everything is logged, and the verdict is where users look: MLflow's parent run (tag, name,
    # assertions.json), the configuration's run, and the Prefect flow run, which ended Failed.
    [parent] = [
        r for r in tracking.find_runs(sample_home, role="batch") if r.data.tags[tracking.TAG_KIND] == "retrieval"
    ][:1]
    assert parent.info.status == "FAILED" and parent.data.tags[tracking.TAG_VERDICT] == "failed"
    assert parent.info.run_name.startswith("failed: retrieval-")
    stored = tracking.client(sample_home).download_artifacts(parent.info.run_id, tracking.ASSERTIONS_ARTIFACT)
    rows = json.loads(Path(stored).read_text())
    recall = tracking.find_runs(sample_home, batch_id=parent.data.tags[tracking.TAG_BATCH], role="configuration")[0]
    measured = recall.data.metrics["recall_at_1"]
    expected = [
        {
            "assertion": "fulltext:recall@1>=1.01",
            "configuration": "fulltext",
            "metric": "recall@1",
            "operator": "at least",
            "bound": 1.01,
            "value": round(measured, 4),
            "outcome": "failed",
            "reason": None,
        },
        {
            "assertion": "fulltext:mrr>=0",
            "configuration": "fulltext",
            "metric": "mrr",
            "operator": "at least",
            "bound": 0.0,
            "value": recall.data.metrics["mrr"],
            "outcome": "passed",
            "reason": None,
        },
    ]
    assert rows == {"verdict": "failed", "assertions": expected}
    assert recall.data.tags[tracking.TAG_VERDICT] == "failed"
    # Every mean has its 95% interval beside it.
    assert recall.data.metrics["lo/recall_at_1"] <= measured <= recall.data.metrics["hi/recall_at_1"]
    assert {f"lo/{m}" for m in ("ndcg_at_10", "mrr", "hit_rate_at_5")} <= set(recall.data.metrics)

    state, tables = flow_run_outcome(parent.data.tags[tracking.TAG_PREFECT_FLOW_RUN])
    assert state.type.value == "FAILED"
    assert f"1 of 2 assertions failed: fulltext:recall@1>=1.01 (measured {measured:.4f})" in state.message
    assert tables["retrieval-sample-assertions"] == expected
    assert {row["metric"] for row in tables["retrieval-sample-metrics"]} >= {"recall@1", "mrr"}


@pytest.mark.parametrize(
    ("file_text", "message"),
    [
        (
            "- {label: a, search_type: fulltext, serch_depth: 5}",
            "unknown key; allowed keys: content_types, depth, followup_query, fusion, label, lexical_unit, path_glob, rerank, rerank_candidates, rerank_model, rewrite_model, search_type",
        ),
        ("- {label: a, search_type: vector}", "'fulltext', 'semantic' or 'hybrid'"),
        ("- {label: a, search_type: hybrid, rerank: always}", "rerank: Input should be 'off' or 'llm'"),
        ("- {label: a, search_type: hybrid, fusion: {method: borda}}", "fusion.method"),
        ("{configurations: [{label: a, search_type: fulltext}], ks: [0]}", "ks"),
        ("- {label: a, search_type: fulltext}\n- {label: a, search_type: hybrid}", "repeated: a"),
    ],
)
def test_bad_configurations_fail_before_any_work_naming_the_key(sample_home, monkeypatch, tmp_path, file_text, message):
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    before = len(tracking.find_runs(sample_home))
    path = tmp_path / "configs.yaml"
    path.write_text(file_text, encoding="utf-8")
    result = runner.invoke(app, ["eval", "retrieval", "-c", "sample", "--configs", str(path)])
    assert result.exit_code == 2
    assert message in result.output
    assert len(tracking.find_runs(sample_home)) == before


def test_an_assertion_on_an_unknown_label_or_deep_cutoff_is_a_config_error(sample_home):
    with pytest.raises(ConfigError, match="labels: a"):
        parse_config(
            RetrievalEvalConfig,
            collections=["sample"],
            configurations=[{"label": "a", "search_type": "fulltext"}],
            assertions=["b:mrr>=1"],
        )
    with pytest.raises(ConfigError, match="max\\(ks\\) = 10"):
        parse_config(
            RetrievalEvalConfig,
            collections=["sample"],
            configurations=[{"label": "a", "search_type": "fulltext"}],
            assertions=["a:recall@20>=1"],
        )


def test_questions_without_expected_documents_are_excluded_with_a_warning(home, tmp_path):
    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay.config import IndexConfig, IngestConfig

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "wax.md").write_text("Beeswax melts at 63 degrees.", encoding="utf-8")
    ingest_flow(IngestConfig(collection="bees", paths=(docs,), home=home))
    index_flow(IndexConfig(collection="bees", home=home))
    rows = pl.DataFrame(
        {
            "entry_id": ["ok", "empty", "gone"],
            "question": ["When does wax melt?", "Orphan question?", "Where is the smoker?"],
            "expected_document_ids": [["wax.md"], [], ["smoker.md"]],
            "relevance": [[1], [], [1]],
            "origin": ["manual"] * 3,
        }
    )
    golden = rows.with_columns(
        [pl.lit(None, dtype=dtype).alias(name) for name, dtype in GOLDEN.schema.items() if name not in rows.columns]
    )
    write_table(golden, collection_paths(home, "bees").golden, GOLDEN)
    config = parse_config(
        RetrievalEvalConfig,
        collections=["bees"],
        configurations=[{"label": "lex", "search_type": "fulltext"}],
        home=home,
    )
    report = eval_retrieval_flow(config)
    assert report.questions == 2
    assert any("bees/empty: no expected documents" in w.text() for w in report.warnings)
    assert any(
        "bees/gone: expected documents no longer in the collection: smoker.md" in w.text() for w in report.warnings
    )
    assert report.means["lex"]["recall@1"] == 0.5, "the question whose document is gone still counts, at 0"


def test_the_batch_parent_shows_metrics_pictures_and_previewable_tables(evaluated, sample_home):
    _, report = evaluated
    mlflow_client = tracking.client(sample_home)
    parent = mlflow_client.get_run(report.parent_run_id)
    assert parent.data.metrics["retrieval/hybrid/recall_at_5"] == pytest.approx(report.means["hybrid"]["recall@5"])
    assert parent.data.tags["mlflow.source.name"] == "ragassay eval retrieval" and parent.data.tags["mlflow.user"]
    assert parent.data.tags[tracking.TAG_PREFECT_FLOW_RUN], "the Prefect flow run that made it"
    artifacts = {
        a.path
        for folder in (None, "plots", "machine")
        for a in mlflow_client.list_artifacts(report.parent_run_id, folder)
    }
    # What a person previews (JSON tables) at the top; the Parquet copies for programs in machine/.
    assert not any(path.endswith(".parquet") for path in artifacts if "/" not in path)
    assert {
        "machine/comparisons.parquet",
        "comparisons.json",
        "intervals.json",
        "machine/intervals.parquet",
        "plots/retrieval_metrics.png",
        "plots/retrieval_recall_at_k.png",
    } <= artifacts
    fulltext = mlflow_client.get_run(report.run_ids["fulltext"])
    assert fulltext.info.run_name == "retrieval/fulltext" and fulltext.data.tags[tracking.TAG_BATCH] == report.batch_id
    assert not any(
        key.startswith(("config.fusion", "config.rerank_model", "config.rerank_candidates"))
        for key in fulltext.data.params
    )
    for row in report.intervals:
        assert row.ci_low <= row.mean <= row.ci_high and row.scored == 30
    # Each child run lasts as long as its searching (it is logged after it), and has its own
    # description: what it is, its means with their intervals.
    batch_run = mlflow_client.get_run(report.parent_run_id).info
    assert batch_run.start_time == fulltext.info.start_time < fulltext.info.end_time <= batch_run.end_time
    description = fulltext.data.tags[tracking.DESCRIPTION_TAG]
    [recall] = [r for r in report.intervals if r.configuration == "fulltext" and r.metric == "recall@5"]
    assert description.startswith(f"**retrieval/fulltext: configuration fulltext of retrieval batch {report.batch_id}")
    assert f"| recall@5 | {recall.mean:.3f} [{recall.ci_low:.3f}, {recall.ci_high:.3f}], 30 scored |" in (description)


@pytest.mark.slow
def test_the_regression_gate_fails_a_significant_drop_and_passes_noise(evaluated, sample_home, monkeypatch):
    _, baseline = evaluated
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    # The candidate: the same labels, but hybrid searches Markdown files only, so most answers are gone.
    worse = [*CONFIGURATIONS[:2], {**CONFIGURATIONS[2], "path_glob": "*.md"}]
    candidate = eval_retrieval_flow(
        parse_config(RetrievalEvalConfig, collections=["sample"], configurations=worse, home=sample_home)
    )

    failed = runner.invoke(
        app,
        [
            "gate",
            "--baseline",
            baseline.batch_id,
            "--candidate",
            candidate.batch_id,
            "--max-drop",
            "recall@5=0.02",
            "--max-drop",
            "fulltext:mrr=0.05",
            "--json",
        ],
    )
    assert failed.exit_code == 1, failed.output
    results = {(r["configuration"], r["metric"]): r for r in json.loads(failed.stdout)["results"]}
    assert set(results) == {
        ("fulltext", "recall@5"),
        ("semantic", "recall@5"),
        ("hybrid", "recall@5"),
        ("fulltext", "mrr"),
    }
    hybrid = results[("hybrid", "recall@5")]
    assert hybrid["failed"] and hybrid["drop"] > 0.02 and hybrid["p_value"] < 0.05 and hybrid["questions"] == 30
    assert hybrid["drop"] == pytest.approx(baseline.means["hybrid"]["recall@5"] - candidate.means["hybrid"]["recall@5"])
    assert not results[("fulltext", "recall@5")]["failed"] and results[("fulltext", "recall@5")]["drop"] == 0.0
    assert "hybrid:recall@5 dropped" in failed.stderr and "fulltext" not in failed.stderr

    passed = runner.invoke(
        app,
        [
            "gate",
            "--baseline",
            baseline.batch_id,
            "--candidate",
            candidate.batch_id,
            "--max-drop",
            "fulltext:recall@5=0.0",
        ],
    )
    assert passed.exit_code == 0, passed.output
    for arguments in (
        ["--max-drop", "faithfulness=0.1"],
        ["--max-drop", "recall5=0.1"],
        ["--max-drop", "dense:mrr=0.1"],
    ):
        unusable = runner.invoke(
            app, ["gate", "--baseline", baseline.batch_id, "--candidate", candidate.batch_id, *arguments]
        )
        assert unusable.exit_code == 2, (arguments, unusable.output)
    unknown = runner.invoke(app, ["gate", "--baseline", "nosuchbatch", "--max-drop", "mrr=0.1"])
    assert unknown.exit_code == 2 and "no batch 'nosuchbatch'" in unknown.output
    # Issue 37 case 8: a misspelled metric is answered with the metrics both batches have; a
    # negative bound with what a bound must be.
    gate = ["gate", "--baseline", baseline.batch_id, "--candidate", candidate.batch_id]
    misspelled = runner.invoke(app, [*gate, "--max-drop", "recal@5=0.1"])
    assert misspelled.exit_code == 2 and "their metrics:" in misspelled.output and "recall@5" in misspelled.output
    negative = runner.invoke(app, [*gate, "--max-drop", "recall@5=-0.1"])
    assert negative.exit_code == 2 and "must be >= 0" in negative.output, negative.output
    # Issue 37 case 7: with the baseline's artifacts gone, the gate names the missing folder.
    folders = [
        Path(run.info.artifact_uri.removeprefix("file://"))
        for run in tracking.find_runs(sample_home, batch_id=baseline.batch_id, role="configuration")
    ]
    for folder in folders:
        folder.rename(folder.with_name(folder.name + ".aside"))
    try:
        missing = runner.invoke(app, [*gate, "--max-drop", "recall@5=0.1"])
    finally:
        for folder in folders:
            folder.with_name(folder.name + ".aside").rename(folder)
    assert missing.exit_code == 2, missing.output
    assert "which does not exist" in missing.output and any(
        str(folder) in missing.output.replace("\n", "") for folder in folders
    )


def test_the_gate_compares_only_finished_batches_and_runs_list_shows_each_status(evaluated, sample_home, monkeypatch):
    _, baseline = evaluated
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    finished = report_of(
        eval_retrieval_flow,
        parse_config(RetrievalEvalConfig, collections=["sample"], configurations=CONFIGURATIONS[:1], home=sample_home),
    )
    # What a process killed while it logged leaves: the newest batch's parent run still RUNNING.
    stopped = tracking.open_batch(sample_home, ["sample"], "retrieval", {}, {})

    chosen = runner.invoke(
        app, ["gate", "--baseline", baseline.batch_id, "--max-drop", "fulltext:recall@5=1", "--json"]
    )
    assert chosen.exit_code == 0, chosen.output
    assert json.loads(chosen.stdout)["candidate"] == finished.batch_id, "never the batch that did not finish"
    for named in (["--candidate", stopped.batch_id], ["--baseline", stopped.batch_id]):
        arguments = ["gate", "--baseline", baseline.batch_id, "--max-drop", "fulltext:recall@5=1", *named]
        refused = runner.invoke(app, arguments)
        assert refused.exit_code == 2 and f"batch {stopped.batch_id} is RUNNING, not finished" in refused.output

    listed = runner.invoke(app, ["runs", "list", "-c", "sample"])
    assert f"batch {stopped.batch_id}  (batch)" in listed.stdout
    line = next(line for line in listed.stdout.splitlines() if stopped.batch_id in line)
    assert "[running, no verdict]" in line
    line = next(line for line in listed.stdout.splitlines() if finished.batch_id in line and "(batch)" in line)
    assert "[finished, none]" in line
    rows = json.loads(runner.invoke(app, ["runs", "list", "--batch", baseline.batch_id, "--json"]).stdout)
    parent = next(row for row in rows if row["role"] == "batch")
    assert (parent["status"], parent["verdict"]) == ("FINISHED", "passed")
