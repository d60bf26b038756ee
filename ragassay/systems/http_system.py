"""`kind: http`: an HTTP endpoint asked each question. The request is made from a template
({{question}} and the other placeholders filled in every string of the body, ${VAR} in headers
taken from the environment), the record read from the JSON response by JSONPaths (jsonpath-ng),
within `max_response_bytes` and `timeout_seconds` for the whole response; 429 and 5xx are tried
again (Retry-After honoured), a redirect is not followed unless asked."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from ragassay.fields import Frozen
from ragassay.http_bounds import (
    MAX_RESPONSE_BYTES,
    SECRET_LOOKING_HEADER,
    ResponseTooLarge,
    bounded_content,
    header_secrets,
    resolved_headers,
    retry_after_seconds,
)
from ragassay.redaction import mask_secrets, redact
from ragassay.systems.calls import CalledSystem, CallFailure, Conversation, RetryableFailure

_RETRY_STATUS = {429, 500, 502, 503, 504}


class ResponsePaths(Frozen):
    """JSONPaths (jsonpath-ng) into an HTTP response body, one per record field."""

    answer: str | None = Field(None, description="JSONPath of the answer text.")
    documents: str | None = Field(None, description="JSONPath of the ranked document ids.")
    contexts: str | None = Field(None, description="JSONPath of the context passages the answer was given.")
    scores: str | None = Field(None, description="JSONPath of the documents' scores.")
    citations: str | None = Field(None, description="JSONPath of the documents the answer cites.")
    refused: str | None = Field(None, description="JSONPath of a true/false: did the system decline to answer.")

    @model_validator(mode="after")
    def _parse(self) -> ResponsePaths:
        from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
        from jsonpath_ng.ext import parse

        for name, path in self.model_dump(exclude_none=True).items():
            try:
                parse(path)
            except (JsonPathLexerError, JsonPathParserError, Exception) as error:
                raise ValueError(f"response.{name} {path!r} is not a JSONPath: {error}") from None
        if self.answer is None and self.documents is None:
            raise ValueError("response needs a JSONPath for documents (retrieval metrics) or answer (answer metrics)")
        return self


class SessionRequest(Frozen):
    """The request that clears a conversation's state on a system that keeps it, sent after the
    conversation's last turn: {{session}} (and [[session]]) filled in its URL and body."""

    url: str = Field(pattern=r"^https?://", description="The URL, {{session}} filled in.")
    method: Literal["DELETE", "POST", "PUT", "GET"] = Field("DELETE", description="The HTTP method.")
    body: dict | None = Field(None, description="A JSON body, {{session}} filled in its strings.")


class HttpSystem(CalledSystem):
    """An HTTP endpoint: the request from a template ({{question}} and {{query_id}} substituted in
    every string of the body, ${VAR} in headers taken from the environment), the record read from
    the JSON response by JSONPaths. In a conversation the body may also name {{history}} (the
    earlier turns as OpenAI-style messages), {{messages}} (those and this question), {{session}}
    (the conversation's session id, fresh for each evaluation), {{conversation_id}} and {{turn}};
    a string that is only {{history}} or {{messages}} becomes the list itself. clear_session: the
    request that clears a session, sent after each conversation's last turn.

    Header values are SecretStr, so a value written into the file never reaches Prefect's
    flow-run parameters (they are stored as `**********`; the task resolves the real one) or any
    dump of the settings. The secrets masked in every text ragassay keeps or prints: each
    `${VAR}`'s value, and the whole value of a header named in `secret_headers` or whose name looks
    secret (Authorization, X-Api-Key, Cookie, ...)."""

    kind: Literal["http"] = Field(description="http: an HTTP endpoint asked question by question.")
    url: str = Field(pattern=r"^https?://", description="The endpoint's URL.")
    method: Literal["GET", "POST", "PUT"] = Field("POST", description="The HTTP method.")
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="Request headers; secrets as ${VAR}, read from the environment."
    )
    secret_headers: tuple[str, ...] = Field((), description="Headers whose values are secret (masked everywhere).")
    body: dict | None = Field(None, description="The JSON body template: {{question}}, {{query_id}}, {{history}}...")
    response: ResponsePaths = Field(description="Where each record field is in the response (JSONPaths).")
    concurrency: int = Field(4, ge=1, le=64, description="Calls in flight at once.")
    follow_redirects: bool = Field(
        False, description="Follow HTTP redirects (off: a redirect is that question's http_status error, naming it)."
    )
    max_response_bytes: int = Field(
        MAX_RESPONSE_BYTES,
        ge=1,
        description="The most bytes a response may hold once decompressed; past it the question's record is a "
        "too_large error (a 2 MB gzip body can inflate to 2 GB).",
    )
    clear_session: SessionRequest | None = Field(
        None, description="The request that clears a conversation's session after its last turn."
    )

    def header_templates(self) -> dict[str, str]:
        """The headers as written in the configuration (`Bearer ${VAR}` unresolved)."""
        return {name: value.get_secret_value() for name, value in self.headers.items()}

    def is_secret_header(self, name: str) -> bool:
        marked = {header.lower() for header in self.secret_headers}
        return name.lower() in marked or bool(SECRET_LOOKING_HEADER.search(name))

    def secrets(self) -> frozenset[str]:
        """Each `${VAR}`'s value and every secret header's (http_bounds.header_secrets)."""
        return header_secrets(self.header_templates(), self.is_secret_header)

    def logged_settings(self) -> dict:
        """A header's value is kept (as the template it is) only when it takes its secret from an
        environment variable (`Bearer ${VAR}`); one written into the file is logged as ***."""
        settings = self.model_dump(mode="json", exclude_none=True)
        if self.headers:
            settings["headers"] = {
                name: value if re.search(r"\$\{\w+\}", value) else "***"
                for name, value in self.header_templates().items()
            }
        return settings

    def cache_identity(self) -> dict:
        # The headers as written (a dump shows SecretStr as stars): a changed header is another
        # system; the key is a sha256, so a literal value in it is not readable from the cache.
        return super().cache_identity() | {"headers": self.header_templates()}

    def retrieval_problem(self) -> str | None:
        if self.response.documents is None:
            return (
                "a retrieval evaluation needs the documents the system returned; give their ids' JSONPath as "
                "response.documents"
            )
        return None

    def caller(self) -> HttpCaller:
        return HttpCaller(self)

    def session_clearer(self) -> Callable[[str], str | None] | None:
        """A request that clears a session (its problem as text, None when cleared), when the
        system says how (`clear_session`)."""
        if self.clear_session is None:
            return None
        request = self.clear_session
        headers = resolved_headers(self.header_templates())

        def clear(session: str) -> str | None:
            import httpx

            fills = _fills("", "", Conversation(session=session))
            url = _substituted(request.url, fills)
            body = _substituted(request.body, fills) if request.body is not None else None
            try:
                response = httpx.request(request.method, url, json=body, headers=headers, timeout=self.timeout_seconds)
            except httpx.HTTPError as error:
                return f"{redact(url)}: {type(error).__name__}: {error}"
            return None if response.status_code < 400 else f"HTTP {response.status_code} from {redact(url)}"

        return clear


