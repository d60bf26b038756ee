"""Helpers shared by several test modules."""

from __future__ import annotations

from pathlib import Path

from ragassay.resources import Resources
from ragassay.search.retrieval import SearchHit
from ragassay.search.run import run_search
from ragassay.search.settings import SearchSettings


def search_hits(home: Path, collections: list[str], query: str, k: int = 10, **settings) -> list[SearchHit]:
    """The hits `ragassay search` returns with these settings (loaded afresh for each call)."""
    return run_search(Resources(), home, collections, query, SearchSettings(**settings), k).hits
