"""Credentials never leave in what ragassay shows or logs: a URL's user and password
(`http://alice:S3cret@host`), a schemed HTTP credential (`Basic dXNlcjpwYXNz`, `Bearer …`) and
the values of secret-looking query parameters (`?api_key=...`, `token`, `password`, `secret`,
`key`) become `***`. Applied to model ids, error
messages, MLflow params, and every --json output. The way to authenticate to a model server is a
bearer token in an environment variable named by `api_key_env` (`--model-api-key-env`), which
ragassay reads and never records."""

from __future__ import annotations

import re

MASK = "***"
# scheme://user:password@ or scheme://user@ (a user name alone can be a token).
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^\s/@:?#]*(?::[^\s/@?#]*)?)@")
_SECRET_QUERY = re.compile(
    r"(?P<name>[?&](?:api[_-]?key|access[_-]?token|token|password|passwd|secret|key|auth)=)(?P<value>[^&#\s\"]*)",
    re.IGNORECASE,
)


# An HTTP credential written with its scheme (`Authorization: Basic dXNlcjpwYXNz`, `Bearer eyJ…`),
# as a server that echoes a refused request's headers writes it: base64 of `user:password`, or a
# token, is the secret itself.
_SCHEMED_CREDENTIAL = re.compile(r"(?P<scheme>\b(?:Basic|Bearer|Token|Digest)\s+)(?P<value>[A-Za-z0-9+/=._~-]{4,})")


def redact(text: str) -> str:
    """text with every URL credential and every schemed HTTP credential masked; text without one
    comes back unchanged."""
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _SCHEMED_CREDENTIAL.sub(lambda m: f"{m['scheme']}{MASK}", text)
    return _SECRET_QUERY.sub(lambda m: f"{m['name']}{MASK}", text)


# A secret shorter than this is not masked: masking "a" or "42" would garble every message, and
# so short a value protects nothing.
SHORTEST_MASKED_SECRET = 4


def mask_secrets(text: str, secrets: frozenset[str] | set[str]) -> str:
    """text with every occurrence of each secret value, and of its base64 form (a server may echo
    `Basic base64(secret)`), replaced by ***, longest first (a token inside a longer `Bearer …`
    value is masked with it), and its URL credentials redacted."""
    forms = {form for secret in secrets if len(secret) >= SHORTEST_MASKED_SECRET for form in _written(secret)}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, MASK)
    return redact(text)


def _written(secret: str) -> tuple[str, ...]:
    """A secret as it is written, and base64-encoded (with and without its padding)."""
    import base64

    encoded = base64.b64encode(secret.encode()).decode()
    return secret, encoded, encoded.rstrip("=")
