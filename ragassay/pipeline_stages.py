"""The pipeline's own logic (flows/pipeline.py wires it): whether a stage has what it needs, what
the golden file and generation added up to, and the pipeline's summary as one report and as
Markdown. Pure apart from reading the workspace."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl
from pydantic import BaseModel

from ragassay.config import PipelineConfig
from ragassay.errors import RagassayError
from ragassay.evaluation.outcomes import AnswerEvalReport, RetrievalEvalReport, published_intervals
from ragassay.evaluation.reports import (
    answer_sections,
    assertion_lines,
    retrieval_sections,
    runs_view_lines,
    subsections,
    unfaithful_lines,
    warning_lines,
)
from ragassay.gates.assertions import AssertionResult
from ragassay.golden.generation import GenerationReport
from ragassay.golden.quality_gate import DISCARD_REASONS
from ragassay.golden.question_prompt import GENERATION_PROMPT_VERSION
from ragassay.golden.store import GoldenChange, load_dialogues, load_golden
from ragassay.index.build import IndexReport
from ragassay.ingest.files import IngestReport
from ragassay.llm.settings import model_id_of
from ragassay.metrics.names import headline_retrieval_metrics
from ragassay.run_warnings import RunWarning
from ragassay.store.schemas import GENERATION_CANDIDATES
from ragassay.store.tables import read_table_or_empty
from ragassay.store.workspace import collection_paths, read_manifest
from ragassay.tracking import LoggedBatch

# Refusals of a golden-file entry that only mean it is already stored (a re-run of the pipeline).
DUPLICATE_DIALOGUE = "duplicate_dialogue"
ALREADY_STORED = ("duplicate_question", "duplicate_id", DUPLICATE_DIALOGUE)


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
    missing = [path for path in config.golden.files if not path.is_file()]
    if stage == "golden" and missing:
        return f"golden.file {missing[0]} does not exist"
    if stage in ("retrieval", "answers") and load_golden(paths).height == 0 and load_dialogues(paths).height == 0:
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


class GoldenFileOutcome(BaseModel):
    """Entries and dialogues the golden files added, already held, and refused for another reason
    (those are real problems: a document id the collection lacks, a malformed row); the golden
    set's size and its dialogues."""

    added: int
    already_stored: int  # entries (dialogues apart: dialogues_already_stored)
    refused: list[dict]
    size: int
    dialogues_added: int = 0
    dialogues: int = 0  # golden dialogues in all
    dialogues_already_stored: int = 0


class GenerationTotals(BaseModel):
    """What this seed, model and prompt produced over every run so far, and the golden set's size."""

    seed: int
    candidates: int
    accepted: int
    discarded: dict[str, int]
    golden_size: int
    # Golden dialogues and their turns (each turn a question of the evaluations).
    dialogues: int = 0
    dialogue_turns: int = 0


class GoldenStageReport(BaseModel):
    """The golden stage: the file's entries, this run's generation, the seed's totals over every run."""

    file: GoldenFileOutcome | None
    generation: GenerationReport | None
    totals: GenerationTotals


def generation_text(golden: GoldenStageReport) -> str:
    """What generation added up to for this seed (accepted of candidates, then each discard
    reason's count), or that it was switched off for this run."""
    if golden.generation is None:
        return "generation: off in this run"
    totals = golden.totals
    discards = ", ".join(f"{count} {reason}" for reason, count in totals.discarded.items()) or "none"
    return (
        f"generation (seed {totals.seed}): {totals.accepted} accepted of {totals.candidates} candidates; "
        f"discarded: {discards}"
    )


def golden_file_outcome(changes: list[GoldenChange]) -> GoldenFileOutcome:
    """What the golden files added, held already and refused, together."""
    problems = [p for change in changes for p in change.problems]
    refused = [p for p in problems if p["reason"] not in ALREADY_STORED]
    return GoldenFileOutcome(
        added=sum(len(change.added) for change in changes),
        already_stored=sum(p["reason"] in ALREADY_STORED and p["reason"] != DUPLICATE_DIALOGUE for p in problems),
        dialogues_already_stored=sum(p["reason"] == DUPLICATE_DIALOGUE for p in problems),
        refused=refused,
        size=changes[-1].size,
        dialogues_added=sum(len(change.dialogues_added) for change in changes),
        dialogues=changes[-1].dialogues,
    )


def generation_totals(config: PipelineConfig) -> GenerationTotals:
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
    return GenerationTotals(
        seed=config.golden.seed,
        candidates=log.height,
        accepted=int(log["accepted"].sum()) if log.height else 0,
        discarded={reason: reasons.count(reason) for reason in DISCARD_REASONS if reason in reasons},
        golden_size=load_golden(paths).height,
        dialogues=(turns := load_dialogues(paths))["dialogue_id"].n_unique(),
        dialogue_turns=turns.height,
    )


