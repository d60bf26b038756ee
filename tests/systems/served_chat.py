"""A document chat as teams serve one, over real HTTP (stdlib http.server on a free port): every turn
retrieves with the conversation so far (the user's questions, in order) and answers from the top
passage. Two ways of knowing the conversation, as real chats have them:

- POST /chat {"session", "message"}: the server keeps each session's messages itself;
  DELETE /sessions/<session> clears one;
- POST /stateless {"messages": [...]}: the client sends the whole conversation every call.

A turn whose question is in `failing` answers HTTP 500 every time (the model behind it is down)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.systems.served_search import search


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass


class ChatServer:
    """The served chat on 127.0.0.1:port; what it was sent is kept for the test to read."""

    def __init__(self, failing: set[str] | None = None):
        self.failing = failing or set()
        self.sessions: dict[str, list[str]] = {}
        self.cleared: list[str] = []
        self.received: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.received.append({"path": self.path, **request})
                if self.path == "/chat":
                    status, body = server.stateful(request["session"], request["message"])
                else:
                    asked = [m["content"] for m in request["messages"] if m["role"] == "user"]
                    status, body = server.answer(asked)
                self._send(status, body)

            def do_DELETE(self):
                session = self.path.rsplit("/", 1)[-1]
                with server.lock:
                    server.sessions.pop(session, None)
                    server.cleared.append(session)
                self._send(204, None)

            def _send(self, status: int, body: dict | None):
                payload = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.http = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def stateful(self, session: str, message: str) -> tuple[int, dict]:
        """A turn of a session the server remembers: the message joins the session's questions
        only when it is answered (a failed turn is not part of the conversation)."""
        with self.lock:
            asked = [*self.sessions.get(session, []), message]
        status, body = self.answer(asked)
        if status == 200:
            with self.lock:
                self.sessions[session] = asked
        return status, body

    def answer(self, asked: list[str]) -> tuple[int, dict]:
        """The last question answered from a search with every question of the conversation."""
        if asked[-1] in self.failing:
            return 500, {"error": "the model behind the chat is down"}
        hits = search(" ".join(asked), "")["retrieved"][:3]
        first = hits[0]["text"].split(". ")[0].strip().rstrip(".") + "." if hits else ""
        return 200, {
            "answer": first,
            "sources": [{"id": hit["doc_id"], "text": hit["text"]} for hit in hits],
            "cites": [hits[0]["doc_id"]] if hits else [],
        }

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.http.shutdown()
        self.http.server_close()


def remembering(question: str, history: list[dict], session: str) -> dict:
    """The `python` kind's target for a conversation: the question searched with the earlier ones it
    is sent (history), the session it belongs to kept (SESSIONS_SEEN)."""
    SESSIONS_SEEN.append(session)
    asked = [m["content"] for m in history if m["role"] == "user"] + [question]
    hits = search(" ".join(asked), "")["retrieved"][:3]
    return {"retrieved": hits, "answer": hits[0]["text"].split(". ")[0] if hits else ""}


SESSIONS_SEEN: list[str] = []
CLEARED: list[str] = []


def clear(session: str) -> None:
    """The `python` kind's clear_session."""
    CLEARED.append(session)
