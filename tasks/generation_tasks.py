"""Prefect tasks of golden-set generation: one page at a time, every result stored as it comes,
so an interrupted run resumes where it stopped and never stores a question twice."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from ragassay.config import GenerateConfig
from ragassay.golden_service import load_golden
from ragassay.workspace import CollectionPaths, load_chunks, load_documents, models_dir, read_manifest
from tasks import tracking
from tasks.dense import DEFAULT_MODEL_NAME, embed_texts, resolve_model
from tasks.generation import (
    DISCARD_REASONS,
    GENERATION_PROMPT_VERSION,
    GateDecision,
    GeneratedPair,
    draw_key,
    gate_candidate,
    generation_messages,
    sample_pages,
)
from tasks.golden import GoldenCandidate, validate_candidates
from tasks.models import Usage, generate_structured, load_chat_model
from tasks.progress import ProgressReporter
from tasks.schemas import GENERATION_CANDIDATES, GOLDEN
from tasks.tables import read_table_or_empty, write_table

MAX_GENERATION_TOKENS = 200


class GenerationReport(BaseModel):
    """What one generation call asked for, tried, kept and threw away (by reason)."""

    collection: str
    seed: int
    model_id: str
    prompt_version: str
    requested: int
    attempted: int
    accepted: list[str]
    discarded: dict[str, int]
    skipped_pages: int
    pages_available: int
    acceptance_rate: float
    usage: dict[str, float]
    seconds: float
    seconds_in_model: float
    run_id: str | None = None


@task(name="generate-golden-questions", cache_policy=NO_CACHE)
def generate_questions(paths: CollectionPaths, config: GenerateConfig, seed: int) -> tuple[GenerationReport, pl.DataFrame]:
    """Draw pages, ask the model for a question on each, gate it, store it; stop at count accepted
    or max_attempts_factor × count pages. Returns the report and this call's candidates."""
    started = datetime.now(timezone.utc)
    model = load_chat_model(config.model)
    documents = load_documents(paths)
    chunks = load_chunks(paths)
    log = read_table_or_empty(paths.generation_log, GENERATION_CANDIDATES)
    same_run = log.filter(
        (pl.col("seed") == seed) & (pl.col("model") == model.model_id) & (pl.col("prompt_version") == GENERATION_PROMPT_VERSION)
    )
    golden = load_golden(paths)
    done_pages = set(golden["source_chunk_id"].drop_nulls().to_list()) | set(same_run["chunk_id"].to_list())
    pages = sample_pages(chunks, seed, done_pages)
    embedding = resolve_model((read_manifest(paths) or {}).get("embedding_model", DEFAULT_MODEL_NAME), models_dir(config.home))
    known_questions = golden["question"].to_list()
    known_vectors = embed_texts(embedding, known_questions) if known_questions else np.zeros((0, embedding.dimension or 384), np.float32)
    digests = dict(zip(documents["doc_id"], documents["sha256"]))
    usage = Usage()
    rows: list[dict] = []
    accepted: list[str] = []
    limit = min(pages.height, config.count * config.max_attempts_factor)
    with ProgressReporter(f"generating questions from {limit} pages") as progress:
        for attempt, page in enumerate(pages.head(limit).iter_rows(named=True), start=1):
            page_seed = int(draw_key(seed, page["chunk_id"])[:8], 16)
            result = generate_structured(
                model, generation_messages(page["text"]), GeneratedPair,
                max_tokens=MAX_GENERATION_TOKENS, temperature=config.temperature, seed=page_seed, usage=usage,
            )
            vector = embed_texts(embedding, [result.value.question])[0] if result.ok else None
            decision = gate_candidate(result.value, page["text"], known_questions, vector, known_vectors)
            entry_id = None
            if decision.accepted:
                entry_id = _store_entry(paths, result.value, page, seed, model.model_id, digests[page["doc_id"]])
                if entry_id is None:
                    decision = GateDecision(False, "near_duplicate", "same normalized question as a stored entry")
                else:
                    accepted.append(entry_id)
                    known_questions.append(result.value.question)
                    known_vectors = np.vstack([known_vectors, vector[None, :]])
            row = {
                "seed": seed, "model": model.model_id, "prompt_version": GENERATION_PROMPT_VERSION,
                "chunk_id": page["chunk_id"], "doc_id": page["doc_id"],
                "question": result.value.question if result.ok else None, "answer": result.value.answer if result.ok else None,
                "raw_output": result.raw, "accepted": decision.accepted, "reason": decision.reason, "detail": decision.detail,
                "entry_id": entry_id,
            }
            rows.append(row)
            # Logged after every page, after the golden set: a rerun skips this page either way.
            log = pl.concat([log, pl.DataFrame([row], schema=GENERATION_CANDIDATES.schema)])
            write_table(log, paths.generation_log, GENERATION_CANDIDATES)
            progress(attempt, limit)
            if len(accepted) >= config.count:
                break
    candidates = pl.DataFrame(rows, schema=GENERATION_CANDIDATES.schema)
    discarded = {reason: int((candidates["reason"] == reason).sum()) for reason in DISCARD_REASONS}
    seconds = (datetime.now(timezone.utc) - started).total_seconds()
    report = GenerationReport(
        collection=paths.name, seed=seed, model_id=model.model_id, prompt_version=GENERATION_PROMPT_VERSION,
        requested=config.count, attempted=candidates.height, accepted=accepted, discarded=discarded,
        skipped_pages=len(done_pages), pages_available=pages.height,
        acceptance_rate=len(accepted) / candidates.height if candidates.height else 0.0,
        usage=usage.as_metrics(), seconds=round(seconds, 3), seconds_in_model=round(usage.seconds, 3),
    )
    return report, candidates


