"""Helpers shared by several test modules."""

from __future__ import annotations

from pathlib import Path

from ragassay.resources import Resources
from ragassay.search.retrieval import SearchHit
from ragassay.search.run import run_search
from ragassay.search.settings import SearchSettings

# One embedding model and the opened collections for the whole session, as a worker process keeps
# them; a collection changed on disk is opened again (OpenCollections keys on the files).
SESSION_RESOURCES = Resources()


def search_hits(home: Path, collections: list[str], query: str, k: int = 10, **settings) -> list[SearchHit]:
    """The hits `ragassay search` returns with these settings."""
    return run_search(SESSION_RESOURCES, home, collections, query, SearchSettings(**settings), k).hits
