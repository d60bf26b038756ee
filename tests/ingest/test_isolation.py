"""Extraction in a worker process: a time bound per file, a memory cap, and a worker that never
outlives the ingest."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from ragassay.ingest.extraction import ExtractionError
from ragassay.ingest.isolation import IsolatedExtractor


def slow_html() -> bytes:
    """A page nested 1000 deep (under the depth limit) 400 times over: lexbor needs over a second."""
    block = "<div>" * 1000 + "x" + "</div>" * 1000
    return ("<html><body>" + block * 400 + "</body></html>").encode()


def test_a_file_past_the_time_bound_is_rejected_and_the_next_file_is_read():
    with IsolatedExtractor(timeout=0.3) as extract:
        with pytest.raises(ExtractionError) as slow:
            extract(slow_html(), "slow.html")
        assert slow.value.reason == "too_slow" and "longer than 0.3s" in slow.value.detail
        assert extract(b"Hive 7 was inspected on day 3.", "good.txt").text == "Hive 7 was inspected on day 3."


def test_the_worker_reads_files_exactly_as_the_readers_do(tmp_path):
    from ragassay.ingest.extraction import extract_text

    sample = Path(__file__).resolve().parents[2] / "data" / "sample" / "corpus"
    files = sorted(p for p in sample.rglob("*") if p.is_file() and not p.name.startswith("."))
    with IsolatedExtractor() as extract:
        for path in files:
            data = path.read_bytes()
            assert extract(data, path.name) == extract_text(data, path.name), path.name
        with pytest.raises(ExtractionError) as bad:
            extract(b"{not json", "bad.json")
        assert bad.value.reason == "unreadable" and "invalid JSON" in bad.value.detail


def test_a_file_needing_more_memory_than_the_cap_is_too_large_and_the_next_file_is_read():
    # 6 million empty objects: about 450 MB once parsed, over a 400 MB address-space cap.
    huge = ("[" + ",".join(["{}"] * 6_000_000) + "]").encode()
    with IsolatedExtractor(memory_bytes=400 * 1024 * 1024) as extract:
        with pytest.raises(ExtractionError) as too_big:
            extract(huge, "huge.json")
        assert too_big.value.reason == "too_large" and "RAGASSAY_EXTRACT_MEMORY_MB" in too_big.value.detail
        assert extract(b'{"hive": 7}', "small.json").text == '{"hive": 7}'


def test_a_worker_killed_between_files_is_replaced_and_the_next_file_is_read():
    others = set(psutil.Process().children())
    with IsolatedExtractor() as extract:
        assert extract(b"first", "a.txt").text == "first"
        # As the OOM killer or a user would, while no file is being read: the worker is the child
        # process the first file started.
        (worker,) = set(psutil.Process().children()) - others
        worker.kill()
        worker.wait(timeout=10)
        assert extract(b"second", "b.txt").text == "second"
