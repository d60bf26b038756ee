"""BM25 over chunks with bm25s: lower-cased, English stopwords, Snowball stemming (PyStemmer).

The index is a folder of plain files written by bm25s (`save`/`load`); the chunk ids in index order
live beside it in the collection's index manifest.
"""

from __future__ import annotations

import logging
import sys
from array import array
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from ragassay.work_parts import streamed_parts

STEMMER_LANGUAGE = "english"
STOPWORDS = "en"


def _bm25s():
    """bm25s, imported once; it sets its own logger to DEBUG on import and logs every build, which
    the console handler would print among progress lines, so its level is lowered after import.

    bm25s imports numba whenever it is installed (ranx, a dev dependency, brings it): 0.4 s of
    every command that searches, for a backend ragassay never selects (BM25's numpy backend and
    numpy top-k, `backend_selection` "auto"). So numba is hidden while bm25s imports (it then
    takes its pure-numpy path) and visible again after, for anything else that imports it."""
    if "bm25s" in sys.modules:
        return sys.modules["bm25s"]
    hidden = "numba" not in sys.modules
    if hidden:
        sys.modules["numba"] = None  # type: ignore[assignment]  # the import system's "not installed"
    try:
        import bm25s
    finally:
        if hidden:
            del sys.modules["numba"]
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer(STEMMER_LANGUAGE)


def tokenize(texts: list[str]) -> list[list[str]]:
    """Lower-cased word tokens of each text, English stopwords removed, Snowball-stemmed."""
    return _bm25s().tokenize(
        texts, lower=True, stopwords=STOPWORDS, stemmer=_stemmer(), return_ids=False, show_progress=False
    )


# Texts tokenized at once when an index is built: their token lists are the build's largest
# Python objects, so they are turned into int32 arrays a part at a time. Measured on 16x SciFact
# (146,432 chunks): 2,048 a batch took 46 s, 16,384 took 42 s, all at once as token lists 41 s
# with 400 MB more at its peak (BENCHMARKS.md).
TOKENIZE_BATCH = 16384


def tokenize_to_ids(batches: Iterable[Sequence[str]]) -> tuple[list[array], dict[str, int]]:
    """Each text's tokens (as `tokenize`) as an int32 array of ids into one vocabulary (token: id),
    tokenized a part of the texts at a time (parts are taken as they come, so they may be read from
    disk as they are tokenized): bm25s indexes these as it indexes token lists, and a list of Python
    token lists for a large corpus costs several times its texts. The arrays are the standard
    library's (4 bytes a token): bm25s counts tokens in Python loops, which iterate them as fast as
    lists."""
    vocabulary: dict[str, int] = {}
    token_ids: list[array] = []
    for batch in batches:
        if not len(batch):
            continue
        tokenized = _bm25s().tokenize(
            list(batch), lower=True, stopwords=STOPWORDS, stemmer=_stemmer(), return_ids=True, show_progress=False
        )
        # bm25s numbers each call's tokens from 0: map them into the one vocabulary.
        to_shared = np.zeros(len(tokenized.vocab), dtype=np.int32)
        for token, local_id in tokenized.vocab.items():
            to_shared[local_id] = vocabulary.setdefault(token, len(vocabulary))
        token_ids.extend(array("i", to_shared[np.asarray(ids, dtype=np.int64)].tobytes()) for ids in tokenized.ids)
    return token_ids, vocabulary


class LexicalIndex:
    """A BM25 index whose score vector lines up with the chunks it was built from."""

    def __init__(self, retriever, size: int):
        self._retriever = retriever
        self.size = size

    @classmethod
    def build(cls, texts: Sequence[str], tokenize_batch: int = TOKENIZE_BATCH) -> LexicalIndex:
        """BM25 over texts (a list, or a Polars column), tokenized tokenize_batch at a time."""
        return cls.build_from_batches(streamed_parts(texts, tokenize_batch))

    @classmethod
    def build_from_batches(cls, batches: Iterable[Sequence[str]]) -> LexicalIndex:
        """BM25 over the texts of batches, in order, each batch tokenized as it is taken (an index
        build reads them from its snapshot of the table: TOKENIZE_BATCH at a time)."""
        token_ids, vocabulary = tokenize_to_ids(batches)
        # scipy's COO to CSC conversion: bm25s's default (numpy) sorts through int64 keys and an
        # argsort, which peaked 148 MB higher on 16x SciFact (668 against 520 MB) for the same
        # scores (BENCHMARKS.md).
        retriever = _bm25s().BM25(csc_backend="scipy")
        if token_ids:
            retriever.index((token_ids, vocabulary), show_progress=False)
        return cls(retriever, len(token_ids))

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if self.size:
            self._retriever.save(str(folder), show_progress=False)

    @classmethod
    def load(cls, folder: Path, size: int) -> LexicalIndex:
        bm25s = _bm25s()
        if size == 0:
            return cls(bm25s.BM25(), 0)
        return cls(bm25s.BM25.load(str(folder), mmap=False, show_progress=False, verbosity=0), size)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for the query; all zeros when no query term is in the index."""
        return self.scores_for_tokens(tokenize([query]))[0]

    def scores_for_tokens(self, queries: list[list[str]]) -> np.ndarray:
        """BM25 scores for tokenized queries (`tokenize`), one row per query, one column per
        indexed text; a row is all zeros when none of its terms is in the index."""
        rows = np.zeros((len(queries), self.size), dtype=np.float32)
        for row, tokens in enumerate(queries):
            known = self._retriever.get_tokens_ids([token for token in tokens if token]) if self.size else []
            if known:
                rows[row] = self._retriever.get_scores_from_ids(known)
        return rows
