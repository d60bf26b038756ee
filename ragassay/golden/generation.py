"""Golden-set generation: seeded page sampling, the question prompt, and the generation loop that
asks the model for one question per page, passes it through the quality gate (golden/quality_gate.py:
its rules, then the judge's support verdict of the answer against the page) and stores what
passes.

Pages are drawn at most one per document, in the order of a seeded hash of (seed, chunk id).
Every candidate is logged to the collection's generation log as it comes, and every accepted
entry is written to the golden set as it comes, so a repeated call or a rerun after a crash
skips every page already tried and never stores a question twice."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypedDict

import numpy as np
import polars as pl
from pydantic import BaseModel

from ragassay import plots
from ragassay.config import GenerateConfig
from ragassay.golden.claims import claimed_page
from ragassay.golden.entries import GoldenCandidate, validate_candidates
from ragassay.golden.quality_gate import (
    DISCARD_REASONS,
    GateDecision,
    GeneratedPair,
    answer_claim,
    gate_candidate,
    gate_judged_support,
)
from ragassay.golden.question_prompt import (
    GENERATION_PROMPT_VERSION,
    MAX_GENERATION_TOKENS,
    generation_messages,
)
from ragassay.golden.store import load_golden
from ragassay.judge.judge import Judge
from ragassay.llm.completion import ChatModel
from ragassay.llm.structured import Usage, generate_structured
from ragassay.progress import ProgressReporter
from ragassay.resources import Resources
from ragassay.search.dense import Embedder
from ragassay.store.schemas import GENERATION_CANDIDATES, GOLDEN, TableSpec
from ragassay.store.tables import read_table_or_empty, write_table
from ragassay.store.workspace import (
    CollectionPaths,
    load_chunks,
    load_documents,
)
from ragassay.tracking import BatchRecord, ConfigurationRecord


def draw_key(seed: int, chunk_id: str) -> str:
    return hashlib.sha256(f"{seed}:{chunk_id}".encode()).hexdigest()


def sample_pages(chunks: pl.DataFrame, seed: int, skip_chunk_ids: set[str]) -> pl.DataFrame:
    """At most one page per document, in the order of a seeded hash of (seed, chunk id); pages
    that already produced an entry are skipped (the document's next page by hash is drawn)."""
    keyed = chunks.filter(~pl.col("chunk_id").is_in(list(skip_chunk_ids))).with_columns(
        pl.col("chunk_id")
        .map_elements(lambda chunk_id: draw_key(seed, chunk_id), return_dtype=pl.String)
        .alias("draw_key")
    )
    return keyed.sort("draw_key").unique("doc_id", keep="first", maintain_order=True)


class GenerationReport(BaseModel):
    """What one generation call asked for, tried, kept and threw away (by reason)."""

    collection: str
    seed: int
    model_id: str
    prompt_version: str
    judge_model_id: str
    support_threshold: float
    requested: int
    attempted: int
    accepted: list[str]
    discarded: dict[str, int]
    skipped_pages: int
    # Pages passed over because a concurrent generation of the same draw had them (golden/claims.py).
    claimed_elsewhere: int = 0
    pages_available: int
    acceptance_rate: float
    # What the question model and the judge's gate cost (calls, tokens, seconds, cached calls).
    usage: Usage
    judge_usage: Usage
    seconds: float
    seconds_in_model: float
    run_id: str | None = None


@dataclass
class GenerationProgress:
    """What one generation call has so far: the questions it must not repeat (stored ones and those
    it accepted, with their embeddings), the entries it accepted, and what the model and the judge
    cost."""

    known_questions: list[str]
    known_vectors: np.ndarray
    accepted: list[str] = field(default_factory=list)
    usage: Usage = Usage()
    judge_usage: Usage = Usage()


@dataclass(frozen=True)
class GenerationKind:
    """What a generation call writes (questions or dialogues): its prompt version, where its
    candidates are logged, the pages that already gave a stored entry, the questions a new one
    must not repeat, and what one page gives (its log row; an accepted entry stored on the way)."""

    name: str
    prompt_version: str
    log_path: Callable[[CollectionPaths], Path]
    log_spec: TableSpec
    stored_pages: Callable[[CollectionPaths], set[str]]
    known_questions: Callable[[CollectionPaths], list[str]]
    from_page: Callable[..., dict]


def _progress_from(known_questions: list[str], embedder) -> GenerationProgress:
    """A generation's state before its first page: the questions already stored, embedded, so a
    near duplicate of one is discarded."""
    vectors = (
        embedder.embed(known_questions)
        if known_questions
        else np.zeros((0, embedder.spec.dimension or 384), np.float32)
    )
    return GenerationProgress(known_questions, vectors)


def _same_run_log(kind: GenerationKind, paths: CollectionPaths, seed: int, model_id: str) -> pl.DataFrame:
    """The candidates an earlier generation of the same draw (seed, model, prompt) logged."""
    log = read_table_or_empty(kind.log_path(paths), kind.log_spec)
    return log.filter(
        (pl.col("seed") == seed) & (pl.col("model") == model_id) & (pl.col("prompt_version") == kind.prompt_version)
    )


def run_generation(
    resources: Resources, paths: CollectionPaths, config: GenerateConfig, seed: int, kind: GenerationKind
) -> tuple[GenerationReport, pl.DataFrame]:
    """Draw pages, ask the model for an entry of `kind` on each, gate it, store it; stop at count
    accepted or max_attempts_factor × count pages. Returns the report and this call's candidates."""
    started = datetime.now(UTC)
    model = resources.chat_model(config.model, config.home)
    judge = Judge(resources.chat_model(config.judge, config.home))
    documents = load_documents(paths)
    same_run = _same_run_log(kind, paths, seed, model.model_id)
    done_pages = kind.stored_pages(paths) | set(same_run["chunk_id"].to_list())
    pages = sample_pages(load_chunks(paths), seed, done_pages)
    embedder = resources.collection_embedder(config.home, config.collection)
    state = _progress_from(kind.known_questions(paths), embedder)
    digests = dict(zip(documents["doc_id"], documents["sha256"]))
    wanted, attempts = still_wanted(config, same_run)
    limit = min(pages.height, attempts)
    rows: list[dict] = []
    run_key = f"{kind.name}\0{seed}\0{model.model_id}\0{kind.prompt_version}"
    claimed_elsewhere = 0
    with ProgressReporter(f"generating {kind.name} from {limit} pages", total=limit) as progress:
        # Every page in draw order, until `limit` were drafted here: a page a concurrent
        # generation of the same draw finished or is drafting is skipped (golden/claims.py).
        for page in pages.iter_rows(named=True):
            if len(rows) >= limit or len(state.accepted) >= wanted:
                break
            finished = partial(_page_logged, kind, paths, seed, model.model_id, page["chunk_id"])
            with claimed_page(paths, run_key, page["chunk_id"], finished) as mine:
                if not mine:
                    claimed_elsewhere += 1
                    continue
                row = kind.from_page(paths, config, model, judge, embedder, state, page, seed, digests)
                rows.append(row)
                _log_candidate(kind.log_path(paths), kind.log_spec, paths, row)
            progress(len(rows), limit)
    candidates = pl.DataFrame(rows, schema=kind.log_spec.schema)
    return GenerationReport(
        collection=paths.name,
        seed=seed,
        model_id=model.model_id,
        prompt_version=kind.prompt_version,
        judge_model_id=judge.model_id,
        support_threshold=judge.support_threshold,
        requested=config.count,
        attempted=candidates.height,
        accepted=state.accepted,
        discarded={reason: int((candidates["reason"] == reason).sum()) for reason in DISCARD_REASONS},
        skipped_pages=len(done_pages),
        claimed_elsewhere=claimed_elsewhere,
        pages_available=pages.height,
        acceptance_rate=len(state.accepted) / candidates.height if candidates.height else 0.0,
        usage=state.usage,
        judge_usage=state.judge_usage,
        seconds=round((datetime.now(UTC) - started).total_seconds(), 3),
        seconds_in_model=round(state.usage.seconds + state.judge_usage.seconds, 3),
    ), candidates


def generate_questions(
    resources: Resources, paths: CollectionPaths, config: GenerateConfig, seed: int
) -> tuple[GenerationReport, pl.DataFrame]:
    """Golden questions, one per page (run_generation of QUESTIONS)."""
    return run_generation(resources, paths, config, seed, QUESTIONS)


def still_wanted(config: GenerateConfig, same_run: pl.DataFrame) -> tuple[int, int]:
    """Questions still to accept and pages still to try. With count_is_total, what this seed,
    model and prompt already produced counts towards count and its attempts."""
    wanted, attempts = config.count, config.count * config.max_attempts_factor
    if config.count_is_total:
        wanted = max(0, config.count - int(same_run["accepted"].sum()))
        attempts = max(0, attempts - same_run.height) if wanted else 0
    return wanted, attempts


class CandidateRow(TypedDict):
    """One generated question, accepted or not: a row of the candidates log (store/schemas
    GENERATION_CANDIDATES, the same columns)."""

    seed: int
    model: str
    prompt_version: str
    chunk_id: str
    doc_id: str
    question: str | None
    answer: str | None
    raw_output: str
    accepted: bool
    reason: str | None
    detail: str | None
    entry_id: str | None


def _generate_from_page(
    paths: CollectionPaths,
    config: GenerateConfig,
    model: ChatModel,
    judge: Judge,
    embedder: Embedder,
    state: GenerationProgress,
    page: dict,
    seed: int,
    digests: dict[str, str],
) -> CandidateRow:
    """One page's candidate: the model's question and answer (seeded by the page), the quality
    gate's rules, then the judge's check that the page supports the answer; stored when accepted
    (a near duplicate of a stored entry is refused there). The candidate's log row."""
    page_seed = int(draw_key(seed, page["chunk_id"])[:8], 16)
    result = generate_structured(
        model,
        generation_messages(page["text"]),
        GeneratedPair,
        max_tokens=MAX_GENERATION_TOKENS,
        temperature=config.temperature,
        seed=page_seed,
    )
    state.usage = state.usage + result.usage
    vector = embedder.embed_query(result.value.question) if result.ok else None
    decision = gate_candidate(result.value, page["text"], state.known_questions, vector, state.known_vectors)
    if decision.accepted:
        support = judge.support(page["text"], answer_claim(result.value))
        state.judge_usage = state.judge_usage + support.usage
        decision = gate_judged_support(
            support.value.verdict if support.value else None,
            support.value.p_supported if support.value else None,
            judge.support_threshold,
            support.error,
        )
    entry_id = None
    if decision.accepted:
        with paths.write_lock():
            entry_id = _store_entry(paths, result.value, page, seed, model.model_id, digests[page["doc_id"]])
        if entry_id is None:
            decision = GateDecision(False, "near_duplicate", "same normalized question as a stored entry")
        else:
            state.accepted.append(entry_id)
            state.known_questions.append(result.value.question)
            state.known_vectors = np.vstack([state.known_vectors, vector[None, :]])
    return CandidateRow(
        seed=seed,
        model=model.model_id,
        prompt_version=GENERATION_PROMPT_VERSION,
        chunk_id=page["chunk_id"],
        doc_id=page["doc_id"],
        question=result.value.question if result.ok else None,
        answer=result.value.answer if result.ok else None,
        raw_output=result.raw,
        accepted=decision.accepted,
        reason=decision.reason,
        detail=decision.detail,
        entry_id=entry_id,
    )


def _page_logged(kind: GenerationKind, paths: CollectionPaths, seed: int, model_id: str, chunk_id: str) -> bool:
    """Whether the candidates log holds this page for this seed, model and prompt, as it is now."""
    log = read_table_or_empty(kind.log_path(paths), kind.log_spec)
    same_page = (
        (pl.col("chunk_id") == chunk_id)
        & (pl.col("seed") == seed)
        & (pl.col("model") == model_id)
        & (pl.col("prompt_version") == kind.prompt_version)
    )
    return log.filter(same_page).height > 0


def _log_candidate(log_path: Path, spec: TableSpec, paths: CollectionPaths, row: dict) -> None:
    """Logged after every page, after the golden set: a rerun skips this page either way. Read
    again under the lock, so a concurrent generation's rows are kept."""
    with paths.write_lock():
        log = read_table_or_empty(log_path, spec)
        write_table(pl.concat([log, pl.DataFrame([row], schema=spec.schema)]), log_path, spec)


def _store_entry(
    paths: CollectionPaths, pair: GeneratedPair, page: dict, seed: int, model_id: str, document_sha: str
) -> str | None:
    """Append one accepted question to the golden set (atomically); None if it is a duplicate."""
    candidate = GoldenCandidate(
        question=pair.question.strip(),
        expected_document_ids=(page["doc_id"],),
        source=page["chunk_id"],
        reference_answer=pair.answer.strip(),
        origin="generated",
        lineage={
            "seed": seed,
            "model": model_id,
            "prompt_version": GENERATION_PROMPT_VERSION,
            "source_chunk_id": page["chunk_id"],
            "source_document_sha256": document_sha,
        },
    )
    stored = load_golden(paths)
    rows, problems = validate_candidates([candidate], stored, {page["doc_id"]}, datetime.now(UTC))
    if problems:
        return None
    write_table(pl.concat([stored, rows]), paths.golden, GOLDEN)
    return rows["entry_id"].item()


QUESTIONS = GenerationKind(
    name="questions",
    prompt_version=GENERATION_PROMPT_VERSION,
    log_path=lambda paths: paths.generation_log,
    log_spec=GENERATION_CANDIDATES,
    stored_pages=lambda paths: set(load_golden(paths)["source_chunk_id"].drop_nulls().to_list()),
    known_questions=lambda paths: load_golden(paths)["question"].to_list(),
    from_page=_generate_from_page,
)


def generation_record(config: GenerateConfig, report: GenerationReport, candidates: pl.DataFrame) -> BatchRecord:
    """What one generation call logs: a child run with seed, model, prompt version and count,
    acceptance and discards, and its candidates; the discards picture on the batch's parent."""
    run = ConfigurationRecord(
        label=f"generate-seed{report.seed}",
        params={
            "seed": str(report.seed),
            "model": report.model_id,
            "prompt_version": report.prompt_version,
            "count": str(report.requested),
            "judge_model": report.judge_model_id,
            "support_threshold": str(report.support_threshold),
            "collection": config.collection,
            "temperature": str(config.temperature),
            "count_is_total": str(config.count_is_total),
        },
        metrics={
            "acceptance_rate": report.acceptance_rate,
            "attempted": report.attempted,
            "accepted": len(report.accepted),
            **{f"discarded_{reason}": count for reason, count in report.discarded.items()},
            **report.usage.as_metrics(),
            **report.judge_usage.as_metrics("judge"),
        },
        tables={"candidates": candidates, "discarded": candidates.filter(~pl.col("accepted"))},
    )
    figure = plots.discards_figure(
        len(report.accepted),
        report.discarded,
        f"golden-set generation, seed {report.seed}: {report.attempted} candidates",
    )
    return BatchRecord(
        kind="golden",
        configurations=[run],
        headline={},
        parent_metrics={},
        tables={},
        figures={"golden_discards": figure},
    )
