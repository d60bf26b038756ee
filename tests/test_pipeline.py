"""The pipeline flow on the real engine: every stage as a subflow in one MLflow batch, a re-run
served from the completion cache, one changed document redoing only what depends on it, a stage
without its inputs naming the stage to run, and the pipeline file as people write it."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from ragassay.cli.main import app
from tests.conftest import REPO, SAMPLE

pytestmark = pytest.mark.flows  # every test here runs flows

SMOLLM2 = {"backend": "smollm2"}


def pipeline_settings(corpus) -> dict:
    """The sample pipeline, small: SmolLM2 everywhere, one generated question, one golden and one
    unanswerable question answered under one configuration from two sources, in at most 128 tokens."""
    unanswerable = corpus.parent / "unanswerable.jsonl"
    unanswerable.write_text((SAMPLE / "unanswerable.jsonl").read_text().splitlines(keepends=True)[0])
    return {
        "collection": "sample",
        "ingest": {"paths": [str(corpus)]},
        "golden": {
            "file": [str(SAMPLE / "golden.jsonl"), str(SAMPLE / "dialogues.jsonl")],
            "generate": True,
            "count": 1,
            "seed": 3,
            "model": SMOLLM2,
            "max_attempts_factor": 2,
        },
        "retrieval": {
            "configurations": [
                {"label": "fulltext", "search_type": "fulltext"},
                {"label": "hybrid", "search_type": "hybrid"},
            ],
            "assertions": ["hybrid:recall@5>=0.8", "hybrid:followup.recall@5>=0.7"],
        },
        "answers": {
            "unanswerable": str(unanswerable),
            "max_questions": 1,
            "max_dialogues": 0,
            "pairwise": False,
            "configurations": [{"label": "hybrid", "search_type": "hybrid", "k": 2, "max_answer_tokens": 128}],
            "assertions": ["hybrid:false_refusal_rate<=1"],
        },
        "judge": SMOLLM2,
    }


def small_pipeline_file(folder, stages: str):
    """A pipeline file over the sample corpus and its golden questions (no generation), with the
    retrieval and answer sections (and any other keys) written in `stages`."""
    written = folder / "pipeline.yaml"
    written.write_text(
        f"collection: sample\ningest: {{paths: [{SAMPLE / 'corpus'}]}}\n"
        f"golden: {{file: {SAMPLE / 'golden.jsonl'}, generate: false}}\n" + stages,
        encoding="utf-8",
    )
    return written


@pytest.mark.slow
def test_pipeline_runs_every_stage_then_reruns_from_cache(home, tmp_path):
    from flows.pipeline import pipeline_flow
    from ragassay import tracking
    from ragassay.config import PipelineConfig
    from ragassay.config_errors import parse_config

    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE / "corpus", corpus)
    config = parse_config(PipelineConfig, **pipeline_settings(corpus))

    first = pipeline_flow(config)
    assert first.stages == ["ingest", "index", "golden", "retrieval", "answers"]
    documents = first.ingest.counts["ingested"]
    assert (
        documents == len([p for p in corpus.rglob("*") if p.is_file()]) and first.index.embedded == first.index.chunks
    )
    assert first.golden.file.added == 30 and first.golden.totals.candidates >= 1
    assert first.golden.file.dialogues_added == first.golden.file.dialogues == 12
    assert first.retrieval.means["hybrid"]["recall@5"] >= 0.8 and all(a.passed for a in first.assertions)
    asked = first.answers.metrics["hybrid"]
    assert asked["answer_model_calls"] >= 1 and asked["answer_model_cached_calls"] == 0

    # MLflow: one batch; its parent carries the summary, its children the stages and configurations.
    runs = tracking.find_runs(home, batch_id=first.batch_id)
    parent = next(r for r in runs if r.data.tags[tracking.TAG_ROLE] == "batch")
    assert parent.data.tags[tracking.TAG_KIND] == "pipeline" and parent.info.status == "FINISHED"
    assert parent.data.metrics["retrieval/hybrid/recall_at_5"] == pytest.approx(
        first.retrieval.means["hybrid"]["recall@5"]
    )
    assert parent.data.metrics["golden/size"] == first.golden.totals.golden_size
    names = sorted(r.info.run_name for r in runs if r.data.tags[tracking.TAG_ROLE] == "configuration")
    assert names == sorted(
        (
            "ingest/sample",
            "index/sample",
            "golden/generate-seed3",
            "retrieval/fulltext",
            "retrieval/hybrid",
            "answers/hybrid",
        )
    )
    # The batch's view of MLflow's runs list: the evaluation stages' groups open, retrieval's
    # headline metrics first, then the answers'; the report links it.
    view = json.loads(
        tracking.client(home).get_experiment(parent.info.experiment_id).tags[tracking.VIEW_TAG_PREFIX + first.batch_id]
    )
    assert set(view["groupsExpanded"]) >= {f"tag.{tracking.TAG_KIND}.{kind}" for kind in ("retrieval", "answers")}
    assert (
        view["selectedColumns"][0] == f"tags.`{tracking.TAG_VERDICT}`"
        and view["selectedColumns"][1].startswith("metrics.`recall_at_")
        and "metrics.`faithfulness`" in view["selectedColumns"]
    )
    assert first.runs_view_url and f"]({first.runs_view_url})" in parent.data.tags[tracking.DESCRIPTION_TAG]
    # Only the evaluation stages' runs: an ingest or index group would be a row of "- (average)".
    shown = tracking.client(home).search_runs([parent.info.experiment_id], view["searchFilter"])
    assert sorted(run.info.run_name for run in shown) == ["answers/hybrid", "retrieval/fulltext", "retrieval/hybrid"]
    comparisons = tracking.download_table(home, parent.info.run_id, "retrieval/comparisons")
    assert comparisons is not None and set(comparisons["metric"]) >= {"recall@5", "mrr"}
    # `runs compare` on a pipeline's batch: both evaluation stages, the answers' paired differences too.
    compared = json.loads(CliRunner().invoke(app, ["runs", "compare", first.batch_id, "--json"]).stdout)
    assert compared["means"].keys() == {"fulltext", "hybrid"} and compared["answers"].keys() == {"hybrid"}
    assert compared["answer_comparisons"] == [c.model_dump() for c in first.answers.comparisons]
    assert compared["pairwise"] == [], "pairwise comparison is off here"

    # The report, on the Prefect flow run and as the MLflow batch's description: every evaluation
    # stage's headline table with intervals, and who is ahead; the flow run named after the batch.
    from prefect import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
        FlowRunFilter,
        FlowRunFilterTags,
    )

    flow_run_id = parent.data.tags[tracking.TAG_PREFECT_FLOW_RUN]
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(flow_run_id)
        [artifact] = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["pipeline-sample-report"]),
                flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
            )
        )
        stages = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=["pipeline", f"batch:{first.batch_id}"]))
        )
    assert flow_run.name == f"pipeline-sample-{first.batch_id}"
    # Its stages' subflows are named after what they did (the evaluations after their batch too)
    # and carry the pipeline's tags, so Prefect's runs list finds them by batch.
    assert sorted(run.name for run in stages) == sorted(
        [
            "ingest-sample",
            "index-sample",
            f"generation-sample-{first.batch_id}",
            f"retrieval-sample-{first.batch_id}",
            f"answers-sample-{first.batch_id}",
        ]
    )
    assert all({"ragassay", "collection:sample"} <= set(run.tags) for run in stages)
    assert {f"batch:{first.batch_id}", "configuration:fulltext", "configuration:hybrid"} <= set(flow_run.tags)
    report = artifact.data
    assert report == parent.data.tags[tracking.DESCRIPTION_TAG]
    assert "## Retrieval" in report and "## Answers" in report and first.batch_id in report
    recall = next(r for r in first.retrieval.intervals if (r.configuration, r.metric) == ("hybrid", "recall@5"))
    assert "| recall@5 | " in report
    assert f"{recall.mean:.3f} [{recall.ci_low:.3f}, {recall.ci_high:.3f}], {recall.scored} scored" in report
    assert "] (" not in report, "MLflow's Markdown would read `[a, b] (n)` as a link"
    assert "- recall@5: " in report and "- false_refusal_rate: hybrid only" in report
    # One report: each stage's sections as the stage's own report has them (paired differences,
    # the judge's error, pairwise tallies where asked), one heading level down.
    from ragassay.evaluation.reports import answer_sections, retrieval_sections, subsections
    from ragassay.pipeline_stages import retrieval_headline

    assert "\n".join(subsections(answer_sections(first.answers))) in report
    assert "\n".join(subsections(retrieval_sections(first.retrieval, retrieval_headline(first.retrieval)))) in report
    assert "### Paired differences" in report and "### Who is ahead" in report
    # The dialogues' follow-ups against their first turns, for every retrieval configuration.
    assert "### First turns and follow-ups (12 dialogues)" in report
    assert {row.configuration for row in first.retrieval.followup_gaps} == {"fulltext", "hybrid"}

    # Unchanged: nothing is extracted into new documents, embedded, generated, answered or judged again.
    second = pipeline_flow(config)
    assert second.batch_id != first.batch_id
    assert second.ingest.counts["unchanged"] == documents and second.index.embedded == 0
    assert second.golden.file.added == 0 and second.golden.file.already_stored == 30 + 12
    assert second.golden.generation.attempted == 0, "the seed already produced its count"
    cached = second.answers.metrics["hybrid"]
    assert cached["answer_model_calls"] == 0 and cached["judge_calls"] == 0
    assert cached["answer_model_cached_calls"] == asked["answer_model_calls"] + asked["answer_model_cached_calls"]
    for name in ("faithfulness", "refusal_recall", "false_refusal_rate", "answer_relevancy"):
        assert cached.get(name) == asked.get(name), name
    assert "from cache" in second.cache["answers"]

    # One document changed: it alone is re-ingested and re-embedded. (The later stages, checked
    # above, are left out of this run.)
    changed = corpus / "guides" / "overview.md"
    changed.write_text(
        changed.read_text(encoding="utf-8") + "\n\nA note added for the test: hives need shade at noon.\n",
        encoding="utf-8",
    )
    only_ingest_and_index = {
        "golden": config.golden.model_copy(update={"file": None, "generate": False}),
        **{stage: getattr(config, stage).model_copy(update={"enabled": False}) for stage in ("retrieval", "answers")},
    }
    third = pipeline_flow(config.model_copy(update=only_ingest_and_index))
    assert third.stages == ["ingest", "index"]
    assert third.ingest.counts["replaced"] == 1 and third.ingest.counts["unchanged"] == documents - 1
    assert 0 < third.index.embedded < third.index.chunks


def test_a_stage_without_its_inputs_names_the_stage_to_run(home):
    from flows.pipeline import StageFailed, pipeline_flow
    from ragassay import tracking
    from ragassay.config import PipelineConfig
    from ragassay.config_errors import parse_config

    config = parse_config(PipelineConfig, collection="sample", ingest={"enabled": False}, golden={"generate": False})
    with pytest.raises(StageFailed, match=r"stage index failed: .*run the ingest stage"):
        pipeline_flow(config)
    parent = tracking.find_runs(home, role="batch")[0]
    assert parent.info.status == "FAILED" and parent.data.tags["ragassay.failed_stage"] == "index"


@pytest.mark.slow
def test_a_failed_bound_fails_the_pipeline_run_after_everything_is_logged(home, tmp_path, monkeypatch):
    """`ragassay run` exits 1 as before; the Prefect flow run ends Failed naming the bound and its
    measured value, and MLflow's batch, its runs and the flow run's artifacts are all there."""
    from ragassay import tracking
    from tests.helpers import flow_run_outcome

    monkeypatch.setenv("RAGASSAY_HOME", str(home))
    written = small_pipeline_file(
        tmp_path,
        "retrieval: {configurations: [{label: fulltext, search_type: fulltext}], "
        "assertions: ['fulltext:recall@1<=0.01', 'fulltext:mrr>=0.5']}\n"
        "answers: {enabled: false}\n",
    )
    result = CliRunner().invoke(app, ["run", "--config", str(written)])
    assert result.exit_code == 1, result.output
    assert "assertion failed: fulltext:recall@1<=0.01" in result.stderr
    assert "generation: off in this run" in result.stdout, "not '0 accepted of 0 candidates'"
    [parent] = tracking.find_runs(home, role="batch")
    assert parent.info.status == "FAILED" and parent.data.tags[tracking.TAG_VERDICT] == "failed"
    children = tracking.find_runs(home, batch_id=parent.data.tags[tracking.TAG_BATCH], role="configuration")
    assert {run.info.run_name for run in children} == {"ingest/sample", "index/sample", "retrieval/fulltext"}
    measured = next(run for run in children if run.info.run_name == "retrieval/fulltext").data.metrics["recall_at_1"]
    state, tables = flow_run_outcome(parent.data.tags[tracking.TAG_PREFECT_FLOW_RUN])
    assert state.type.value == "FAILED"
    assert state.message == f"1 of 2 assertions failed: fulltext:recall@1<=0.01 (measured {measured:.4f})"
    assert [(row["assertion"], row["outcome"]) for row in tables["pipeline-sample-assertions"]] == [
        ("fulltext:recall@1<=0.01", "failed"),
        ("fulltext:mrr>=0.5", "passed"),
    ]
    recall = next(row for row in tables["pipeline-sample-metrics"] if row["metric"] == "recall@1")
    assert recall["stage"] == "retrieval" and recall["mean"] == pytest.approx(measured, abs=5e-5)
    assert "generation: off in this run" in tables["pipeline-sample-report"]


def test_the_pipeline_file_is_read_as_written_and_checked_before_any_work(home, tmp_path):
    runner = CliRunner()
    written = tmp_path / "pipeline.yaml"
    written.write_text(
        "collection: sample\n"
        "ingest: {paths: [data/sample/corpus]}\n"
        "answers:\n  configurations:\n    - {label: plain, search_type: hybrid, groundedness: off, rerank: off}\n",
        encoding="utf-8",
    )
    from ragassay.cli.common import load_config_file
    from ragassay.config import PipelineConfig
    from ragassay.config_errors import parse_config

    config = parse_config(PipelineConfig, **load_config_file(written))
    assert config.answer_config().configurations[0].groundedness == "off"

    # Where the stages' tasks run, and how large they are, reach each stage's own config.
    written.write_text(
        "collection: sample\n"
        "ingest: {paths: [data/sample/corpus], files_per_task: 7}\nindex: {chunks_per_task: 9}\nanswers: {questions_per_task: 3}\n"
        "task_runner: {kind: dask, workers: 2}\n",
        encoding="utf-8",
    )
    config = parse_config(PipelineConfig, **load_config_file(written))
    stages = (config.ingest_config(), config.index_config(), config.retrieval_config(), config.answer_config())
    assert [stage.task_runner.workers for stage in stages] == [2, 2, 2, 2]
    assert (stages[0].files_per_task, stages[1].chunks_per_task, stages[3].questions_per_task) == (7, 9, 3)

    written.write_text("collection: sample\ningest: {paths: [data/sample/corpus], chunk_size: 500}\n", encoding="utf-8")
    refused = runner.invoke(app, ["run", "--config", str(written)])
    assert refused.exit_code == 2
    assert "ingest.chunk_size: unknown key; allowed keys: chunking, enabled, files_per_task, paths" in refused.output
    assert not home.exists(), "nothing ran"

    written.write_text(
        "collection: sample\ningest: {paths: [data/sample/corpus]}\nretrieval: {assertions: ['dense:mrr>=0.5']}\n"
    )
    refused = runner.invoke(app, ["run", "--config", str(written)])
    assert (
        refused.exit_code == 2 and "names configuration 'dense'; labels: fulltext, semantic, hybrid" in refused.output
    )


def test_the_sample_pipeline_file_and_prefect_yaml_are_valid(home):
    """The README's main command and the deployment validate against the config they feed."""
    import yaml

    from ragassay.cli.common import load_config_file
    from ragassay.config import PipelineConfig
    from ragassay.config_errors import parse_config

    sample = parse_config(PipelineConfig, **load_config_file(SAMPLE / "pipeline.yaml"))
    assert sample.enabled_stages() == ["ingest", "index", "golden", "retrieval", "answers"]
    deployments = yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]
    pipeline = next(d for d in deployments if d["entrypoint"] == "flows/pipeline.py:pipeline_flow")
    assert parse_config(PipelineConfig, **pipeline["parameters"]["config"]).collection == "sample"
    assert json.dumps(pipeline["schedules"][0]) == json.dumps({"cron": "0 2 * * *", "timezone": "UTC"})
    from prefect.utilities.templating import apply_values

    from ragassay.config import RetrievalEvalConfig

    nightly = next(d for d in deployments if d["name"] == "prod-rag-nightly")
    # As `prefect deploy` leaves it after filling its own {{ }} placeholders.
    settings = apply_values(nightly["parameters"]["config"], {}, remove_notset=True)
    prod = parse_config(RetrievalEvalConfig, **settings).configurations[1]
    assert prod.system.body == {"query": "[[question]]", "top_k": 10}


