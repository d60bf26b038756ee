"""What every benchmark script shares: a quiet real Prefect engine, and a scratch workspace."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def flow_engine() -> Iterator[None]:
    """Flows run on Prefect's temporary test server, logging warnings only."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@contextmanager
def scratch_workspace(prefix: str) -> Iterator[Path]:
    """A temporary folder, removed afterwards, with flows running as in flow_engine()."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        with flow_engine():
            yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def timed(function, *args, **kwargs):
    """(function's result, seconds it took)."""
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started