def golden_stage_report(
    config: PipelineConfig, file_outcome: GoldenFileOutcome | None, generation: GenerationReport | None
) -> GoldenStageReport:
    return GoldenStageReport(file=file_outcome, generation=generation, totals=generation_totals(config))


class StageReports(BaseModel):
    """Each stage's report, by stage (None: the stage did not run)."""

    ingest: IngestReport | None = None
    index: IndexReport | None = None
    golden: GoldenStageReport | None = None
    retrieval: RetrievalEvalReport | None = None
    answers: AnswerEvalReport | None = None


@dataclass
class StagesDone:
    """The stages of one pipeline run that have ended, in order: each one's report and seconds."""

    reports: StageReports = field(default_factory=StageReports)
    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, stage: str, report, seconds: float) -> None:
        setattr(self.reports, stage, report)
        self.seconds[stage] = round(seconds, 3)


class PipelineReport(StageReports):
    """What one pipeline run did, stage by stage, and where its results are."""

    collection: str
    batch_id: str
    parent_run_id: str
    stages: list[str]
    stage_seconds: dict[str, float]
    cache: dict[str, str]
    warnings: list[RunWarning]
    assertions: list[AssertionResult]
    seconds: float
    mlflow_url: str | None
    mlflow_ui_command: str
    runs_view_url: str | None = None
    prefect_flow_run_id: str | None
    prefect_flow_run_url: str | None
    # Why the batch is not (wholly) in MLflow and where it is kept (tracking/unreachable); None
    # for a logged one.
    not_logged: str | None = None
    kept_in: str | None = None


def stage_warnings(reports: StageReports) -> list[RunWarning]:
    """Every stage's warnings, each marked with its stage."""
    warnings = [
        RunWarning(stage="ingest", reason=f"rejected {r.path}: {r.reason} ({r.detail})")
        for r in (reports.ingest.rejected if reports.ingest else [])
    ]
    if reports.golden and reports.golden.file:
        warnings += [
            RunWarning(stage="golden file", reason=f"{p['source']}: {p['reason']} ({p['detail']})")
            for p in reports.golden.file.refused
        ]
    for stage, report in (("retrieval", reports.retrieval), ("answers", reports.answers)):
        warnings += [w.in_stage(stage) for w in (report.warnings if report else [])]
    return warnings


def pipeline_report(
    config: PipelineConfig,
    reports: StageReports,
    logged: LoggedBatch,
    stage_seconds: dict[str, float],
    seconds: float,
    prefect_flow_run_id: str | None,
    prefect_flow_run_url: str | None,
) -> PipelineReport:
    """The pipeline's report from its stages' reports and where its batch is."""
    return PipelineReport(
        **dict(reports),
        collection=config.collection,
        batch_id=logged.batch_id,
        parent_run_id=logged.parent_run_id,
        stages=config.enabled_stages(),
        stage_seconds=stage_seconds,
        cache=cache_lines(reports),
        warnings=stage_warnings(reports),
        assertions=(reports.retrieval.assertions if reports.retrieval else [])
        + (reports.answers.assertions if reports.answers else []),
        seconds=round(seconds, 3),
        mlflow_url=logged.mlflow_url,
        mlflow_ui_command=logged.ui_command,
        # The evaluation stages saved the batch's view of the runs list (the last one to log has it whole).
        runs_view_url=next((r.runs_view_url for r in (reports.answers, reports.retrieval) if r is not None), None),
        prefect_flow_run_id=prefect_flow_run_id,
        prefect_flow_run_url=prefect_flow_run_url,
    )


def pipeline_metrics(report: PipelineReport) -> dict[str, float]:
    """The pipeline's figures on the batch's parent run: stage seconds, documents by outcome, the
    golden set's size and accepted total, failed gates."""
    metrics = {f"seconds/{stage}": seconds for stage, seconds in report.stage_seconds.items()}
    metrics["seconds/total"] = report.seconds
    if report.ingest:
        metrics.update({f"documents/{outcome}": count for outcome, count in report.ingest.counts.items()})
    if report.golden:
        metrics["golden/size"] = report.golden.totals.golden_size
        metrics["golden/accepted_total"] = report.golden.totals.accepted
    metrics["gates/failed"] = sum(1 for a in report.assertions if not a.passed)
    return metrics


def pipeline_metric_rows(report: PipelineReport) -> list[dict]:
    """The batch's metrics table as the pipeline's flow run shows it (where a CI client reads it):
    each evaluation stage's rows as its own flow run publishes them (published_intervals), with
    the stage first; the same columns on every row (a retrieval row has no corrected estimate)."""
    rows = []
    if report.retrieval is not None:
        headline = retrieval_headline(report.retrieval)
        rows += [{"stage": "retrieval", **row} for row in published_intervals(report.retrieval.intervals, headline)]
    if report.answers is not None:
        rows += [{"stage": "answers", **row} for row in published_intervals(report.answers.intervals)]
    columns = dict.fromkeys(key for row in rows for key in row)
    return [{key: row.get(key) for key in columns} for row in rows]


