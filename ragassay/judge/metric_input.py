"""What an added answer metric (metrics/declared.AnswerMetric.score) is given to score one answer:
the answer, the question as the judge reads it, the retrieved context, the reference answer, the
collection's embedding model, and the judge to ask whether a statement is supported. Each verdict
asked is recorded under the metric's name (a row of judgments.parquet, a span of the trace), as
the built-in metrics' are."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ragassay.answer.grounding import GroundedAnswer
from ragassay.metrics.answers import Verdict


@dataclass(frozen=True)
class MetricInput:
    """One answer, and the means to judge it, for one added metric."""

    metric: str
    answer: GroundedAnswer
    question: str  # as the judge reads it: a follow-up with its conversation
    context: str  # the retrieved passages, numbered, as the judge is shown them
    reference_answer: str | None
    embed: Callable[[str], np.ndarray]  # the question collection's embedding model (unit vectors)
    _support: Callable[[str, int, str, str], Verdict]

    def supported(self, statement: str, index: int = 0, context: str | None = None) -> Verdict:
        """The judge's verdict (True, False, or None when unreadable) on whether `context` (the
        retrieved passages by default) supports `statement`; recorded as statement `index` of
        this metric."""
        return self._support(self.metric, index, statement, self.context if context is None else context)
