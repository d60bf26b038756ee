"""Helpers shared by several test modules."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ragassay.config import DEFAULT_EMBEDDING_MODEL, ChunkingConfig
from ragassay.index.build import build_index
from ragassay.ingest.documents import Chunker
from ragassay.ingest.files import ingest_files
from ragassay.resources import Resources
from ragassay.search.ranking import SearchHit
from ragassay.search.run import run_search
from ragassay.search.settings import SearchSettings

# One embedding model and the opened collections for the whole session, as a worker process keeps
# them; a collection changed on disk is opened again (OpenCollections keys on the files).
SESSION_RESOURCES = Resources()


DEFAULT_CHUNKING = ChunkingConfig()


def ingest(
    home: Path,
    collection: str,
    paths: tuple[Path, ...],
    chunk_size: int = DEFAULT_CHUNKING.chunk_size,
    chunk_overlap: int = DEFAULT_CHUNKING.chunk_overlap,
):
    """What `ragassay ingest` does (with its default chunking), through the library in this process
    (no Prefect)."""
    return ingest_files(home, collection, paths, Chunker(chunk_size, chunk_overlap))


def index(home: Path, collection: str):
    """What `ragassay index` does, through the library in this process, with the session's
    embedding model."""
    return build_index(home, collection, SESSION_RESOURCES.embedders.get, DEFAULT_EMBEDDING_MODEL)


def build_collection(
    home: Path,
    collection: str,
    paths: tuple[Path, ...],
    chunk_size: int = DEFAULT_CHUNKING.chunk_size,
    chunk_overlap: int = DEFAULT_CHUNKING.chunk_overlap,
) -> None:
    """A collection ingested and indexed through the library (the flows' own tests run the flows)."""
    ingest(home, collection, paths, chunk_size, chunk_overlap)
    index(home, collection)


def search_hits(home: Path, collections: list[str], query: str, k: int = 10, **settings) -> list[SearchHit]:
    """The hits `ragassay search` returns with these settings."""
    return run_search(SESSION_RESOURCES, home, collections, query, SearchSettings(**settings), k).hits


def report_of(flow_object, *args, **kwargs):
    """A flow's report, also when its flow run ended Failed on a failed assertion (the run fails
    only after everything is logged; the report is what the command prints): the way the CLI
    reads it (cli/common.run_flow)."""
    from prefect.exceptions import FailedRun

    from flows.finished import take

    take(flow_object.name)
    try:
        return flow_object(*args, **kwargs)
    except FailedRun:
        report = take(flow_object.name)
        assert report is not None, "a flow that failed on its verdict keeps its report"
        return report


def flow_run_outcome(flow_run_id: str):
    """A flow run as Prefect's API has it: its final state, and its artifacts by key (a table's
    rows parsed from JSON, a Markdown artifact's text)."""
    import json

    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        state = client.read_flow_run(flow_run_id).state
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    return state, {a.key: json.loads(a.data) if a.type == "table" else a.data for a in artifacts}


@contextlib.contextmanager
def served_process(command: list[str], ready_url: str, what: str, seconds: float = 120):
    """A server process started by a test, yielded once ready_url answers 200, stopped after."""
    import subprocess
    import time

    import httpx
    import pytest

    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if httpx.get(ready_url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            pytest.fail(f"{what} did not start within {seconds:g} s")
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)
