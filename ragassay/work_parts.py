"""Cutting work into the parts that tasks take (files to extract, questions to answer, texts to
tokenize). "Part" here, never "batch": a batch is an MLflow parent run and its children."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def in_parts(items: Sequence[T], size: int | None) -> list[list[T]]:
    """items in consecutive parts of at most size, in order (one part of all when size is None;
    none when there are no items)."""
    size = size or max(1, len(items))
    return [list(items[start : start + size]) for start in range(0, len(items), size)]


def streamed_parts(items: Iterable[T], size: int | None) -> Iterator[list[T]]:
    """in_parts for an iterable read as the parts are taken: only one part is held at a time
    (all items in one part when size is None)."""
    iterator = iter(items)
    while part := list(islice(iterator, size)):
        yield part
