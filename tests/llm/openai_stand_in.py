"""A small OpenAI-compatible chat server (stdlib http.server on loopback) whose answers and top
log-probabilities are a real in-process GGUF model's: llama-cpp-python's own
create_chat_completion, one call at a time as one llama.cpp context allows, after a fixed delay
outside that lock (a served judge's network and queue: calls in flight overlap there, as they do
on a GPU server with several slots). It counts the requests it held at once."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that gave up closed its end


class StandInServer:
    """POST /v1/chat/completions on 127.0.0.1:port, answered by the GGUF model at `path`."""

    def __init__(self, path: Path, delay_seconds: float = 0.0, context_size: int = 2048):
        from llama_cpp import Llama

        # logits_all: the top log-probabilities of the first token, which the judge reads.
        self.llama = Llama(model_path=str(path), n_ctx=context_size, logits_all=True, verbose=False, seed=0)
        self.delay_seconds = delay_seconds
        self.lock = threading.Lock()
        self.counting = threading.Lock()
        self.in_flight = self.peak_in_flight = self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._send({"data": [{"id": "stand-in"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._send(server.answer(body))

            def _send(self, payload: dict):
                data = json.dumps(payload, default=float).encode()  # llama.cpp gives numpy floats
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = _Quiet(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def answer(self, body: dict) -> dict:
        with self.counting:
            self.in_flight += 1
            self.requests += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            time.sleep(self.delay_seconds)
            arguments = {
                "messages": body["messages"],
                "max_tokens": body.get("max_tokens", 16),
                "temperature": body.get("temperature", 0.0),
                "seed": body.get("seed", 0),
            }
            if body.get("logprobs"):
                arguments |= {"logprobs": True, "top_logprobs": body.get("top_logprobs", 20)}
            if body.get("response_format"):
                arguments["response_format"] = body["response_format"]
            with self.lock:
                # A fresh evaluation of every prompt, as a server would give it whatever came before.
                self.llama.reset()
                return self.llama.create_chat_completion(**arguments)
        finally:
            with self.counting:
                self.in_flight -= 1

    def __enter__(self) -> StandInServer:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.llama.close()
