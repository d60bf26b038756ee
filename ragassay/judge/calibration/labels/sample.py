"""A sample of an answer batch's judged statements for people to label: one item per distinct
judgement (statement and passages), drawn seeded from two strata by the judge's verdict, shown in a
seeded shuffle, with ids that say where each came from (judge/calibration/labels/__init__.py says how)."""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import polars as pl

from ragassay.errors import ConfigError
from ragassay.judge.prompts import passages_of
from ragassay.metrics.declared import BY_NAME, LABELLED_METRICS

# The metrics whose verdicts are support verdicts (one prompt), the ones a label can check: those
# declared with a label prompt.
SUPPORT_METRICS = LABELLED_METRICS

LABELS = ("supported", "unsupported", "skipped")

VERDICTS = ("supported", "unsupported")


@dataclass(frozen=True)
class JudgedConfiguration:
    """One configuration run of an answer batch, as MLflow holds it: its answers and judgments
    tables, and the judge that made the verdicts."""

    label: str
    answers: pl.DataFrame
    judgments: pl.DataFrame
    judge_model: str
    prompt_version: str
    support_threshold: float


@dataclass(frozen=True)
class SampleItem:
    """One judged statement of a sample, with everything a person needs to label it and the
    correction needs to weigh the label."""

    item_id: str
    sample_id: str
    batch_id: str
    configuration: str
    query_collection: str
    query_id: str
    metric: str
    question: str
    answer: str
    statement: str
    context: str
    context_digest: str
    cited_sources: list[int]
    stratum: str
    stratum_size: int
    judge_model: str
    prompt_version: str
    support_threshold: float
    judge_verdict: str
    p_supported: float


def item_id_of(statement: str, context: str) -> tuple[str, str]:
    """(item id, context digest): sha256 of the context, and 16 hex of sha256 of statement and digest."""
    digest = hashlib.sha256(context.encode()).hexdigest()
    return hashlib.sha256(f"{statement}\0{digest}".encode()).hexdigest()[:16], digest


def sample_id_of(batch_id: str, seed: int, count: int) -> str:
    return f"{batch_id}/seed-{seed}/count-{count}"


def parse_sample_id(sample_id: str) -> tuple[str, int, int]:
    """(batch id, seed, count) of a sample id; ValueError for anything else."""
    batch_id, seed, count = sample_id.rsplit("/", 2)
    if not seed.startswith("seed-") or not count.startswith("count-"):
        raise ValueError(sample_id)
    return batch_id, int(seed.removeprefix("seed-")), int(count.removeprefix("count-"))


def judgement_of(statement: str, context: str, metric: str) -> tuple[str, tuple[str, ...]]:
    """What a person is asked to judge: the statement and the passages' texts, spacing and source
    numbers aside. A statement citing the one passage of its answer is the same judgement over
    the numbered passages (context `[1] text`) and against the one passage it cites (context
    `text`: a metric whose label prompt shows one cited passage)."""
    if BY_NAME[metric].label_prompt.one_cited_passage:
        passages = [context]
    else:
        passages = [_SOURCE_NUMBER.sub("", passage, count=1) for passage in passages_of(context)]
    return " ".join(statement.split()), tuple(" ".join(passage.split()) for passage in passages)


_SOURCE_NUMBER = re.compile(r"^\[\d+\] ")


def judged_items(batch_id: str, runs: list[JudgedConfiguration], count: int, seed: int) -> list[SampleItem]:
    """Every distinct readable support verdict of the batch as an unsampled item (stratum size 0),
    in configuration order then table order: one item per distinct judgement (judgement_of), the
    first verdict of it kept. ConfigError for a batch logged before judgments kept the context
    they were judged against."""
    items: dict[str, SampleItem] = {}
    judgements: set[tuple[str, tuple[str, ...]]] = set()
    for run in runs:
        if "context" not in run.judgments.columns:
            raise ConfigError(
                f"batch {batch_id} was logged before its judgments kept the context each statement was judged "
                "against; evaluate the answers again (every answer and verdict comes from the cache) and label that batch"
            )
        answers = {
            (row["query_collection"], row["query_id"]): row
            for row in run.answers.select("query_collection", "query_id", "question", "answer").iter_rows(named=True)
        }
        judged = run.judgments.filter(pl.col("metric").is_in(SUPPORT_METRICS) & pl.col("verdict").is_in(VERDICTS))
        for row in judged.iter_rows(named=True):
            item_id, digest = item_id_of(row["statement"], row["context"])
            judgement = judgement_of(row["statement"], row["context"], row["metric"])
            if item_id in items or judgement in judgements:
                continue
            judgements.add(judgement)
            answer = answers.get((row["query_collection"], row["query_id"]), {})
            items[item_id] = SampleItem(
                item_id=item_id,
                sample_id=sample_id_of(batch_id, seed, count),
                batch_id=batch_id,
                configuration=run.label,
                query_collection=row["query_collection"],
                query_id=row["query_id"],
                metric=row["metric"],
                question=answer.get("question") or "",
                answer=answer.get("answer") or "",
                statement=row["statement"],
                context=row["context"],
                context_digest=digest,
                cited_sources=list(row["cited_sources"] or []),
                stratum=row["verdict"],
                stratum_size=0,
                judge_model=run.judge_model,
                prompt_version=run.prompt_version,
                support_threshold=run.support_threshold,
                judge_verdict=row["verdict"],
                p_supported=row["p_supported"],
            )
    return list(items.values())


def draw_sample(batch_id: str, runs: list[JudgedConfiguration], count: int, seed: int) -> list[SampleItem]:
    """The seeded sample of `count` items of a batch (module docstring), in the order they are
    shown. The same batch, count and seed always give the same sample. ConfigError when the batch
    has no judged statement."""
    population = judged_items(batch_id, runs, count, seed)
    if not population:
        raise ConfigError(f"batch {batch_id} has no readable support verdict to label (no answered question judged)")
    strata = {verdict: [item for item in population if item.stratum == verdict] for verdict in VERDICTS}
    rng = random.Random(f"{batch_id}/{seed}")
    wanted = {verdict: min(len(strata[verdict]), count // 2) for verdict in VERDICTS}
    # One stratum short of half: the other gives the rest, as far as it has them.
    for verdict, other in (VERDICTS, VERDICTS[::-1]):
        wanted[verdict] = min(len(strata[verdict]), count - wanted[other])
    chosen = [
        SampleItem(**{**asdict(item), "stratum_size": len(strata[verdict])})
        for verdict in VERDICTS
        for item in rng.sample(sorted(strata[verdict], key=lambda i: i.item_id), wanted[verdict])
    ]
    rng.shuffle(chosen)
    return chosen


def collections_of(items: Iterable[SampleItem]) -> list[str]:
    return sorted({item.query_collection for item in items})
