"""Typed errors. Each names the file, field or value at fault so a user can act on it."""

from __future__ import annotations

import errno


class RagassayError(Exception):
    """Base of every error ragassay reports to users (CLI exit code 2 unless stated)."""


class ConfigError(RagassayError):
    """A configuration value is invalid; the message lists what is allowed."""


class CollectionNotFound(RagassayError):
    """The named collection does not exist in the workspace."""


class IndexMissing(RagassayError):
    """A search needs an index that was never built, or that is older than the collection."""


class TableSchemaError(RagassayError):
    """A stored Parquet table does not match the schema (or schema version) this code expects."""


class TableDamaged(TableSchemaError):
    """A stored Parquet table's bytes are damaged: a page checksum or its structure does not verify."""


class DocumentNotFound(RagassayError):
    """A document id is not in the collection."""


class EmbeddingModelError(RagassayError):
    """An embedding model could not be found or loaded offline."""


class CollectionDeleted(RagassayError):
    """The collection was deleted while a writer (an ingest, an index build) was working on it:
    nothing it staged was stored."""


class InconsistentCollection(RagassayError):
    """A collection's tables disagree: chunks of documents it does not hold (an interrupted write), or
    documents without chunks (a lost or damaged chunks table)."""


# What the operating system says when the machine, not ragassay, is in the way: no retry heals
# these, and the user fixes them (a writable folder, free space, a path that is a folder).
_ENVIRONMENT_ERRNOS = {
    errno.EACCES: "choose a workspace you may write (RAGASSAY_HOME) or fix the permissions",
    errno.EPERM: "choose a workspace you may write (RAGASSAY_HOME) or fix the permissions",
    errno.EROFS: "the file system is read-only: choose a writable workspace (RAGASSAY_HOME)",
    errno.ENOSPC: "free space on that disk, or move the workspace (RAGASSAY_HOME) to another",
    errno.EDQUOT: "free space within your quota, or move the workspace (RAGASSAY_HOME)",
    errno.EISDIR: "a folder is where a file is expected",
    errno.ENOTDIR: "a file is where a folder is expected",
    errno.EEXIST: "a file is where a folder is to be made",
    errno.ENAMETOOLONG: "use a shorter path",
}
# The same causes, as SQLite (MLflow's local store) words them.
_SQLITE_PROBLEMS = {
    "attempt to write a readonly database": "the MLflow store is read-only: choose a writable workspace (RAGASSAY_HOME)",
    "database or disk is full": "the disk of the MLflow store is full: free space on it",
    "unable to open database file": "the MLflow store cannot be opened: check that its folder exists and is writable",
}


def environment_problem(error: BaseException) -> str | None:
    """One line naming the path and the cause when error (or what caused it) is the environment's
    doing (a read-only or full disk, a permission, a file where a folder belongs), else None."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _ENVIRONMENT_ERRNOS:
            where = current.filename if current.filename is not None else "a file"
            return f"cannot use {where}: {current.strerror}; {_ENVIRONMENT_ERRNOS[current.errno]}"
        text = str(current)
        for words, advice in _SQLITE_PROBLEMS.items():
            if words in text:
                return f"MLflow could not write its store ({words}); {advice}"
        current = current.__cause__ or current.__context__
    return None


MAX_LISTED_PROBLEMS = 20


def listed_problems(problems: list[str]) -> str:
    """The first MAX_LISTED_PROBLEMS problems, then how many more: a file with an error in every
    one of its 100,000 entries is a readable message, not megabytes of one line."""
    shown = "; ".join(problems[:MAX_LISTED_PROBLEMS])
    hidden = len(problems) - MAX_LISTED_PROBLEMS
    return shown + (f"; and {hidden} more problems" if hidden > 0 else "")
