"""Where a statement says something its passages contradict while sharing nearly all their words:
a negation the passage lacks (or drops one it has), a number the passage does not give, a name
it does not hold. Pure: small word lists, no model. The learned verdict reads these beside the
word-level and token-level support (judge/verdict_features.py, judge/token_alignment.py), which
barely move when one word of a sentence changes.

A statement is compared with its **aligned sentence**: the passage sentence sharing most of its
tokens (over every passage), where a contradiction of one word shows. Features:

- `negation_added`: 1 when the statement holds more negation cues than its aligned sentence;
- `negation_dropped`: 1 when its aligned sentence holds more than the statement;
- `numbers_unmatched`: how many of the statement's numbers (digits, or number words one to
  twelve, read as digits) no passage gives, capped at 3;
- `names_unmatched`: the share of the statement's names (capitalized words after its first word
  that the statement's passages never write in lower case, possessives dropped) that no passage
  holds, in any case or another form of the word (its first NAME_STEM letters).

Negation cues are listed for the languages the verdict was fitted on (English, German, Spanish,
French, Hindi); in another language the two negation features read 0, as if no cue were found.
"""

from __future__ import annotations

import re

from ragassay.judge.verdict_features import tokens

NEGATION_CUES = {
    # English: "n't" is a cue of its own (tokens split "isn't" into "isn" and "t").
    "not", "never", "no", "none", "nobody", "nothing", "neither", "nor", "cannot", "without", "n't",
    "nicht", "kein", "keine", "keinen", "keinem", "keiner", "keines", "nie", "niemals", "ohne",
    "nunca", "jamás", "ningún", "ninguna", "ninguno", "sin", "tampoco",
    "pas", "jamais", "aucun", "aucune", "sans", "personne", "rien",
    "नहीं", "न", "कभी", "बिना",
}  # fmt: skip
_CONTRACTED = re.compile(r"n['’]t\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?।])\s+")
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
NUMBER_WORDS = {
    word: str(value)
    for words in (
        "one two three four five six seven eight nine ten eleven twelve",
        "eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf",
        "uno dos tres cuatro cinco seis siete ocho nueve diez once doce",
        "un deux trois quatre cinq six sept huit neuf dix onze douze",
    )
    for value, word in enumerate(words.split(), start=1)
}
MAX_COUNTED_NUMBERS = 3
_NAME = re.compile(r"(?<=\S )([A-ZÀ-Þ][\w'’-]*)")
CUE_FEATURES = ("negation_added", "negation_dropped", "numbers_unmatched", "names_unmatched")


def negation_count(text: str) -> int:
    """How many negation cues text holds (NEGATION_CUES, and each "n't")."""
    lowered = text.lower()
    words = re.findall(r"[\u0900-\u097f]+|[^\W\d_]+", lowered)
    return sum(word in NEGATION_CUES for word in words) + len(_CONTRACTED.findall(lowered))


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(text) if s.strip()] or [text]


def aligned_sentence(statement: str, passages: list[str]) -> str:
    """The sentence of the passages that holds most of the statement's tokens (the first of ties)."""
    said = tokens(statement)
    best, best_share = "", -1.0
    for passage in passages:
        for sentence in sentences(passage):
            share = len(said & tokens(sentence)) / len(said) if said else 0.0
            if share > best_share:
                best, best_share = sentence, share
    return best


def numbers(text: str) -> set[str]:
    """The numbers text gives: digit runs (thousands separators dropped) and number words as digits."""
    found = {n.replace(",", "") for n in _DIGITS.findall(text)}
    found |= {NUMBER_WORDS[word] for word in re.findall(r"[^\W\d_]+", text.lower()) if word in NUMBER_WORDS}
    return found


_POSSESSIVE = re.compile(r"(?:['’]s|['’])$")
# A name's first letters that find it in another form of the same word (Libyan and Libya,
# Canadian and Canada): names this long are compared by their first NAME_STEM letters too.
NAME_STEM = 5


def names(text: str, common: set[str]) -> set[str]:
    """Capitalized words after the text's first word, possessives dropped ("Forum's" is Forum),
    that are not written in lower case in `common`."""
    found = {_POSSESSIVE.sub("", word) for word in _NAME.findall(text)}
    return {word for word in found if word and word.lower() not in common}


def name_held(name: str, passage_words: set[str]) -> bool:
    """Whether the passages hold the name: as a word in any case, or (for a name longer than
    NAME_STEM letters) a word of the passages starting with its first NAME_STEM letters."""
    lowered = name.lower()
    if lowered in passage_words:
        return True
    return len(lowered) > NAME_STEM and any(word.startswith(lowered[:NAME_STEM]) for word in passage_words)


def cue_features(statement: str, passages: list[str]) -> dict[str, float]:
    """The module docstring's features of one statement against its passages."""
    aligned = aligned_sentence(statement, passages)
    said_negations, aligned_negations = negation_count(statement), negation_count(aligned)
    joined = " ".join(passages)
    written = re.findall(r"[^\W\d_]+", joined)
    common = {word for word in written if word.islower()}
    passage_words = {word.lower() for word in written}
    said_names = names(statement, common)
    return {
        "negation_added": float(said_negations > aligned_negations),
        "negation_dropped": float(aligned_negations > said_negations),
        "numbers_unmatched": float(min(MAX_COUNTED_NUMBERS, len(numbers(statement) - numbers(joined)))),
        "names_unmatched": (
            sum(not name_held(name, passage_words) for name in said_names) / len(said_names) if said_names else 0.0
        ),
    }
