"""A real embedding server around the bundled MiniLM: OpenAI's /v1/embeddings and Ollama's
/api/embed over HTTP, and a reranker on Cohere's /v1/rerank and Text Embeddings Inference's
/rerank (each passage scored by its cosine with the query under the same model), with the faults
a production server shows, switched on by POST /control.

    python tests/embedding_server.py --port 8089 [--api-key KEY] [--model-name all-minilm]

The model is the one `ragassay index` loads in process (search/dense.py), so its vectors are what
the in-process path gives for the same texts. Used by the served-embedding tests and by
benchmarks/bench_served_embeddings.py. Faults (`/control` JSON, each optional):
`fail_next` (n requests answered `status`, 500 by default, with `retry_after` as Retry-After),
`fail_after_texts` (every request once that many texts were embedded is answered 500),
`wrong_width` (vectors one number short), `hang_seconds` (wait before answering),
`model_name` (the model it reports), `rerank_shape` ("shuffled": a reranker's results with an index
missing), `rerank_score` (every reranker score sent as this JSON number, as written: "1" followed
by 400 zeros is a 401-digit integer), `vectors` ("zero": every vector all zeros; "same_index":
every OpenAI data item with index 0, in reverse order; "other_model": each vector's numbers in
reverse order, another model of the same name and width; "noisy": each call's vectors moved by a
new random direction). GET /stats: requests and texts embedded so far, and the most requests it
was answering at once (`most_in_flight`) and is answering now (`in_flight`), and every request
posted to it, failed ones too (`posts`). A request is in flight from its arrival until its answer
starts to be written: once a client can read the answer it may send its next request, which must
not count as one more at once.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def serve(port: int, api_key: str | None, model_name: str) -> None:
    from ragassay.environment import models_dir
    from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, resolve_model

    embedder = Embedder(resolve_model(DEFAULT_MODEL_NAME, models_dir()))
    lock = threading.Lock()
    state = {"requests": 0, "texts": 0, "fail_next": 0, "status": 500, "retry_after": None, "posts": 0}
    state |= {"fail_after_texts": None, "wrong_width": False, "hang_seconds": 0.0, "model_name": model_name}
    state |= {"rerank_shape": "right", "in_flight": 0, "most_in_flight": 0, "vectors": "right", "rerank_score": None}
    noise = np.random.default_rng(0)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        counted = False  # this request is counted in state["in_flight"]

        def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
            self._send_text(status, json.dumps(body), headers)

        def _send_text(self, status: int, text: str, headers: dict | None = None) -> None:
            self._done_answering()
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/stats":
                with lock:
                    counts = {
                        name: state[name] for name in ("requests", "texts", "in_flight", "most_in_flight", "posts")
                    }
                    self._send(200, counts)
            else:
                self._send(200, {"data": [{"id": state["model_name"], "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.path == "/control":
                with lock:
                    state.update(body)
                    if body.get("reset"):
                        state.update(requests=0, texts=0, fail_next=0, status=500, retry_after=None)
                        state.update(fail_after_texts=None, wrong_width=False, rerank_shape="right")
                        state.update(vectors="right", rerank_score=None)
                        state.update(most_in_flight=0)
                self._send(200, {"ok": True})
                return
            if api_key is not None and self.headers.get("Authorization") != f"Bearer {api_key}":
                # Echoes what it was sent, as careless servers do: the client must mask it.
                self._send(401, {"error": f"bad credentials: {self.headers.get('Authorization')}"})
                return
            with lock:
                state["posts"] += 1
                state["in_flight"] += 1
                state["most_in_flight"] = max(state["most_in_flight"], state["in_flight"])
            self.counted = True
            try:
                self._answer(body)
            finally:
                self._done_answering()

        def _done_answering(self) -> None:
            # Before the answer is written (_send_text), not after: the client may already be
            # sending its next request while this thread writes.
            if self.counted:
                self.counted = False
                with lock:
                    state["in_flight"] -= 1

        def _answer(self, body: dict) -> None:
            time.sleep(state["hang_seconds"])
            texts = body.get("input", [])
            texts = [texts] if isinstance(texts, str) else texts
            with lock:
                failing = state["fail_next"] > 0 or (
                    state["fail_after_texts"] is not None and state["texts"] >= state["fail_after_texts"]
                )
                if state["fail_next"] > 0:
                    state["fail_next"] -= 1
            if failing:
                retry = {"Retry-After": str(state["retry_after"])} if state["retry_after"] is not None else {}
                self._send(state["status"], {"error": "busy"}, retry)
                return
            if self.path in ("/v1/rerank", "/rerank"):
                self._rerank(body)
                return
            vectors = embedder.embed(texts)
            if state["vectors"] == "zero":
                vectors = np.zeros_like(vectors)
            elif state["vectors"] == "other_model":
                vectors = vectors[:, ::-1]
            elif state["vectors"] == "noisy":
                vectors = vectors + 0.3 * noise.standard_normal(vectors.shape[1])
            vectors = vectors.tolist()
            if state["wrong_width"]:
                vectors = [vector[:-1] for vector in vectors]
            with lock:
                state["requests"] += 1
                state["texts"] += len(texts)
            if self.path == "/api/embed":
                self._send(200, {"model": state["model_name"], "embeddings": vectors})
            elif self.path == "/v1/embeddings":
                data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
                if state["vectors"] == "same_index":
                    data = [item | {"index": 0} for item in reversed(data)]
                self._send(200, {"object": "list", "model": state["model_name"], "data": data})
            else:
                self._send(404, {"error": f"no route {self.path}"})

        def _rerank(self, body: dict) -> None:
            passages = body.get("documents") if self.path == "/v1/rerank" else body.get("texts")
            scores = (embedder.embed(passages) @ embedder.embed_query(body["query"])).tolist()
            field = "relevance_score" if self.path == "/v1/rerank" else "score"
            results = sorted(({"index": i, field: s} for i, s in enumerate(scores)), key=lambda r: -r[field])
            if state["rerank_shape"] == "shuffled":
                results = results[1:]
            payload = {"model": state["model_name"], "results": results} if field == "relevance_score" else results
            if state["rerank_score"] is not None:
                # A number JSON can hold and a float cannot, written as the server sends it.
                text = json.dumps(payload)
                for result in results:
                    text = text.replace(json.dumps(result[field]), state["rerank_score"], 1)
                self._send_text(200, text)
                return
            self._send(200, payload)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key")
    parser.add_argument("--model-name", default="all-minilm-l6-v2")
    arguments = parser.parse_args()
    serve(arguments.port, arguments.api_key, arguments.model_name)
