"""A chat model behind an OpenAI-compatible /v1/chat/completions endpoint (llama.cpp's server,
vLLM, Ollama), with bounded retries of what may pass on a later try."""

from __future__ import annotations

import json
import logging
import math
import threading
import time

import httpx

from ragassay.http_bounds import ResponseTooLarge, bounded_content, endpoint_path, finite_number, not_found_hint
from ragassay.llm.catalog import ModelError
from ragassay.llm.completion import Completion, OptionProbabilities, completion_from_response, normalized_options
from ragassay.llm.threads import process_share
from ragassay.redaction import redact

# Waits before the second and third attempt of a model-server call that failed in a way worth
# repeating (exponential backoff).
RETRY_DELAYS = (1.0, 4.0)
CHAT_ENDPOINT = "/v1/chat/completions"


class ModelServerError(ModelError):
    """A model server could not be reached or failed on its side (worth retrying later)."""


class ModelResponseTooLarge(ModelError):
    """One response of a served model was larger than MAX_RESPONSE_BYTES (decompressed): that
    call's outcome (a verdict unreadable, a question's error row), never the batch's."""


class OpenAICompatibleModel:
    """A chat model behind an OpenAI-compatible /v1/chat/completions endpoint."""

    def __init__(
        self,
        model_id: str,
        url: str,
        model: str,
        api_key: str | None,
        timeout: float,
        context_size: int,
        concurrency: int = 1,
    ):
        # This process's share (a Dask LocalCluster's workers split the setting).
        concurrency = process_share(concurrency)
        # httpx.Client is thread-safe; its pool keeps a connection per call in flight.
        self._client = httpx.Client(
            base_url=url.rstrip("/"),
            timeout=timeout,
            headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )
        self._model = model
        self._url = url
        self._chat_path = endpoint_path(url, CHAT_ENDPOINT)
        self._timeout = timeout
        self.model_id = model_id
        self.context_size = context_size
        self.concurrency = concurrency
        # However many threads its callers fan out (nested: answers, then passages), at most
        # `concurrency` requests are in flight; the others wait here, not in the server's queue.
        self._slots = threading.BoundedSemaphore(concurrency)

    def complete(self, messages, schema, max_tokens, temperature, seed) -> Completion:
        body = {
            "model": self._model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": seed,
        }
        if schema is not None:
            # llama.cpp's server reads `schema` beside json_object; vLLM and OpenAI read json_schema.
            body["response_format"] = {"type": "json_object", "schema": schema}
        started = time.perf_counter()
        payload = self._post(body)
        return completion_from_response(payload, started)

    def _post(self, body: dict) -> dict:
        """One chat request: each attempt bounded by the client's timeout (timeout_seconds), and
        repeated after RETRY_DELAYS on what is worth repeating (no connection, a timeout, 429, a
        5xx); a ModelServerError after the last, a ModelError at once for anything else."""
        for attempt, delay in enumerate((*RETRY_DELAYS, None), start=1):
            try:
                with self._slots:
                    # The whole request within the timeout, its body within MAX_RESPONSE_BYTES.
                    deadline = time.monotonic() + self._timeout
                    with self._client.stream("POST", self._chat_path, json=body) as response:
                        content = bounded_content(response, deadline)
                if content is None:
                    raise ModelServerError(
                        f"chat endpoint {self.model_id} sent no whole response in {self._timeout:g} s"
                    )
                if response.status_code == 429 or response.status_code >= 500:
                    raise ModelServerError(
                        f"chat endpoint {self.model_id} answered {response.status_code}: "
                        f"{content[:200].decode('utf-8', errors='replace')}"
                    )
                if response.status_code == 404:
                    raise ModelError(
                        redact(
                            f"chat endpoint {self.model_id} answered 404: "
                            f"{content[:200].decode('utf-8', errors='replace')}{not_found_hint(self._url, CHAT_ENDPOINT)}"
                        )
                    )
                response.raise_for_status()
                return json.loads(content)
            except ResponseTooLarge as error:
                raise ModelResponseTooLarge(
                    f"too_large: chat endpoint {self.model_id}'s response is {error}"
                ) from error
            except (httpx.TransportError, ModelServerError) as error:
                if delay is None:
                    raise ModelServerError(
                        f"chat endpoint {self.model_id} failed after {attempt} attempts: {redact(str(error))}"
                    ) from error
                logging.getLogger("ragassay").warning(
                    "chat endpoint %s: %s; retrying in %gs", self.model_id, redact(str(error)), delay
                )
                time.sleep(delay)
            except (httpx.HTTPError, json.JSONDecodeError) as error:
                raise ModelError(f"chat endpoint {self.model_id} failed: {redact(str(error))}") from error
        raise AssertionError("unreachable")

    def count_tokens(self, text: str) -> int:
        # The endpoint's tokenizer is not known here; four characters a token is the usual rule.
        return max(1, len(text) // 4)

    def option_probabilities(self, messages, options) -> OptionProbabilities:
        """The options' probabilities from the endpoint's top log-probabilities of the first token
        (`logprobs` with `top_logprobs` 20: llama.cpp's server, vLLM and OpenAI return them)."""
        body = {
            "model": self._model,
            "messages": messages,
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": 20,
        }
        started = time.perf_counter()
        payload = self._post(body)
        try:
            top = payload["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        except (KeyError, IndexError, TypeError) as error:
            raise ModelError(
                f"chat endpoint {self.model_id} gave no top log-probabilities: {redact(str(error))}"
            ) from error
        completion = completion_from_response(payload, started)
        mass = dict.fromkeys(options, 0.0)
        for entry in top if isinstance(top, list) else [top]:
            token = entry.get("token") if isinstance(entry, dict) else None
            logprob = finite_number(entry.get("logprob")) if isinstance(entry, dict) else None
            if not isinstance(token, str) or logprob is None or logprob > 0:
                raise ModelError(
                    f"chat endpoint {self.model_id} sent a top log-probability that is not a token with a finite "
                    f"logprob <= 0: {str(entry)[:120]!r}"
                )
            for option, spellings in options.items():
                # A top token counts for an option when it is the start of one of its spellings.
                if token.strip() and any(spelling.startswith(token) for spelling in spellings):
                    mass[option] += math.exp(logprob)
                    break
        return normalized_options(mass, completion)
