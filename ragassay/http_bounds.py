"""Reading an HTTP response within bounds: its bytes once decompressed (a 2 MB gzip body can
inflate to 2 GB), and the wall time of the whole call (a server sending a byte a second passes
every per-read timeout). Used by every call ragassay makes to a server it does not run: a
system under test, a served chat model."""

from __future__ import annotations

import time

# A response's bytes once decompressed: far above any ranking, answer or completion a server
# returns (a 1,000-id ranking with its passages is ~1 MB), far below what harms the machine.
MAX_RESPONSE_BYTES = 20_000_000


class ResponseTooLarge(Exception):
    """A response over its byte bound, stopped before it filled memory."""


def bounded_content(response, deadline: float, limit: int = MAX_RESPONSE_BYTES) -> bytes | None:
    """A streamed httpx response's bytes, decompressed, read while the call's time lasts (None
    once time.monotonic() passes `deadline`) and up to `limit` bytes (ResponseTooLarge past it)."""
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(f"over {limit:,} bytes")
        if time.monotonic() > deadline:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
