"""Credentials never leave in what ragassay shows or logs: a URL's user and password
(`http://alice:S3cret@host`) and the values of secret-looking query parameters
(`?api_key=...`, `token`, `password`, `secret`, `key`) become `***`. Applied to model ids, error
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


def redact(text: str) -> str:
    """text with every URL credential masked; text without one comes back unchanged."""
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    return _SECRET_QUERY.sub(lambda m: f"{m['name']}{MASK}", text)


# A secret shorter than this is not masked: masking "a" or "42" would garble every message, and
# so short a value protects nothing.
SHORTEST_MASKED_SECRET = 4


def mask_secrets(text: str, secrets: frozenset[str] | set[str]) -> str:
    """text with every occurrence of each secret value (longest first, so a token inside a longer
    `Bearer …` value is masked with it) replaced by ***, and its URL credentials redacted."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= SHORTEST_MASKED_SECRET:
            text = text.replace(secret, MASK)
    return redact(text)
