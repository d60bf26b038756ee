"""Reading an HTTP response within bounds: its bytes once decompressed (a 2 MB gzip body can
inflate to 2 GB), and the wall time of the whole call (a server sending a byte a second passes
every per-read timeout); and the rules of headers and waits those calls share (secrets from
${VAR}, which header names hold secrets, Retry-After). Used by every call ragassay makes to a
server it does not run: a system under test, a served chat or embedding model."""

from __future__ import annotations

import email.utils
import math
import os
import re
import time
from datetime import UTC, datetime

from ragassay.errors import ConfigError

# A response's bytes once decompressed: far above any ranking, answer or completion a server
# returns (a 1,000-id ranking with its passages is ~1 MB), far below what harms the machine.
MAX_RESPONSE_BYTES = 20_000_000


def finite_number(value) -> float | None:
    """A number sent from outside (a server's response, a system's records) as a float, or None
    when it is not one a float holds: a bool (JSON true is no number), a string, NaN, an infinity,
    or an integer too large for a float (a 401-digit score would raise OverflowError where it is
    used, and lose every result computed before it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def endpoint_path(url: str, endpoint: str) -> str:
    """The path a client whose base URL is `url` calls for `endpoint`: the endpoint, without its
    leading `/v1` when the base URL already ends in `/v1` (the OpenAI SDK, LangChain, vLLM and
    llama.cpp document a base URL as `http://host:port/v1`; ragassay's settings take either)."""
    if endpoint.startswith("/v1/") and url.rstrip("/").endswith("/v1"):
        return endpoint[len("/v1") :]
    return endpoint


def not_found_hint(url: str, endpoint: str) -> str:
    """What a 404 from `url` + `endpoint` says beside the status: the URL called and the forms
    expected (unmasked: the caller masks the message's credentials)."""
    called = f"{url.rstrip('/')}{endpoint_path(url, endpoint)}"
    return (
        f" (called {called}; give the server's base URL, such as http://host:port or http://host:port/v1, "
        f"and ragassay appends {endpoint})"
    )


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


# ${VAR} in a header value: taken from the environment when the call is made, never written down.
HEADER_VARIABLE = re.compile(r"\$\{(\w+)\}")
# Header names whose values are secrets even when no setting names them.
SECRET_LOOKING_HEADER = re.compile(r"auth|key|token|secret|cookie|password|signature", re.IGNORECASE)


def resolved_headers(headers: dict[str, str], owner: str = "the system") -> dict[str, str]:
    """Headers with each ${VAR} taken from the environment; a ConfigError naming a variable that
    is not set (its value is never shown). owner: whose headers, for the message."""
    missing = sorted({v for value in headers.values() for v in HEADER_VARIABLE.findall(value)} - set(os.environ))
    if missing:
        raise ConfigError(f"{owner}'s headers name ${{{missing[0]}}}, which is not set in the environment")
    return {name: HEADER_VARIABLE.sub(lambda match: os.environ[match[1]], value) for name, value in headers.items()}


def header_secrets(templates: dict[str, str], is_secret=SECRET_LOOKING_HEADER.search) -> frozenset[str]:
    """The values no text may show: each ${VAR}'s value in the headers, and the resolved value of
    every secret header (is_secret(name)), with its scheme word (`Bearer x`) and without."""
    secrets: set[str] = set()
    for name, template in templates.items():
        secrets |= {os.environ[variable] for variable in HEADER_VARIABLE.findall(template) if variable in os.environ}
        if is_secret(name):
            value = HEADER_VARIABLE.sub(lambda match: os.environ.get(match[1], ""), template)
            secrets |= {value, value.partition(" ")[2]}
    return frozenset(secret for secret in secrets if secret)


def retry_after_seconds(value: str | None) -> float | None:
    """The seconds a Retry-After header asks to wait: a number of seconds or an HTTP date; None
    when absent or unreadable (the backoff applies)."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