def test_each_golden_file_of_a_list_is_checked_before_the_stage(home, tmp_path):
    from ragassay.config import PipelineConfig
    from ragassay.config_errors import parse_config
    from ragassay.pipeline_stages import missing_inputs
    from tests.helpers import build_collection

    build_collection(home, "sample", (SAMPLE / "corpus",))
    missing = tmp_path / "gone.jsonl"
    config = parse_config(
        PipelineConfig,
        collection="sample",
        home=home,
        ingest={"enabled": False},
        golden={"file": [str(SAMPLE / "dialogues.jsonl"), str(missing)]},
    )
    assert config.golden.files == (SAMPLE / "dialogues.jsonl", missing)
    assert missing_inputs(config, "golden") == f"golden.file {missing} does not exist"
    # A golden set of dialogues alone is a golden set: retrieval and answers can start.
    from ragassay.golden.store import add_from_file

    assert missing_inputs(config, "retrieval") is not None
    add_from_file(home, "sample", SAMPLE / "dialogues.jsonl")
    assert missing_inputs(config, "retrieval") is None


@pytest.mark.slow
def test_ragassay_run_shows_each_stage_as_it_ends_then_the_whole_summary(home, tmp_path, monkeypatch):
    """The retrieval table is printed when retrieval ends, before the answer stage starts; the
    last stage's results come with the summary, which is whole as before; --json stays one document."""
    from flows.finished import listening_to_stages

    monkeypatch.setenv("RAGASSAY_HOME", str(home))
    written = small_pipeline_file(
        tmp_path,
        "retrieval: {configurations: [{label: fulltext, search_type: fulltext}]}\n"
        "answers: {max_questions: 1, max_dialogues: 0, pairwise: false, configurations: "
        "[{label: hybrid, search_type: hybrid, k: 2, max_answer_tokens: 64, model: {backend: smollm2}}]}\n"
        "judge: {backend: smollm2}\n",
    )
    ended: list[str] = []
    with listening_to_stages(lambda stage, report: ended.append(stage)):
        result = CliRunner().invoke(app, ["run", "--config", str(written)])
    assert result.exit_code == 0, result.output
    assert ended == ["ingest", "index", "golden", "retrieval", "answers"]
    shown = result.stdout
    order = [shown.index(text) for text in ("ingest finished", "retrieval finished", "retrieval: ", "summary")]
    assert order == sorted(order), "each stage as it ends, then the summary"
    assert "answers finished" not in shown, "the last stage's results are the summary's"
    summary = shown[shown.index("summary") :]
    assert "retrieval: " in summary and "answers: 1 answerable" in summary, "the summary is whole"
    assert shown.count("retrieval: ") == 2 * summary.count("retrieval: ")

    as_json = CliRunner().invoke(app, ["run", "--config", str(written), "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["stages"][-1] == "answers"
