"""Embeddings from a served model: OpenAI's `/v1/embeddings` (Text Embeddings Inference, vLLM,
llama.cpp's server with `--embeddings`, OpenAI) or Ollama's `/api/embed`.

A served model is an index setting like the bundled one (`ServedEmbeddingModel`). Its id, which
keys the embedding cache and which a collection's manifest remembers, is the backend, the URL and
the model as the server reports it, with the vector width: `openai:all-minilm@http://host:8080/384`.
A search refuses an index built by another id (search/collections.py), so one index never holds
two models' vectors.

Calls follow search/served_calls.py (concurrency, bounds, retries, secrets; the first call, the
probe that learns the model's id and width, is not repeated on a refused connection). A response
of the wrong length, width or type is refused naming its request (the texts it held).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ragassay.errors import EmbeddingModelError
from ragassay.redaction import redact
from ragassay.search.served_calls import ServedCalls
from ragassay.search.served_settings import ServedEmbeddingModel

PROBE_TEXT = "ragassay embedding probe"
# A vector shorter than this has no direction a cosine can read (an all-zero vector, or one a
# float32 rounds to zero once normalized).
MIN_VECTOR_NORM = 1e-12


class ServedEmbeddingClient:
    """Calls to one served embedding model: texts in, float32 unit vectors out."""

    def __init__(self, settings: ServedEmbeddingModel):
        self.settings = settings
        self._calls = ServedCalls(settings, "embedding server", EmbeddingModelError)

    @property
    def calls(self) -> int:
        """Requests answered, for the tests and benchmarks that count what was asked."""
        return self._calls.calls

    def probe(self) -> tuple[str, np.ndarray]:
        """The model's name as the server reports it and its unit vector of PROBE_TEXT (its width
        is the model's), from one call that is not repeated when the server refuses the connection;
        checked as every vector is (a finite, non-zero list of numbers)."""
        reported, rows = self._call([PROBE_TEXT], "the probe", repeat_refused=False)
        width = len(rows[0]) if len(rows) == 1 and isinstance(rows[0], list) else -1
        [vector] = _checked(rows, 1, width, self._calls.where("the probe"))
        return reported, vector / np.linalg.norm(vector)

    def embed_batches(
        self, texts: list[str], dimension: int, on_progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        """Unit vectors of texts, batch_size a request, this process's share of `concurrency`
        requests at once (served_calls.ServedCalls.concurrency); each row checked to be `dimension` numbers."""
        size = self.settings.batch_size
        starts = list(range(0, len(texts), size))
        vectors = np.empty((len(texts), dimension), dtype=np.float32)
        done, lock = 0, threading.Lock()

        def one(start: int) -> None:
            nonlocal done
            asked = texts[start : start + size]
            label = f"request for texts {start + 1}-{start + len(asked)}"
            _, rows = self._call(asked, label)
            vectors[start : start + len(asked)] = _checked(rows, len(asked), dimension, self._calls.where(label))
            with lock:
                done += len(asked)
                if on_progress is not None:
                    on_progress(done, len(texts))

        with ThreadPoolExecutor(max_workers=self._calls.concurrency) as pool:
            list(pool.map(one, starts))
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def _call(self, asked: list[str], label: str, repeat_refused: bool = True) -> tuple[str, list]:
        """One request: (the model the server reports, its vectors as sent)."""
        body: dict = {"model": self.settings.model, "input": asked}
        if self.settings.backend == "openai":
            body["encoding_format"] = "float"
            if self.settings.dimensions is not None:
                body["dimensions"] = self.settings.dimensions
        payload = self._calls.post(self.settings.endpoint, body, label, repeat_refused)
        return _read(payload, self.settings, self._calls.where(label))

    def close(self) -> None:
        self._calls.close()


def _read(payload, settings: ServedEmbeddingModel, where: str) -> tuple[str, list]:
    """(model reported, vectors in input order) from an OpenAI or Ollama response."""
    try:
        if settings.backend == "openai":
            rows = _in_request_order(payload["data"], where)
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


def _in_request_order(data, where: str) -> list:
    """An OpenAI response's `data` items' embeddings in the order of the request's texts, each
    placed by its `index`; EmbeddingModelError when the indices are not each position of the
    request once (a repeated, missing or non-integer index would put vectors on the wrong texts)."""
    if not isinstance(data, list):
        raise EmbeddingModelError(f"{where}: the response's data is not a list")
    indices = [item.get("index") if isinstance(item, dict) else None for item in data]
    if any(isinstance(i, bool) or not isinstance(i, int) for i in indices) or sorted(indices) != list(range(len(data))):
        shown = ", ".join(map(repr, indices[:8])) + (", ..." if len(indices) > 8 else "")
        raise EmbeddingModelError(
            f"{where}: the data items' indices [{shown}] are not the request's positions 0-{len(data) - 1}, each "
            "once: the vectors cannot be put on their texts"
        )
    return [item["embedding"] for item in sorted(data, key=lambda item: item["index"])]


def _checked(rows: list, count: int, dimension: int, where: str) -> np.ndarray:
    """rows as a (count, dimension) float32 array; EmbeddingModelError naming the request (where)
    when the server sent another number of vectors, another width, anything but finite numbers,
    or a vector a cosine cannot use (all zeros: it has no direction)."""
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
    array = array.astype(np.float32)
    norms = np.linalg.norm(array, axis=1)
    unusable = np.flatnonzero(~np.isfinite(norms) | (norms < MIN_VECTOR_NORM))
    if unusable.size:
        raise EmbeddingModelError(
            f"{where}: {unusable.size} of {count} vectors have no direction (length {norms[unusable[0]]:.3g}, text "
            f"{unusable[0] + 1} of the request first): the server's error, which a cosine cannot use"
        )
    return array


def probe_drift(indexed: list[float], now: np.ndarray) -> float:
    """How far the probe text's vector moved since the index was built: 1 - cosine of the two."""
    before = np.asarray(indexed, dtype=np.float64)
    return float(1.0 - before @ now.astype(np.float64) / (np.linalg.norm(before) * np.linalg.norm(now)))


def served_model_id(settings: ServedEmbeddingModel, reported: str, dimension: int) -> str:
    """The id that keys the embedding cache and the manifest: backend, model as reported, URL
    (credentials in it masked: the id is logged), width."""
    return f"{settings.backend}:{reported}@{redact(settings.url.rstrip('/'))}/{dimension}"
