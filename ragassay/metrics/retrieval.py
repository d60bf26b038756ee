"""Retrieval metrics: one small pure function per metric, per-question scores out, no averaging.

Every metric reads a `Judged` run: for each question, the relevance grade of the document at each
rank (0 when the document is not judged relevant, or when fewer documents were retrieved) and the
grades of all its relevant documents. A document is relevant when its grade is at least 1, as in
trec_eval. Conventions, the same as trec_eval's (and so pytrec_eval's):

- cut-offs count ranks 1..k; a run shorter than k is padded with non-relevant ranks;
- an empty result list scores 0 on every metric and still counts in the mean;
- a question with no relevant documents cannot be scored and is excluded before this module
  (the evaluation reports it as a warning).

Names (`recall@5`, `ndcg@10`, `mrr`...) are parsed in metrics/names.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Judged:
    """A run joined with its judgements.

    gains: (questions, depth) relevance grade of the document at each rank, 0 past the run's end.
    ideal_gains: (questions, depth_ideal) all relevant grades of each question, sorted descending,
        padded with 0.
    relevant_count: (questions,) number of relevant documents (grade >= 1) of each question.
    """

    gains: np.ndarray
    ideal_gains: np.ndarray
    relevant_count: np.ndarray


def _top(judged: Judged, k: int) -> np.ndarray:
    top = judged.gains[:, :k]
    if top.shape[1] < k:
        top = np.pad(top, ((0, 0), (0, k - top.shape[1])))
    return top


def recall_at_k(judged: Judged, k: int) -> np.ndarray:
    """recall@k = |relevant documents in the top k| / |relevant documents|."""
    return (_top(judged, k) > 0).sum(axis=1) / judged.relevant_count


def precision_at_k(judged: Judged, k: int) -> np.ndarray:
    """precision@k = |relevant documents in the top k| / k (k, not the number retrieved)."""
    return (_top(judged, k) > 0).sum(axis=1) / k


def hit_rate_at_k(judged: Judged, k: int) -> np.ndarray:
    """hit_rate@k = 1 if any relevant document is in the top k, else 0."""
    return (_top(judged, k) > 0).any(axis=1).astype(np.float64)


def reciprocal_rank(judged: Judged, k: int | None = None) -> np.ndarray:
    """RR = 1 / rank of the first relevant document (within the top k if given), 0 if none.

    Its mean over questions is MRR. Without k it reads the whole run, which every configuration
    has to the evaluation's max rank (RetrievalSettings.max_rank).
    """
    top = judged.gains if k is None else _top(judged, k)
    relevant = top > 0
    first = relevant.argmax(axis=1)
    return np.where(relevant.any(axis=1), 1.0 / (first + 1), 0.0)


def ndcg_at_k(judged: Judged, k: int) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k with DCG@k = sum over ranks i <= k of grade_i / log2(i + 1).

    Gains are the graded relevance itself (linear, as trec_eval's ndcg_cut); with binary
    judgements every relevant document gains 1. IDCG@k is the DCG@k of the relevant documents
    sorted by grade, best first.
    """
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    dcg = (_top(judged, k) * discounts).sum(axis=1)
    ideal = judged.ideal_gains[:, :k]
    idcg = (ideal * discounts[: ideal.shape[1]]).sum(axis=1)
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


def judge_run(rankings: list[list[str]], judgements: list[dict[str, int]], depth: int) -> Judged:
    """Build a Judged run from each question's ranked document keys and its {doc: grade} judgements.

    Questions with no relevant document must have been removed (relevant_count would be 0).
    """
    questions = len(rankings)
    gains = np.zeros((questions, depth), dtype=np.float64)
    for row, (ranking, judged) in enumerate(zip(rankings, judgements)):
        for rank, doc in enumerate(ranking[:depth]):
            grade = judged.get(doc, 0)
            if grade > 0:
                gains[row, rank] = grade
    relevant_grades = [sorted((g for g in judged.values() if g > 0), reverse=True) for judged in judgements]
    width = max((len(g) for g in relevant_grades), default=0)
    ideal = np.zeros((questions, max(width, 1)), dtype=np.float64)
    for row, grades in enumerate(relevant_grades):
        ideal[row, : len(grades)] = grades
    relevant_count = np.array([len(g) for g in relevant_grades], dtype=np.float64)
    if (relevant_count == 0).any():
        raise ValueError("every question needs at least one relevant document")
    return Judged(gains, ideal, relevant_count)