def cache_lines(reports: StageReports) -> dict[str, str]:
    """Per stage, what was served from a cache instead of done again."""
    lines = {}
    if reports.ingest is not None:
        ingest = reports.ingest
        lines["ingest"] = (
            f"{len(ingest.unchanged)} unchanged documents kept (not extracted again), "
            f"{len(ingest.ingested) + len(ingest.replaced)} (re)ingested"
        )
    if reports.index is not None:
        lines["index"] = f"{reports.index.reused_embeddings} embeddings from cache, {reports.index.embedded} computed"
    generation = reports.golden.generation if reports.golden else None
    if generation is not None:
        usage, judge = generation.usage, generation.judge_usage
        lines["golden"] = (
            f"{generation.attempted} new candidates; model calls {usage.calls} asked, "
            f"{usage.cached_calls + judge.cached_calls} from cache"
        )
    if reports.answers is not None:
        metrics = reports.answers.metrics.values()
        asked = sum(m["answer_model_calls"] + m["judge_calls"] for m in metrics)
        cached = sum(m["answer_model_cached_calls"] + m["judge_cached_calls"] for m in metrics)
        lines["answers"] = f"model calls: {asked:.0f} asked, {cached:.0f} from cache"
    return lines


def retrieval_headline(report: RetrievalEvalReport) -> list[str]:
    """The headline metrics of a retrieval report: recall at its cut-offs, nDCG at the deepest, MRR."""
    return headline_retrieval_metrics({int(m.split("@")[1]) for m in report.metrics if m.startswith("recall@")})


def pipeline_markdown(report: PipelineReport) -> str:
    """The pipeline run's summary, for the Prefect UI and the MLflow batch's description: where
    the batch is (both ways), each evaluation stage's sections as its own report has them
    (headline metrics with their 95% intervals, who is ahead, paired differences, the answers'
    judge error and pairwise tallies), stage times, what came from cache, the golden set, gates
    and warnings."""
    if report.kept_in:
        mlflow = (
            f"Batch `{report.batch_id}` is **not in MLflow** (its tracking server did not answer): kept in "
            f"`{report.kept_in}`; run the same command again once the server is back to log it"
        )
    elif report.mlflow_url:
        mlflow = f"MLflow batch [{report.batch_id}]({report.mlflow_url})"
    else:
        # The local store: the ids here, and at the end the command that opens it (at the top it
        # would push the links below out of the first screen of MLflow's description).
        mlflow = f"MLflow batch `{report.batch_id}`, parent run `{report.parent_run_id}`"
    prefect = (
        f"Prefect flow run [{report.prefect_flow_run_id}]({report.prefect_flow_run_url})"
        if report.prefect_flow_run_url
        else f"Prefect flow run `{report.prefect_flow_run_id}`"
        if report.prefect_flow_run_id
        else ""
    )
    lines = [f"# Pipeline run on `{report.collection}`", "", mlflow + (f"; {prefect}" if prefect else "") + "."]
    lines += runs_view_lines(report.runs_view_url, report.mlflow_url)
    lines += unfaithful_lines(report.answers.unfaithful_traces_urls if report.answers else {})
    # Each stage's sections are its own report's (the stage's Prefect artifact), one level down.
    if report.retrieval is not None:
        sections = retrieval_sections(report.retrieval, retrieval_headline(report.retrieval))
        lines += ["", "## Retrieval", "", *subsections(sections)]
    if report.answers is not None:
        lines += [
            "",
            "## Answers",
            "",
            f"Judge: `{report.answers.judge_model}`.",
            "",
            *subsections(answer_sections(report.answers)),
        ]
    lines += [
        "",
        "## Stages",
        "",
        "| stage | seconds | from cache |",
        "|---|---:|---|",
    ]
    lines += [
        f"| {stage} | {report.stage_seconds.get(stage, 0):.1f} | {report.cache.get(stage, '')} |"
        for stage in report.stages
    ]
    if report.golden:
        lines += ["", f"Golden set: {report.golden.totals.golden_size} entries; {generation_text(report.golden)}"]
    lines += assertion_lines(report.assertions)
    lines += warning_lines(report.warnings)
    if not report.mlflow_url and not report.kept_in:
        # No full stop after the command: shown as a block, it would stand on a line of its own.
        lines += ["", f"Open the MLflow batch with: `{report.mlflow_ui_command}`"]
    return "\n".join(lines) + "\n"
