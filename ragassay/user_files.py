"""The files people write for ragassay (configurations, golden sets, question and label files),
read as text with every way they go wrong named: missing, a folder, empty, too large to be what
it claims (checked before parsing: a 50 MB YAML file took minutes and gigabytes to parse), or not
UTF-8 (naming the byte); and the files ragassay writes for people (a sample to label), their
missing folders made, and a path that cannot be written named as the one at fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragassay.environment import environment
from ragassay.errors import ConfigError


def read_user_text(path: Path, what: str, configuration: bool = False) -> str:
    """The text of a file a person wrote; a ConfigError naming the file and what is wrong.
    configuration: a configuration file (a smaller size cap than data files such as golden sets)."""
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder; give the file itself")
    if not path.is_file():
        raise ConfigError(f"{what} {path} does not exist")
    settings = environment()
    limit_mb, variable = (
        (settings.max_config_mb, "RAGASSAY_MAX_CONFIG_MB")
        if configuration
        else (settings.max_file_mb, "RAGASSAY_MAX_FILE_MB")
    )
    size = path.stat().st_size
    if size > limit_mb * 1024 * 1024:
        raise ConfigError(
            f"{what} {path} is {size / 1024 / 1024:.1f} MB, over the {limit_mb:g} MB a file of this kind may be "
            f"({variable} raises it)"
        )
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"{what} {path} is not UTF-8 text: line {line}, byte {error.start} is {data[error.start : error.start + 1]!r}; "
            "save it as UTF-8"
        ) from None
    if not text.strip():
        raise ConfigError(f"{what} {path} is empty")
    return text


def read_jsonl(path: Path, what: str) -> list[tuple[str, Any]]:
    """Each non-blank line of a JSON Lines file a person wrote, as (`file:line`, its value), read
    through read_user_text's checks. A line that is not JSON (or nests too deeply to read) comes
    back as a ValueError saying why, in its place: each caller decides whether a bad line refuses
    the whole file or only itself."""
    rows: list[tuple[str, Any]] = []
    # Lines end at "\n" only: U+2028, U+0085 and the other breaks str.splitlines() knows may
    # stand inside a JSON string (json.dumps(..., ensure_ascii=False) writes them as they are).
    for number, line in enumerate(read_user_text(path, what).split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            rows.append((where, json.loads(line)))
        except json.JSONDecodeError as error:
            rows.append((where, ValueError(f"invalid JSON: {error.msg}")))
        except RecursionError:
            rows.append((where, ValueError("JSON nested too deeply")))
    return rows


def write_user_text(path: Path, text: str, what: str) -> None:
    """Write a file a person asked for, making its missing folders; a ConfigError naming the path
    (never the workspace) when it cannot be written."""
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder; give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot write {what} {path}: {error.strerror or error}") from None
