"""What every benchmark script shares: a quiet real Prefect engine, a scratch workspace, and the
default judge served by llama-cpp-python's OpenAI-compatible server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


def start_judge_server(port: int, *options: str, timeout: float = 300) -> subprocess.Popen:
    """`llama_cpp.server` serving the default judge (Qwen2.5-Coder-1.5B Q4_K_M) on 127.0.0.1:port
    with the server's own `options` (`--n_ctx 4096`, `--model_alias judge` ...), once it answers
    /v1/models; SystemExit when it does not within `timeout` seconds."""
    import httpx

    from ragassay.llm.catalog import CATALOG, model_path

    model = model_path(CATALOG["qwen2.5-1.5b"])
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *options,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(1)
    process.terminate()
    raise SystemExit(f"the llama.cpp server did not start within {timeout:g} s")