# Placeholders a body template may hold: text, and lists (a conversation's messages).
_TEXT_PLACEHOLDERS = ("question", "query_id", "session", "conversation_id", "turn")
_LIST_PLACEHOLDERS = ("history", "messages")


def _fills(query_id: str, question: str, conversation: Conversation) -> dict[str, str | list]:
    """What each placeholder of a body template stands for in one call."""
    history = [dict(message) for message in conversation.history]
    return {
        "question": question,
        "query_id": query_id,
        "session": conversation.session,
        "conversation_id": conversation.conversation_id or "",
        "turn": "" if conversation.turn is None else str(conversation.turn),
        "history": history,
        "messages": [*history, {"role": "user", "content": question}],
    }


def _substituted(value, fills: dict[str, str | list]):
    """The body template with every {{name}} (or [[name]], which Prefect's own templating in
    prefect.yaml leaves alone) filled in every string: a string that is only {{history}} or
    {{messages}} becomes the list of messages, one that holds it among other text its JSON."""
    if isinstance(value, str):
        for name in _LIST_PLACEHOLDERS:
            if value.strip() in (f"{{{{{name}}}}}", f"[[{name}]]"):
                return fills[name]
        for name in (*_TEXT_PLACEHOLDERS, *_LIST_PLACEHOLDERS):
            filled = fills[name] if isinstance(fills[name], str) else json.dumps(fills[name], ensure_ascii=False)
            value = value.replace(f"{{{{{name}}}}}", filled).replace(f"[[{name}]]", filled)
        return value
    if isinstance(value, dict):
        return {key: _substituted(item, fills) for key, item in value.items()}
    if isinstance(value, list):
        return [_substituted(item, fills) for item in value]
    return value


