"""BM25 over chunks with bm25s: lower-cased, English stopwords, Snowball stemming (PyStemmer).

The index is a folder of plain files written by bm25s (`save`/`load`); the chunk ids in index order
live beside it in the collection's index manifest.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

import numpy as np

STEMMER_LANGUAGE = "english"
STOPWORDS = "en"



def _bm25s():
    """bm25s, imported once; it sets its own logger to DEBUG on import and logs every build, which
    the console handler would print among progress lines, so its level is lowered after import."""
    import bm25s

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


class LexicalIndex:
    """A BM25 index whose score vector lines up with the chunks it was built from."""

    def __init__(self, retriever, size: int):
        self._retriever = retriever
        self.size = size

    @classmethod
    def build(cls, texts: list[str]) -> "LexicalIndex":
        bm25s = _bm25s()
        retriever = bm25s.BM25()
        if texts:
            retriever.index(tokenize(texts), show_progress=False)
        return cls(retriever, len(texts))

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if self.size:
            self._retriever.save(str(folder), show_progress=False)

    @classmethod
    def load(cls, folder: Path, size: int) -> "LexicalIndex":
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
