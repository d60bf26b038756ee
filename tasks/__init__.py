"""Prefect tasks: each reads its inputs, calls the library (the `ragassay` package), and writes its
outputs. Flows (flows/) wire them together.

- ingest: find files, extract them a batch a task, store documents and chunks, import BEIR, report.
- index: read the collection, embed the texts the cache lacks a group a task, write the cache,
  build BM25, swap the index in.
- generate_golden: choose the seed, generate questions through the quality gate, log the run.
- eval_retrieval: load golden questions, search them per configuration, score, compare, log.
- eval_answers: load questions, answer, judge, compare pairwise (a task per configuration or
  pair), log.
- run_cases: run a suite of evaluation cases, log it.
- resources: the loaded models, opened collections and judge this worker process shares.

Importing this package also forwards the library's log lines (progress of long steps) to the log
of the Prefect run they happen in, so the Prefect UI shows them.
"""

from __future__ import annotations

import logging

from prefect.exceptions import MissingContextError
from prefect.logging import get_run_logger


class _RunLogForwarder(logging.Handler):
    """Sends a library log line to the current flow or task run's log; outside a run, nothing."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            run_logger = get_run_logger()
        except MissingContextError:
            return
        run_logger.log(record.levelno, record.getMessage())


_library_logger = logging.getLogger("ragassay")
if not any(isinstance(handler, _RunLogForwarder) for handler in _library_logger.handlers):
    _library_logger.addHandler(_RunLogForwarder(logging.INFO))
    _library_logger.setLevel(logging.INFO)
    # The run logger prints the line once; propagating too would print it a second time.
    _library_logger.propagate = False
