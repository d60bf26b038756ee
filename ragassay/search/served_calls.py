"""Calls to a model served over HTTP that ragassay does not run (an embedding model, a reranker):
the settings they share and one POST with the rules every such call follows (http_bounds).

`concurrency` requests in flight, each within `timeout_seconds` and MAX_RESPONSE_BYTES, repeated
after RETRY_DELAYS (or the server's Retry-After, at most MAX_RETRY_AFTER) on no connection, a
timeout, 429 or a 5xx; secrets in headers only from ${VAR}, masked with the URL's credentials in
every message. A call marked `repeat_refused=False` (a first probe) is not repeated on a refused
connection: a server that is down costs milliseconds, not a retry storm.
"""

from __future__ import annotations

import json
import logging
import threading
import time

import httpx

from ragassay.errors import RagassayError
from ragassay.http_bounds import (
    ResponseTooLarge,
    bounded_content,
    endpoint_path,
    header_secrets,
    not_found_hint,
    resolved_headers,
    retry_after_seconds,
)
from ragassay.llm.threads import process_share
from ragassay.redaction import mask_secrets, redact
from ragassay.search.served_settings import ServedModelSettings

# Waits before the second, third and fourth attempt of a call that failed in a way worth repeating.
RETRY_DELAYS = (1.0, 2.0, 4.0)
# The longest Retry-After honoured: a server asking for more is treated as down.
MAX_RETRY_AFTER = 60.0


class _Repeatable(Exception):
    """A failure worth repeating after a wait (a timeout, 429, a 5xx)."""


class ServedCalls:
    """POSTs to one served model. what: how messages name the server ("embedding server");
    error: the typed error a failed call raises."""

    def __init__(self, settings: ServedModelSettings, what: str, error: type[RagassayError]):
        self.settings, self.what, self.error = settings, what, error
        self._secrets = header_secrets(settings.headers)
        # This process's share of the setting (a Dask LocalCluster's workers split it).
        self.concurrency = process_share(settings.concurrency)
        self._client = httpx.Client(
            base_url=settings.url.rstrip("/"),
            timeout=settings.timeout_seconds,
            headers=resolved_headers(settings.headers, f"{what} {settings.model!r}"),
            limits=httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency),
        )
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self.calls = 0  # requests answered, for the tests and benchmarks that count what was asked

    def named(self, text: str) -> str:
        """text with the URL's credentials and the headers' secrets masked."""
        return mask_secrets(redact(text), self._secrets) if self._secrets else redact(text)

    def where(self, label: str) -> str:
        return f"{self.what} {redact(self.settings.url)} ({self.settings.model}), {label}"

    def post(self, endpoint: str, body: dict, label: str, repeat_refused: bool = True):
        """The JSON a request answers, repeated on what may pass later; `error` naming the server
        and the request (label) otherwise."""
        where = self.where(label)
        for attempt, delay in enumerate((*RETRY_DELAYS, None), start=1):
            wait = delay
            try:
                with self._slots:
                    deadline = time.monotonic() + self.settings.timeout_seconds
                    with self._client.stream("POST", self._path(endpoint), json=body) as response:
                        content = bounded_content(response, deadline)
                if content is None:
                    raise _Repeatable(f"no whole response in {self.settings.timeout_seconds:g} s")
                if response.status_code == 429 or response.status_code >= 500:
                    asked_wait = retry_after_seconds(response.headers.get("Retry-After"))
                    if asked_wait is not None and delay is not None:
                        if asked_wait > MAX_RETRY_AFTER:
                            raise self.error(
                                f"{where}: answered {response.status_code} asking to wait {asked_wait:g} s "
                                f"(more than {MAX_RETRY_AFTER:g} s)"
                            )
                        wait = asked_wait
                    raise _Repeatable(f"answered {response.status_code}: {content[:200].decode(errors='replace')}")
                if response.status_code >= 400:
                    hint = not_found_hint(self.settings.url, endpoint) if response.status_code == 404 else ""
                    raise self.error(
                        self.named(
                            f"{where}: answered {response.status_code}: {content[:300].decode(errors='replace')}{hint}"
                        )
                    )
                self.calls += 1
                return json.loads(content)
            except ResponseTooLarge as error:
                raise self.error(f"{where}: the response is {error}") from error
            except json.JSONDecodeError as error:
                raise self.error(f"{where}: the response is not JSON ({error})") from error
            except httpx.ConnectError as error:
                if not repeat_refused or delay is None:
                    raise self.error(
                        self.named(f"{where}: cannot connect ({error}) after {attempt} attempt(s)")
                    ) from error
                self._log(where, error, wait)
            except (httpx.TransportError, _Repeatable) as error:
                if delay is None:
                    raise self.error(self.named(f"{where}: failed after {attempt} attempts: {error}")) from error
                self._log(where, error, wait)
            time.sleep(wait)
        raise AssertionError("unreachable")

    def _path(self, endpoint: str) -> str:
        """endpoint as the client calls it: after a base URL given as `http://host:port/v1`, the
        endpoint's own `/v1` is not repeated (http_bounds.api_base)."""
        return endpoint_path(self.settings.url, endpoint)

    def _log(self, where: str, error: Exception, wait: float) -> None:
        logging.getLogger("ragassay").warning("%s", self.named(f"{where}: {error}; retrying in {wait:g}s"))

    def close(self) -> None:
        self._client.close()
