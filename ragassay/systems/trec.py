"""`kind: trec`: a TREC run file, read with trec_eval's semantics: `qid Q0 docid rank score tag`
per line; each query's documents ranked by score, higher first, ties broken by docid in
descending order (as trec_eval's `comp_sim_docno` does); the rank column is ignored, as trec_eval
ignores it. Retrieval only."""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from ragassay.errors import ConfigError, listed_problems
from ragassay.llm.cache import CompletionCache
from ragassay.systems.collect import match_records
from ragassay.systems.kind import CollectedRecords, Progress, SystemKind
from ragassay.systems.records import Retrieved, SystemQuestion, SystemRecord
from ragassay.user_files import read_user_text


class TrecSystem(SystemKind):
    """A TREC run file (`qid Q0 docid rank score tag`): retrieval only."""

    kind: Literal["trec"] = Field(description="trec: a TREC run file (retrieval only).")
    path: Path = Field(description="The run file: `qid Q0 docid rank score tag` lines.")
    asks: ClassVar[bool] = False

    def collect(
        self, questions: list[SystemQuestion], cache: CompletionCache | None, on_progress: Progress
    ) -> CollectedRecords:
        stored = [
            SystemRecord(qid, None, retrieved=tuple(Retrieved(doc_id, None, score) for doc_id, score in ranking))
            for qid, ranking in read_trec_run(self.path).items()
        ]
        collected = match_records(stored, questions)
        on_progress(len(questions), len(questions))
        return collected

    def source(self) -> str:
        return f"records read from {self.path}"


def read_trec_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    """{qid: [(docid, score), ...] best first}; a ConfigError naming file:line for a malformed
    line, a score that is not a finite number, or a document listed twice for one query (at most
    20 problems, then a count)."""
    scored: dict[str, dict[str, float]] = {}
    first_line: dict[tuple[str, str], int] = {}
    problems = []
    for number, line in enumerate(read_user_text(path, "TREC run file").splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 6:
            problems.append(f"{path}:{number}: expected 6 fields `qid Q0 docid rank score tag`, got {len(fields)}")
            continue
        qid, _, docid, _, score_text, _ = fields
        try:
            score = float(score_text)
        except ValueError:
            problems.append(f"{path}:{number}: score {score_text!r} is not a number")
            continue
        if not math.isfinite(score):
            # NaN compares false with everything: sorted by it, the valid scores come out in any order.
            problems.append(f"{path}:{number}: score {score_text!r} is not a finite number")
            continue
        if (qid, docid) in first_line:
            problems.append(
                f"{path}:{number}: {docid} listed again for query {qid} (first on line {first_line[qid, docid]})"
            )
            continue
        first_line[qid, docid] = number
        scored.setdefault(qid, {})[docid] = score
    if problems:
        raise ConfigError(f"TREC run file {path}: " + listed_problems(problems))
    if not scored:
        raise ConfigError(f"TREC run file {path} holds no results")
    return {
        qid: sorted(documents.items(), key=lambda pair: (-pair[1], _descending(pair[0])))
        for qid, documents in scored.items()
    }


class _descending(str):
    """A docid that sorts in reverse: trec_eval breaks score ties by docid, highest first."""

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)
