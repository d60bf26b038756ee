"""Cutting work into the parts that tasks take (files to extract, questions to answer)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def in_batches(items: Sequence[T], size: int | None) -> list[list[T]]:
    """items in consecutive batches of at most size, in order (one batch of all when size is None;
    none when there are no items)."""
    size = size or max(1, len(items))
    return [list(items[start : start + size]) for start in range(0, len(items), size)]


def streamed_batches(items: Iterable[T], size: int | None) -> Iterator[list[T]]:
    """in_batches for an iterable read as the batches are taken: only one batch is held at a time
    (all items in one batch when size is None)."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
