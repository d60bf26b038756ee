"""Embeddings from a served model: OpenAI's `/v1/embeddings` (Text Embeddings Inference, vLLM,
llama.cpp's server with `--embeddings`, OpenAI) or Ollama's `/api/embed`.

A served model is an index setting like the bundled one (`ServedEmbeddingModel`). Its id, which
keys the embedding cache and which a collection's manifest remembers, is the backend, the URL and
the model as the server reports it, with the vector width: `openai:all-minilm@http://host:8080/384`.
A search refuses an index built by another id (search/collections.py), so one index never holds
two models' vectors.

Calls follow the rules of every call ragassay makes to a server it does not run (http_bounds):
`concurrency` requests in flight (batch_size texts each), each call within `timeout_seconds` and MAX_RESPONSE_BYTES,
repeated after RETRY_DELAYS (or the server's Retry-After, at most MAX_RETRY_AFTER) on no
connection, a timeout, 429 or a 5xx; secrets in headers only from ${VAR}, masked in every message.
A response of the wrong length, width or type is refused naming its request (the texts it held). The first call (the
probe that learns the model's id and width) is not repeated on a refused connection: a server
that is down costs milliseconds, not a retry storm.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import httpx
import numpy as np
from pydantic import Field, field_validator

from ragassay.errors import EmbeddingModelError
from ragassay.fields import Frozen
from ragassay.http_bounds import (
    HEADER_VARIABLE,
    SECRET_LOOKING_HEADER,
    ResponseTooLarge,
    bounded_content,
    header_secrets,
    resolved_headers,
    retry_after_seconds,
)
from ragassay.redaction import mask_secrets, redact

# Waits before the second, third and fourth attempt of a call that failed in a way worth repeating.
RETRY_DELAYS = (1.0, 2.0, 4.0)
# The longest Retry-After honoured: a server asking for more is treated as down.
MAX_RETRY_AFTER = 60.0
PROBE_TEXT = "ragassay embedding probe"


class ServedEmbeddingModel(Frozen):
    """An embedding model behind an HTTP API. backend `openai`: POST {url}/v1/embeddings with
    {model, input}; `ollama`: POST {url}/api/embed with {model, input}. dimensions: the vector
    width expected (asked of an `openai` server as `dimensions`, for models that can shorten their
    vectors); a response of another width is refused. Header values that look secret
    (Authorization, X-Api-Key, ...) must take the secret from the environment (`Bearer ${VAR}`):
    a collection remembers its model's settings, and a secret written into them would be stored."""

    backend: Literal["openai", "ollama"]
    url: str = Field(pattern=r"^https?://", description="The server's base URL (without /v1/embeddings).")
    model: str = Field(min_length=1, description="The model name the server knows.")
    dimensions: int | None = Field(None, ge=1, le=65536, description="Vector width expected (and asked for).")
    batch_size: int = Field(32, ge=1, le=2048, description="Texts per request.")
    concurrency: int = Field(4, ge=1, le=64, description="Requests in flight at once.")
    timeout_seconds: float = Field(60.0, gt=0, le=3600, description="The most one request may take.")
    headers: dict[str, str] = Field(default_factory=dict, description="Request headers; secrets as ${VAR}.")

    @field_validator("headers")
    @classmethod
    def _secrets_from_environment(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if SECRET_LOOKING_HEADER.search(name) and not HEADER_VARIABLE.search(value):
                raise ValueError(
                    f"header {name!r} holds a secret written into the settings: write it as ${{VARIABLE}} "
                    f"(e.g. 'Bearer ${{EMBEDDING_API_KEY}}') and set the variable (an index remembers these settings)"
                )
        return headers

    @property
    def endpoint(self) -> str:
        return "/v1/embeddings" if self.backend == "openai" else "/api/embed"

    def secrets(self) -> frozenset[str]:
        return header_secrets(self.headers)


def served_model_of(value) -> ServedEmbeddingModel | None:
    """The served model an `embedding_model` setting names (a mapping, its JSON text or the model
    itself), or None for a local one (a name or a folder)."""
    if isinstance(value, ServedEmbeddingModel):
        return value
    if isinstance(value, str) and value.lstrip().startswith("{"):
        value = json.loads(value)
    return ServedEmbeddingModel.model_validate(value) if isinstance(value, dict) else None


class ServedEmbeddingClient:
    """Calls to one served embedding model: texts in, float32 unit vectors out."""

    def __init__(self, settings: ServedEmbeddingModel):
        self.settings = settings
        self._secrets = settings.secrets()
        self._client = httpx.Client(
            base_url=settings.url.rstrip("/"),
            timeout=settings.timeout_seconds,
            headers=resolved_headers(settings.headers, f"embedding model {settings.model!r}"),
            limits=httpx.Limits(max_connections=settings.concurrency, max_keepalive_connections=settings.concurrency),
        )
        self._slots = threading.BoundedSemaphore(settings.concurrency)
        self.calls = 0  # requests answered, for the tests and benchmarks that count what was asked

    def _named(self, text: str) -> str:
        """text with the URL's credentials and the headers' secrets masked."""
        return mask_secrets(redact(text), self._secrets) if self._secrets else redact(text)

    def probe(self) -> tuple[str, int]:
        """The model's name as the server reports it and its vector width, from one call that is
        not repeated when the server refuses the connection."""
        reported, [vector] = self._call([PROBE_TEXT], "the probe", repeat_refused=False)
        return reported, len(vector)

    def embed_batches(
        self, texts: list[str], dimension: int, on_progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        """Unit vectors of texts, batch_size a request, `concurrency` requests at once; each row
        checked to be `dimension` numbers."""
        size = self.settings.batch_size
        starts = list(range(0, len(texts), size))
        vectors = np.empty((len(texts), dimension), dtype=np.float32)
        done, lock = 0, threading.Lock()

        def one(start: int) -> None:
            nonlocal done
            asked = texts[start : start + size]
            label = f"request for texts {start + 1}-{start + len(asked)}"
            _, rows = self._call(asked, label)
            vectors[start : start + len(asked)] = _checked(rows, len(asked), dimension, label, self.settings)
            with lock:
                done += len(asked)
                if on_progress is not None:
                    on_progress(done, len(texts))

        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            list(pool.map(one, starts))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)

    def _call(self, asked: list[str], label: str, repeat_refused: bool = True) -> tuple[str, list]:
        """One request: (the model the server reports, its vectors as sent), repeated on what may
        pass later; EmbeddingModelError naming the server and the request otherwise."""
        body: dict = {"model": self.settings.model, "input": asked}
        if self.settings.backend == "openai":
            body["encoding_format"] = "float"
            if self.settings.dimensions is not None:
                body["dimensions"] = self.settings.dimensions
        where = f"embedding server {redact(self.settings.url)} ({self.settings.model}), {label}"
        for attempt, delay in enumerate((*RETRY_DELAYS, None), start=1):
            wait = delay
            try:
                with self._slots:
                    deadline = time.monotonic() + self.settings.timeout_seconds
                    with self._client.stream("POST", self.settings.endpoint, json=body) as response:
                        content = bounded_content(response, deadline)
                if content is None:
                    raise _Repeatable(f"no whole response in {self.settings.timeout_seconds:g} s")
                if response.status_code == 429 or response.status_code >= 500:
                    asked = retry_after_seconds(response.headers.get("Retry-After"))
                    if asked is not None and delay is not None:
                        if asked > MAX_RETRY_AFTER:
                            raise EmbeddingModelError(
                                f"{where}: answered {response.status_code} asking to wait {asked:g} s "
                                f"(more than {MAX_RETRY_AFTER:g} s)"
                            )
                        wait = asked
                    raise _Repeatable(f"answered {response.status_code}: {content[:200].decode(errors='replace')}")
                if response.status_code >= 400:
                    raise EmbeddingModelError(
                        self._named(
                            f"{where}: answered {response.status_code}: {content[:300].decode(errors='replace')}"
                        )
                    )
                self.calls += 1
                return _read(json.loads(content), self.settings, where)
            except ResponseTooLarge as error:
                raise EmbeddingModelError(f"{where}: the response is {error}") from error
            except json.JSONDecodeError as error:
                raise EmbeddingModelError(f"{where}: the response is not JSON ({error})") from error
            except httpx.ConnectError as error:
                if not repeat_refused or delay is None:
                    raise EmbeddingModelError(
                        self._named(f"{where}: cannot connect ({error}) after {attempt} attempt(s)")
                    ) from error
                self._log(where, error, wait)
            except (httpx.TransportError, _Repeatable) as error:
                if delay is None:
                    raise EmbeddingModelError(
                        self._named(f"{where}: failed after {attempt} attempts: {error}")
                    ) from error
                self._log(where, error, wait)
            time.sleep(wait)
        raise AssertionError("unreachable")

    def _log(self, where: str, error: Exception, wait: float) -> None:
        logging.getLogger("ragassay").warning("%s", self._named(f"{where}: {error}; retrying in {wait:g}s"))

    def close(self) -> None:
        self._client.close()


class _Repeatable(Exception):
    """A failure worth repeating after a wait (a timeout, 429, a 5xx)."""


def _read(payload, settings: ServedEmbeddingModel, where: str) -> tuple[str, list]:
    """(model reported, vectors in input order) from an OpenAI or Ollama response."""
    try:
        if settings.backend == "openai":
            data = sorted(payload["data"], key=lambda item: item["index"])
            rows = [item["embedding"] for item in data]
        else:
            rows = payload["embeddings"]
        reported = payload.get("model") or settings.model
    except (KeyError, TypeError, AttributeError) as error:
        raise EmbeddingModelError(
            f"{where}: the response has no {'data[].embedding' if settings.backend == 'openai' else 'embeddings'} "
            f"({type(error).__name__}: {error})"
        ) from error
    if not isinstance(rows, list) or not isinstance(reported, str):
        raise EmbeddingModelError(f"{where}: the response's vectors are not a list")
    return reported, rows


def _checked(rows: list, count: int, dimension: int, label: str, settings: ServedEmbeddingModel) -> np.ndarray:
    """rows as a (count, dimension) float32 array; EmbeddingModelError naming the request when the
    server sent another number of vectors, another width, or anything but finite numbers."""
    where = f"embedding server {redact(settings.url)} ({settings.model}), {label}"
    if len(rows) != count:
        raise EmbeddingModelError(f"{where}: {len(rows)} vectors for {count} texts")
    widths = {len(row) if isinstance(row, list) else -1 for row in rows}
    if widths != {dimension}:
        raise EmbeddingModelError(
            f"{where}: vectors of width {sorted(widths)} where the model's is {dimension} (a list of numbers each)"
        )
    array = np.array(rows)  # no dtype: a string or a null in a vector shows as a non-numeric kind
    if array.dtype.kind not in "fi" or not np.isfinite(array).all():
        raise EmbeddingModelError(f"{where}: a vector holds a value that is not a finite number")
    return array.astype(np.float32)


def served_model_id(settings: ServedEmbeddingModel, reported: str, dimension: int) -> str:
    """The id that keys the embedding cache and the manifest: backend, model as reported, URL
    (credentials in it masked: the id is logged), width."""
    return f"{settings.backend}:{reported}@{redact(settings.url.rstrip('/'))}/{dimension}"
