"""Typed errors. Each names the file, field or value at fault so a user can act on it."""


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


class DocumentNotFound(RagassayError):
    """A document id is not in the collection."""


class EmbeddingModelError(RagassayError):
    """An embedding model could not be found or loaded offline."""


class InconsistentCollection(RagassayError):
    """A collection's tables disagree (chunks of documents it does not hold): an interrupted write."""