def _store_entry(paths: CollectionPaths, pair: GeneratedPair, page: dict, seed: int, model_id: str, document_sha: str) -> str | None:
    """Append one accepted question to the golden set (atomically); None if it is a duplicate."""
    candidate = GoldenCandidate(
        question=pair.question.strip(),
        expected_document_ids=(page["doc_id"],),
        source=page["chunk_id"],
        reference_answer=pair.answer.strip(),
        origin="generated",
        lineage={
            "seed": seed, "model": model_id, "prompt_version": GENERATION_PROMPT_VERSION,
            "source_chunk_id": page["chunk_id"], "source_document_sha256": document_sha,
        },
    )
    stored = load_golden(paths)
    rows, problems = validate_candidates([candidate], stored, {page["doc_id"]}, datetime.now(timezone.utc))
    if problems:
        return None
    write_table(pl.concat([stored, rows]), paths.golden, GOLDEN)
    return rows["entry_id"].item()


@task(name="log-generation-run", cache_policy=NO_CACHE)
def log_generation_run(config: GenerateConfig, report: GenerationReport, candidates: pl.DataFrame) -> str:
    """One MLflow run: seed, model, prompt version and count; acceptance and discards; candidates."""
    mlflow_client = tracking.client(config.home)
    experiment_id = tracking.ensure_experiment(mlflow_client, config.home, [config.collection])
    run = mlflow_client.create_run(
        experiment_id,
        run_name=f"generate-{report.seed}",
        tags={tracking.TAG_KIND: "generation", tracking.TAG_COLLECTIONS: config.collection, tracking.TAG_ROLE: "generation",
              tracking.TAG_BATCH: f"generation-{report.seed}"},
    )
    run_id = run.info.run_id
    tracking.log_values(
        mlflow_client,
        run_id,
        {"seed": str(report.seed), "model": report.model_id, "prompt_version": report.prompt_version, "count": str(report.requested),
         "collection": config.collection, "temperature": str(config.temperature)},
        {"acceptance_rate": report.acceptance_rate, "attempted": report.attempted, "accepted": len(report.accepted),
         **{f"discarded_{reason}": count for reason, count in report.discarded.items()}, **report.usage},
    )
    tracking.log_tables(mlflow_client, run_id, {"candidates": candidates, "discarded": candidates.filter(~pl.col("accepted"))})
    tracking.finish(mlflow_client, run_id)
    return run_id
