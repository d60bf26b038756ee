"""The judges of a worker process: one Judge per model and workspace for the evaluation running
now, shared by that evaluation's tasks (threads), made once however many ask at once."""

from __future__ import annotations

import threading
from pathlib import Path

from ragassay.judge.judge import Judge
from ragassay.llm.settings import ChatModelConfig
from ragassay.resources import Resources


class EvaluationJudges:
    """A Judge remembers its judgements for one evaluation (judge.py). The tasks of an evaluation
    that run in one process share its judge; a Dask worker has its own (a judge's model cannot
    travel between processes; the workspace's completion cache is shared by all). When a new
    evaluation asks, the judges of earlier ones are dropped, so their memory does not pile up in a
    long-lived worker."""

    def __init__(self, resources: Resources):
        self.resources = resources
        self._judges: dict[tuple[ChatModelConfig, Path, str, bool], Judge] = {}
        self._lock = threading.Lock()

    def get(self, config: ChatModelConfig, home: Path, evaluation: str, own_odds: bool = False) -> Judge:
        """The judge of config in workspace home for one evaluation (any token naming it, such as
        its flow run id); own_odds: its own P asked beside the verdict (Judge.own_odds)."""
        key = (config, home, evaluation, own_odds)
        with self._lock:
            if key not in self._judges:
                for earlier in [k for k in self._judges if k[2] != evaluation]:
                    del self._judges[earlier]
                self._judges[key] = Judge(self.resources.chat_model(config, home), own_odds=own_odds)
            return self._judges[key]
