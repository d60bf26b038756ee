"""The model layer with real models: SmolLM2 in-process, and the same file behind a real
OpenAI-compatible server (llama-cpp-python's) on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
from pydantic import BaseModel

from ragassay.llm.catalog import ModelError
from ragassay.llm.llama_cpp import smollm2_path
from ragassay.llm.registry import ChatModels, load_chat_model
from ragassay.llm.settings import ChatModelConfig
from ragassay.llm.structured import generate_structured
from tests.helpers import served_process


class Colour(BaseModel):
    colour: str
    confident: bool


@pytest.fixture(scope="module")
def models():
    """One loaded SmolLM2 for the module's tests, released when they are done."""
    loaded = ChatModels()
    yield loaded
    loaded.close()


MESSAGES = [
    {
        "role": "user",
        "content": 'What colour is the sky on a clear day? Reply as JSON {"colour": ..., "confident": ...}.',
    }
]


def test_structured_output_is_validated_and_its_cost_counted(models):
    model = models.get(ChatModelConfig())
    result = generate_structured(model, MESSAGES, Colour, max_tokens=64)
    usage = result.usage
    assert result.ok and isinstance(result.value, Colour) and result.attempts == 1
    assert usage.calls == 1 and usage.prompt_tokens > 0 and usage.completion_tokens > 0 and usage.seconds > 0
    assert models.get(ChatModelConfig()) is model, "a ChatModels loads each model once"


def test_the_same_seed_gives_the_same_output(models):
    model = models.get(ChatModelConfig())
    first = generate_structured(model, MESSAGES, Colour, max_tokens=64, temperature=0.8, seed=11)
    second = generate_structured(model, MESSAGES, Colour, max_tokens=64, temperature=0.8, seed=11)
    assert first.raw == second.raw


def test_output_that_cannot_be_read_after_a_retry_is_returned_as_unparseable(models):
    model = models.get(ChatModelConfig())
    result = generate_structured(model, MESSAGES, Colour, max_tokens=3)  # too short for valid JSON
    usage = result.usage
    assert not result.ok and result.value is None and result.attempts == 2
    assert result.raw and result.error
    assert usage.calls == 2 and usage.unparseable == 1


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"backend": "gguf"}, "needs path"), ({"backend": "openai", "url": "http://127.0.0.1:1"}, "needs url and model")],
)
def test_backends_say_what_they_need(settings, message):
    with pytest.raises(ValueError, match=message):
        ChatModelConfig(**settings)


def test_a_missing_gguf_file_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        load_chat_model(ChatModelConfig(backend="gguf", path=tmp_path / "absent.gguf"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def chat_server():
    """llama-cpp-python's OpenAI-compatible server with SmolLM2, on loopback, stopped after."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()), "--host", "127.0.0.1"]
    # logits_all: top log-probabilities
    command += ["--port", str(port), "--n_ctx", "2048", "--model_alias", "smollm2", "--logits_all", "true"]
    with served_process(command, f"{url}/v1/models", "the llama.cpp server"):
        yield url


def test_openai_compatible_endpoint_gives_validated_structured_output(chat_server):
    model = load_chat_model(ChatModelConfig(backend="openai", url=chat_server, model="smollm2", context_size=2048))
    result = generate_structured(model, MESSAGES, Colour, max_tokens=64)
    usage = result.usage
    assert result.ok and isinstance(result.value, Colour)
    assert model.model_id == f"openai:smollm2@{chat_server}"
    assert usage.calls == 1 and usage.completion_tokens > 0


@pytest.mark.slow
def test_an_unreachable_endpoint_is_a_model_error_after_retries():
    from ragassay.llm.openai_server import RETRY_DELAYS, ModelServerError

    model = load_chat_model(
        ChatModelConfig(backend="openai", url=f"http://127.0.0.1:{free_port()}", model="none", timeout_seconds=5)
    )
    with pytest.raises(ModelServerError, match=f"failed after {len(RETRY_DELAYS) + 1} attempts"):
        model.complete(MESSAGES, None, 8, 0.0, 0)
    assert issubclass(ModelServerError, ModelError)


def test_a_server_error_is_retried_and_a_client_error_is_not():
    """A real HTTP server on loopback that fails with 503 once, then answers; a 400 is not retried."""
    import http.server
    import json
    import threading

    statuses = [503, 200, 400]
    requests = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            status = statuses.pop(0)
            body = json.dumps(
                {"choices": [{"message": {"content": "blue"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
            )
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        model = load_chat_model(
            ChatModelConfig(
                backend="openai", url=f"http://127.0.0.1:{server.server_port}", model="m", timeout_seconds=5
            )
        )
        assert model.complete(MESSAGES, None, 8, 0.0, 0).text == "blue"
        assert len(requests) == 2, "the 503 was retried once"
        with pytest.raises(ModelError, match="failed") as raised:
            model.complete(MESSAGES, None, 8, 0.0, 0)
        assert type(raised.value) is ModelError and len(requests) == 3, "a 400 is the caller's fault: no retry"
    finally:
        server.shutdown()


def test_the_default_thread_count_is_the_usable_cores_whatever_the_load_at_that_moment(monkeypatch):
    """Issue 58, case 8: a model loaded while the machine was busy for a moment kept one thread of
    an idle machine for a whole evaluation. The default is the cores the process may use;
    RAGASSAY_MODEL_THREADS (a Dask worker's, or this suite's worker's share) is the answer when set."""
    from ragassay.llm.threads import default_threads

    monkeypatch.delenv("RAGASSAY_MODEL_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)  # until the spinning process is runnable
        assert default_threads() == cores
    finally:
        busy.kill()
        busy.wait()
    monkeypatch.setenv("RAGASSAY_MODEL_THREADS", "3")
    assert default_threads() == 3
