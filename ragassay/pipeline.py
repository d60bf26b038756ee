"""The pipeline's own logic (flows/pipeline.py wires it): whether a stage has what it needs, what
the golden file and generation added up to, and the pipeline's summary as one report and as
Markdown. Pure apart from reading the workspace."""

from __future__ import annotations

import polars as pl
from pydantic import BaseModel

from ragassay.config import PipelineConfig
from ragassay.errors import RagassayError
from ragassay.golden.gate import DISCARD_REASONS
from ragassay.golden.generation import GENERATION_PROMPT_VERSION
from ragassay.golden.store import GoldenChange, load_golden
from ragassay.llm.settings import model_id_of
from ragassay.store.schemas import GENERATION_CANDIDATES
from ragassay.store.tables import read_table_or_empty
from ragassay.store.workspace import collection_paths, read_manifest

# Refusals of a golden-file entry that only mean it is already stored (a re-run of the pipeline).
ALREADY_STORED = ("duplicate_question", "duplicate_id")


class StageInputsMissing(RagassayError):
    """A pipeline stage cannot start: what it needs is not there, and which stage makes it."""


def missing_inputs(config: PipelineConfig, stage: str) -> str | None:
    """Why `stage` cannot start (naming the stage or setting that provides what is missing), or
    None when it can. Checked before the stage runs, so a failure names the cause, not a symptom."""
    paths = collection_paths(config.home, config.collection, must_exist=False)
    switch_on = "switch that stage on in the pipeline file"
    if stage in ("index", "golden", "retrieval", "answers") and not paths.documents.exists():
        return f"collection {config.collection!r} has no documents: run the ingest stage (ingest: {{enabled: true, paths: [...]}}) or `ragassay ingest`"
    if stage in ("golden", "retrieval", "answers") and read_manifest(paths) is None:
        return f"collection {config.collection!r} is not indexed: run the index stage ({switch_on}) or `ragassay index`"
    if stage == "golden" and config.golden.file is not None and not config.golden.file.is_file():
        return f"golden.file {config.golden.file} does not exist"
    if stage in ("retrieval", "answers") and load_golden(paths).height == 0:
        return (
            f"collection {config.collection!r} has an empty golden set: run the golden stage (golden: {{file: ...}} or "
            "{generate: true}) or `ragassay golden add`"
        )
    if stage == "answers" and config.answers.unanswerable is not None and not config.answers.unanswerable.is_file():
        return f"answers.unanswerable {config.answers.unanswerable} does not exist"
    return None


def check_inputs(config: PipelineConfig, stage: str) -> None:
    problem = missing_inputs(config, stage)
    if problem is not None:
        raise StageInputsMissing(f"stage {stage} cannot start: {problem}")


def golden_file_outcome(change: GoldenChange) -> dict:
    """Entries the golden file added, already held, and refused for another reason (those are real
    problems: a document id the collection lacks, a malformed row)."""
    refused = [p for p in change.problems if p["reason"] not in ALREADY_STORED]
    return {
        "added": len(change.added),
        "already_stored": len(change.problems) - len(refused),
        "refused": refused,
        "size": change.size,
    }


def generation_totals(config: PipelineConfig) -> dict:
    """What this seed, model and prompt produced over every run so far (a pipeline re-run adds only
    what is missing, so one run's numbers alone would read as 'nothing happened'): candidates,
    accepted, and discards by reason; and the golden set's size now."""
    paths = collection_paths(config.home, config.collection)
    log = read_table_or_empty(paths.generation_log, GENERATION_CANDIDATES).filter(
        (pl.col("seed") == config.golden.seed)
        & (pl.col("model") == model_id_of(config.golden.model))
        & (pl.col("prompt_version") == GENERATION_PROMPT_VERSION)
    )
    reasons = log.filter(~pl.col("accepted"))["reason"].to_list()
    return {
        "seed": config.golden.seed,
        "candidates": log.height,
        "accepted": int(log["accepted"].sum()) if log.height else 0,
        "discarded": {reason: reasons.count(reason) for reason in DISCARD_REASONS if reason in reasons},
        "golden_size": load_golden(paths).height,
    }


class PipelineReport(BaseModel):
    """What one pipeline run did, stage by stage, and where its results are."""

    collection: str
    batch_id: str
    parent_run_id: str
    stages: list[str]
    stage_seconds: dict[str, float]
    ingest: dict | None = None
    index: dict | None = None
    golden: dict | None = None
    retrieval: dict | None = None
    answers: dict | None = None
    cache: dict[str, str]
    warnings: list[str]
    assertions: list[dict]
    seconds: float
    mlflow_url: str | None
    mlflow_ui_command: str
    prefect_flow_run_id: str | None
    prefect_flow_run_url: str | None


def cache_lines(ingest: dict | None, index: dict | None, golden: dict | None, answers: dict | None) -> dict[str, str]:
    """Per stage, what was served from a cache instead of done again."""
    lines = {}
    if ingest is not None:
        lines["ingest"] = (
            f"{len(ingest['unchanged'])} unchanged documents kept (not extracted again), {len(ingest['ingested']) + len(ingest['replaced'])} (re)ingested"
        )
    if index is not None:
        lines["index"] = f"{index['reused_embeddings']} embeddings from cache, {index['embedded']} computed"
    if golden is not None and golden.get("generation") is not None:
        generation = golden["generation"]
        usage, judge = generation["usage"], generation["judge_usage"]
        lines["golden"] = (
            f"{generation['attempted']} new candidates; model calls {usage['model_calls']:.0f} asked, "
            f"{usage['model_cached_calls'] + judge['judge_cached_calls']:.0f} from cache"
        )
    if answers is not None:
        metrics = answers["metrics"].values()
        asked = sum(m["answer_model_calls"] + m["judge_calls"] for m in metrics)
        cached = sum(m["answer_model_cached_calls"] + m["judge_cached_calls"] for m in metrics)
        lines["answers"] = f"model calls: {asked:.0f} asked, {cached:.0f} from cache"
    return lines


def pipeline_markdown(report: PipelineReport) -> str:
    """The pipeline run's summary for the Prefect UI: stage times, what came from cache, the
    golden set, gates and warnings; the stages' own artifacts hold their tables."""
    lines = [
        f"# Pipeline run on `{report.collection}`",
        "",
        f"MLflow batch [`{report.batch_id}`]({report.mlflow_url})"
        if report.mlflow_url
        else f"MLflow batch `{report.batch_id}` (`{report.mlflow_ui_command}`)",
        "",
        "| stage | seconds | from cache |",
        "|---|---:|---|",
    ]
    lines += [
        f"| {stage} | {report.stage_seconds.get(stage, 0):.1f} | {report.cache.get(stage, '')} |"
        for stage in report.stages
    ]
    if report.golden:
        totals = report.golden["totals"]
        lines += [
            "",
            f"Golden set: {totals['golden_size']} entries; generation (seed {totals['seed']}): {totals['accepted']} accepted of "
            f"{totals['candidates']} candidates"
            + "".join(f", {count} {reason}" for reason, count in totals["discarded"].items()),
        ]
    if report.assertions:
        lines += ["", "## Gates", ""] + [
            f"- `{a['assertion']}`: {'passed' if a['passed'] else '**FAILED**'}" for a in report.assertions
        ]
    lines += ["", f"## Warnings ({len(report.warnings)})", ""] + ([f"- {w}" for w in report.warnings] or ["none"])
    return "\n".join(lines) + "\n"
