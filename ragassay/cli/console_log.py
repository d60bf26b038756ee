"""The console handler of Prefect's logging for `ragassay` commands: Prefect's own, less the
records that carry a RagassayError or an environment problem. Those are expected failures (a
missing collection, a bad file, a read-only or full disk) that the command reports as one line; Prefect would print each with its traceback, twice.
The run's log (the Prefect UI) keeps them: only the console is filtered. `--debug` shows them."""

from __future__ import annotations

import logging

from prefect.logging.handlers import PrefectConsoleHandler

from ragassay.environment import environment
from ragassay.errors import RagassayError, environment_problem


class ConsoleHandler(PrefectConsoleHandler):
    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        expected = isinstance(error, RagassayError) or (error is not None and environment_problem(error) is not None)
        if expected and not environment().debug:
            return False
        return super().filter(record)