class HttpCaller:
    """One client for the evaluation's calls: the request from the template, the response read
    within its bounds, the record's fields read by the JSONPaths."""

    def __init__(self, system: HttpSystem):
        # The HTTP client and JSONPath, loaded when a system is called, not when its settings are read.
        import httpx
        from jsonpath_ng.ext import parse

        self.system = system
        self.secrets = system.secrets()
        self.paths = {name: (path, parse(path)) for name, path in system.response.model_dump(exclude_none=True).items()}
        self.client = httpx.Client(
            timeout=system.timeout_seconds,
            headers=resolved_headers(system.header_templates()),
            follow_redirects=system.follow_redirects,
        )
        self.url = redact(system.url)

    def close(self) -> None:
        self.client.close()

    def __call__(self, query_id: str, question: str, conversation: Conversation) -> dict:
        import httpx

        system, client, url = self.system, self.client, self.url
        fills = _fills(query_id, question, conversation)
        body = _substituted(system.body, fills) if system.body is not None else None
        deadline = time.monotonic() + system.timeout_seconds
        request = (
            client.build_request("GET", system.url, params=body)
            if system.method == "GET"
            else client.build_request(system.method, system.url, json=body)
        )
        timeout = RetryableFailure("timeout", f"no whole response from {url} within {system.timeout_seconds:g} s")
        try:
            response = client.send(request, stream=True)
            try:
                content = bounded_content(response, deadline, system.max_response_bytes)
            finally:
                response.close()
        except ResponseTooLarge as error:
            raise CallFailure("too_large", f"the response from {url} is {error} (max_response_bytes)") from None
        except httpx.TimeoutException:
            raise timeout from None
        except httpx.TooManyRedirects:
            raise CallFailure(
                "http_status", f"{url} redirects in a loop (more than {client.max_redirects} redirects)"
            ) from None
        except httpx.TransportError as error:
            raise RetryableFailure("connection", f"{url}: {type(error).__name__}: {error}") from None
        if content is None:
            raise timeout
        if response.status_code in _RETRY_STATUS:
            raise RetryableFailure(
                "http_status",
                f"HTTP {response.status_code} from {url}",
                retry_after_seconds(response.headers.get("Retry-After")),
            )
        if response.is_redirect:
            target = redact(response.headers.get("Location", "nowhere"))
            raise CallFailure(
                "http_status",
                f"HTTP {response.status_code} redirect from {url} to {target} (not followed; set "
                "`follow_redirects: true` to follow it, or give the final URL)",
            )
        if response.status_code >= 400:
            raise CallFailure("http_status", f"HTTP {response.status_code} from {url}")
        try:
            document = _lists_cut(json.loads(content))
        except (ValueError, RecursionError):
            # Masked before it is cut: a secret cut in two would no longer match its value.
            shown = mask_secrets(content.decode("utf-8", errors="replace"), self.secrets)[:120]
            raise CallFailure("malformed", f"the response from {url} is not JSON: {shown!r}") from None
        record = _read_response(document, self.paths)
        if time.monotonic() > deadline:
            raise timeout
        return record


# The most items of any list in a response that its JSONPaths read: past any max rank (a ranking
# of 1,000,000 ids took 24 s a call to read), so the reading stays within the call's time.
MAX_LIST_ITEMS = 10_000


def _lists_cut(value):
    """A parsed response with every list cut to its first MAX_LIST_ITEMS items."""
    if isinstance(value, list):
        return [_lists_cut(item) for item in value[:MAX_LIST_ITEMS]]
    if isinstance(value, dict):
        return {key: _lists_cut(item) for key, item in value.items()}
    return value


def _read_response(document, paths: dict) -> dict:
    """The record's fields found by their JSONPaths; CallFailure naming a JSONPath that matches nothing
    in the response at any depth (a path into an empty list matches nothing and is an empty
    list), or a value of the wrong type for its field."""
    found = {}
    for name, (text, expression) in paths.items():
        values = [match.value for match in expression.find(document)]
        if not values:
            reason = _why_nothing(expression, document)
            if reason is not None:
                raise CallFailure("mapping", f"response.{name} {text} matched nothing in the response: {reason}")
        found[name] = values
    record: dict = {}
    for name in ("answer", "refused"):
        if name in found:
            value = found[name][0] if found[name] else None
            wanted = str if name == "answer" else bool
            if value is not None and not isinstance(value, wanted):
                raise CallFailure(
                    "mapping",
                    f"response.{name} {paths[name][0]} is {type(value).__name__} {value!r}, not "
                    + ("a string" if name == "answer" else "true or false"),
                )
            record[name] = value
    for name in ("documents", "citations"):
        for value in found.get(name, []):
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise CallFailure(
                    "mapping", f"response.{name} {paths[name][0]} matched {type(value).__name__} {value!r}, not an id"
                )
    if "citations" in found:
        record["citations"] = [str(value) for value in found["citations"]]
    documents, contexts, scores = found.get("documents"), found.get("contexts"), found.get("scores")
    if documents is not None or contexts is not None:
        count = max(len(documents or []), len(contexts or []))
        record["retrieved"] = [
            {
                **({"doc_id": str(documents[i])} if documents and i < len(documents) else {}),
                **({"text": contexts[i]} if contexts and i < len(contexts) else {}),
                **({"score": scores[i]} if scores and i < len(scores) else {}),
            }
            for i in range(count)
        ]
    return record


def _why_nothing(expression, document) -> str | None:
    """Why a JSONPath that matched nothing did not, or None when it reached an empty list (a
    system that found nothing): the deepest part of the path that matches, and what it matched."""
    from jsonpath_ng.jsonpath import Child, Root

    node = expression
    while isinstance(node, Child):
        node = node.left
        if isinstance(node, Root):
            return "its first field is not in the response"
        values = [match.value for match in node.find(document)]
        if values:
            if all(isinstance(value, list) and not value for value in values):
                return None
            kinds = sorted({type(value).__name__ for value in values})
            return f"its part {node} matches {len(values)} value(s) ({', '.join(kinds)}), the rest of the path none"
    return "no part of the response matches it"
