"""What a learned verdict may read of a statement beside the judge's answers: how much of it its
passages hold, word for word (judge/learned_verdict.py).

Each feature is a number from the statement, its passages and its question, the same in every
language that separates words with spaces (German, Spanish, French, Hindi and English were fitted):
no model, no word list, so it carries to documents nobody tuned it on. Tokens are lowercased runs
of letters, digits and combining marks; a number is a run of digits.

- `token_precision_best`: the largest share of the statement's distinct tokens that one passage
  holds, `max_p |T(s) ∩ T(p)| / |T(s)|` (BERTScore's precision, with exact tokens);
- `token_precision_all`: the same share held by all passages together;
- `char_precision_best`: the largest share of the statement's character 4-grams that one
  passage holds (catches inflected and compound words the tokens miss);
- `novel_token_share`: the share of the statement's tokens in no passage and not in the question;
- `novel_numbers`: how many of the statement's numbers no passage holds (capped at 3);
- `question_share`: the share of the statement's tokens that its question holds;
- `fuzzy_best`: rapidfuzz's partial ratio of the statement to its closest passage, over 100;
- `log_tokens`: log(1 + the statement's token count);
- `long_token_precision_best`: as token_precision_best, each token weighted by its length (a
  long word is rarer, and says more, than a short one);
- `bigram_precision_best`: the largest share of the statement's pairs of consecutive tokens that
  one passage holds (the words, and how they go together).
"""

from __future__ import annotations

import itertools
import math
import re

FEATURE_NAMES = (
    "token_precision_best",
    "token_precision_all",
    "char_precision_best",
    "novel_token_share",
    "novel_numbers",
    "question_share",
    "fuzzy_best",
    "log_tokens",
    "long_token_precision_best",
    "bigram_precision_best",
)

# Letters, digits and the combining marks of scripts such as Devanagari (a vowel sign is no
# letter to Python's `\w`, and would cut a Hindi word in two).
_TOKEN = re.compile(r"[^\W_](?:[^\W_]|[\u0300-\u036f\u0900-\u097f])*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
MAX_COUNTED_NUMBERS = 3
GRAM = 4


def tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.lower()))


def bigrams(text: str) -> set[tuple[str, str]]:
    words = _TOKEN.findall(text.lower())
    return set(itertools.pairwise(words))


def grams(text: str) -> set[str]:
    squeezed = " ".join(text.lower().split())
    return {squeezed[i : i + GRAM] for i in range(max(0, len(squeezed) - GRAM + 1))}


def numbers(text: str) -> set[str]:
    return {n.replace(",", ".") for n in _NUMBER.findall(text)}


def verdict_features(statement: str, passages: list[str], question: str | None = None) -> dict[str, float]:
    """The features above of one statement against its passages (and its question, when known)."""
    from rapidfuzz import fuzz

    said = tokens(statement)
    passage_tokens = [tokens(p) for p in passages] or [set()]
    every_passage = set().union(*passage_tokens)
    asked = tokens(question or "")
    said_grams = grams(statement)
    passage_numbers = set().union(*(numbers(p) for p in passages)) if passages else set()

    def share(found: set[str], of: set[str]) -> float:
        return len(found & of) / len(of) if of else 1.0

    return {
        "token_precision_best": max(share(p, said) for p in passage_tokens),
        "token_precision_all": share(every_passage, said),
        "char_precision_best": max((share(grams(p), said_grams) for p in passages), default=0.0),
        "novel_token_share": len(said - every_passage - asked) / len(said) if said else 0.0,
        "novel_numbers": float(min(MAX_COUNTED_NUMBERS, len(numbers(statement) - passage_numbers))),
        "question_share": share(asked, said),
        "fuzzy_best": max((fuzz.partial_ratio(statement.lower(), p.lower()) for p in passages), default=0.0) / 100,
        "log_tokens": math.log1p(len(said)),
        "long_token_precision_best": max(_weighted_share(p, said) for p in passage_tokens),
        "bigram_precision_best": max((share(bigrams(p), bigrams(statement)) for p in passages), default=0.0),
    }


def _weighted_share(found: set[str], of: set[str]) -> float:
    total = sum(len(token) for token in of)
    return sum(len(token) for token in of & found) / total if total else 1.0
