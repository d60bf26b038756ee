"""The labelled statements the learned verdict is fitted and measured on: three collections of
different kinds, read from ../shared/datasets (never copied into the project), and the edits
written from their development data.

- `memerag`: MEMERAG's multilingual pool (de, en, es, fr, hi): sentences of real RAG answers
  against the passages they were written from, with the question; people's majority labels.
- `scifact`: SciFact's claims against the abstract their annotators labelled (SUPPORT supported,
  CONTRADICT unsupported), and each supported claim against its abstract without the sentences
  marked as its evidence (unsupported: on the topic, lacking the fact). One passage, no question.
- `wice`: WiCE's development half: Wikipedia sentences against the page they cite, split into
  windows of WINDOW consecutive sentences; the TOP_WINDOWS windows most lexically similar to the
  claim are its passages (judge/passage_choice.lexical_similarity), no question. Supported
  claims are supported; partially supported and not supported ones are unsupported.

Edits (`edited_items`): each supported statement of a collection that an edit rule applies to is
written again to say something its passages contradict, against the same passages: a
negation (`negation`), a changed number (`number`), or another name (`name`: one its passages
name elsewhere, or one of another statement). Rules are per language where they read words
(negation); a number or a name needs none. Every edit is unsupported; its `source` is the
statement it was written from, so a fold holds both or neither.

Paraphrases (`paraphrase_items`): benchmarks/verdict_paraphrases.jsonl, 42 supported WiCE and
SciFact claims of the development data written again by hand in other words (only the new text
is kept here, with the claim's id and digest), still supported by the same passages.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATASETS = REPO.parent / "shared" / "datasets"
MEMERAG = DATASETS / "memerag-multilingual" / "labelled_statements.jsonl"
WICE = DATASETS / "wice-dev" / "claims-dev.jsonl"
PARAPHRASES = Path(__file__).with_name("verdict_paraphrases.jsonl")
WINDOW = 5
TOP_WINDOWS = 3
EDIT_SEED = 70


@dataclass(frozen=True)
class Item:
    """One labelled statement: what the verdict reads (statement, passages, question) and what
    people (or an edit rule) say (supported)."""

    id: str
    collection: str  # memerag, scifact, wice
    group: str  # the language for MEMERAG; the item's kind of pair for the others
    statement: str
    passages: tuple[str, ...]
    question: str | None
    supported: bool
    kind: str = "natural"  # natural, negation, number, name, paraphrase
    source: str = ""  # the statement an edit or a paraphrase was written from (its fold)
    language: str = "en"

    @property
    def fold(self) -> str:
        """What must stay together in a cross-validation fold: a statement and its edits."""
        return self.source or self.id


@cache
def memerag_items() -> tuple[Item, ...]:
    from ragassay.judge.prompts import passages_of

    items = []
    for line in MEMERAG.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        items.append(
            Item(
                id=row["id"],
                collection="memerag",
                group=row["language"],
                statement=row["statement"],
                passages=tuple(passages_of(row["context"])),
                question=row.get("question"),
                supported=row["label"] == "supported",
                language=row["language"],
            )
        )
    return tuple(items)


@cache
def scifact_items() -> tuple[Item, ...]:
    from bench_judge_scifact import evidence_pairs, labelled_pairs

    items = [
        Item(
            id=pair["id"],
            collection="scifact",
            group="support-contradict",
            statement=pair["statement"],
            passages=(pair["context"],),
            question=None,
            supported=pair["label"] == "supported",
            source=f"scifact-claim-{pair['claim']}",
        )
        for pair in labelled_pairs()
    ]
    items += [
        Item(
            id=pair["id"],
            collection="scifact",
            group="evidence-removed",
            statement=pair["statement"],
            passages=(pair["context"],),
            question=None,
            supported=pair["label"] == "supported",
            source=f"scifact-claim-{pair['claim']}",
        )
        for pair in evidence_pairs()
        if pair["label"] == "unsupported"  # its "whole" twin is the labelled pair above
    ]
    return tuple(items)


def wice_rows() -> list[dict]:
    return [json.loads(line) for line in WICE.read_text().splitlines() if line.strip()]


def windows(sentences: list[str], size: int = WINDOW) -> list[str]:
    """A page as a chunker cuts it: consecutive windows of `size` sentences."""
    return [" ".join(sentences[i : i + size]) for i in range(0, len(sentences), size)]


def top_windows(claim: str, sentences: list[str], size: int = WINDOW, top: int = TOP_WINDOWS) -> tuple[str, ...]:
    """The `top` windows most lexically similar to the claim, most similar first."""
    from ragassay.judge.passage_choice import most_similar_first

    cut = windows(sentences, size)
    return tuple(cut[position] for position in most_similar_first(claim, cut)[:top])


@cache
def wice_items(size: int = WINDOW) -> tuple[Item, ...]:
    return tuple(
        Item(
            id=f"wice-{row['meta']['id']}" + ("" if size == WINDOW else f"-w{size}"),
            collection="wice",
            group=row["label"],
            statement=row["claim"],
            passages=top_windows(row["claim"], row["evidence"], size),
            question=None,
            supported=row["label"] == "supported",
        )
        for row in wice_rows()
    )


def natural_items() -> list[Item]:
    return [*memerag_items(), *scifact_items(), *wice_items()]


# --- edits: statements written to say what their passages contradict ---

# A negation per language: the first auxiliary or copula matched is negated (its pattern, its
# replacement). English past-tense verbs get "never" when no auxiliary is found.
_NEGATIONS = {
    "en": [
        (r"\b(is|was|are|were|has been|have been|had been|will be|can|could|would|should|will|does|did|do)\b", None),
    ],
    "de": [(r"\b(ist|war|sind|waren|wird|wurde|wurden|kann|hat|haben|hatte)\b", r"\1 nicht")],
    "es": [(r"\b(es|fue|son|fueron|era|eran|está|están|tiene|tienen|puede|pueden|ha|han)\b", r"no \1")],
    "fr": [
        (r"\b(est|sont|était|étaient|fut|peut|peuvent)\b", r"ne \1 pas"),
        (r"\b(a|ont|avait)\s+(été|eu|fait|été)\b", r"n'\1 pas \2"),
    ],
    "hi": [(r"\s(है|हैं|था|थी|थे)([\s।.]|$)", r" नहीं \1\2")],
}
_ENGLISH_NEGATED = {"can": "cannot", "will": "will not", "do": "do not", "does": "does not", "did": "did not"}
_PAST_VERB = re.compile(r"(?<=\w )([a-z]{3,}ed)\b")
_NEGATION_CUES = re.compile(r"\b(not|never|no|n't|nicht|kein\w*|nie|ne|pas|jamais|nunca|nadie)\b|नहीं|न\s", re.I)


def negated(statement: str, language: str) -> str | None:
    """The statement with its first auxiliary or copula negated, or None where no rule applies (or
    it holds a negation already: a double negative is no contradiction)."""
    if _NEGATION_CUES.search(statement):
        return None
    for pattern, replacement in _NEGATIONS.get(language, []):
        match = re.search(pattern, statement)
        if match is None:
            continue
        if language == "en":
            word = match.group(1)
            lower = word.lower()
            if lower in _ENGLISH_NEGATED:
                new = _ENGLISH_NEGATED[lower]
            elif " " in lower:
                first, rest = word.split(" ", 1)
                new = f"{first} not {rest}"
            else:
                new = f"{word} not"
            return statement[: match.start(1)] + new + statement[match.end(1) :]
        return statement[: match.start()] + match.expand(replacement) + statement[match.end() :]
    if language == "en":
        match = _PAST_VERB.search(statement)
        if match:
            return statement[: match.start(1)] + "never " + statement[match.start(1) :]
    return None


_DIGITS = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w])")
_NUMBER_WORDS = {
    "en": [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "twenty",
        "hundred",
    ],
    "de": [
        "eins",
        "zwei",
        "drei",
        "vier",
        "fünf",
        "sechs",
        "sieben",
        "acht",
        "neun",
        "zehn",
        "elf",
        "zwölf",
        "zwanzig",
        "hundert",
    ],
    "es": [
        "uno",
        "dos",
        "tres",
        "cuatro",
        "cinco",
        "seis",
        "siete",
        "ocho",
        "nueve",
        "diez",
        "once",
        "doce",
        "veinte",
        "cien",
    ],
    "fr": [
        "un",
        "deux",
        "trois",
        "quatre",
        "cinq",
        "six",
        "sept",
        "huit",
        "neuf",
        "dix",
        "onze",
        "douze",
        "vingt",
        "cent",
    ],
}


def number_changed(statement: str, language: str, rng: random.Random) -> str | None:
    """The statement with one of its numbers changed (digits, or a number word), or None."""
    found = list(_DIGITS.finditer(statement))
    if found:
        match = rng.choice(found)
        text = match.group(1)
        digits = text.replace(",", "")
        if "." in digits:
            whole, fraction = digits.split(".")
            new = f"{whole}.{(int(fraction) + rng.randint(1, 8)) % (10 ** len(fraction)):0{len(fraction)}d}"
            if new == digits:
                return None
        else:
            value = int(digits)
            if 1800 <= value <= 2100:
                new_value = value + rng.choice([-7, -5, -3, -2, 2, 3, 5, 7])
            elif value < 10:
                new_value = rng.choice([v for v in range(2, 13) if v != value])
            else:
                new_value = value + max(1, round(value * rng.choice([0.3, 0.5, 2.0, -0.4])))
            new = f"{new_value:,}" if "," in text else str(new_value)
        return statement[: match.start(1)] + new + statement[match.end(1) :]
    words = _NUMBER_WORDS.get(language, [])
    for word in words:
        match = re.search(rf"\b{word}\b", statement, flags=re.I)
        if match:
            other = rng.choice([w for w in words[:10] if w != word.lower()])
            if match.group(0)[0].isupper():
                other = other.capitalize()
            return statement[: match.start()] + other + statement[match.end() :]
    return None


# A name: capitalized words (one or more, joined by spaces) not at the sentence's start.
_NAME = re.compile(r"(?<=[^\s.!?] )([A-Z][a-zà-ÿ]+(?: [A-Z][a-zà-ÿ]+)*)")
_WORD = re.compile(r"[^\W\d_]+")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
]


def names(text: str) -> list[str]:
    return [match.group(1) for match in _NAME.finditer(text)]


def lowercase_words(texts) -> set[str]:
    """Every word written in lower case somewhere in texts: a capitalized word among them is a
    common word at a sentence's start or in a title, not a name."""
    return {word for text in texts for word in _WORD.findall(text) if word.islower()}


def proper_names(text: str, common: set[str]) -> list[str]:
    """The names of text none of whose words is ever written in lower case, months and days aside."""
    return [
        name
        for name in names(text)
        if not any(word.lower() in common for word in name.split()) and not set(name.split()) & set(_MONTHS)
    ]


def name_swapped(
    statement: str, passages: tuple[str, ...], others: list[str], common: set[str], rng: random.Random
) -> str | None:
    """The statement with a name its passages hold replaced by another name of as many words: one
    its passages hold that it does not (the passages keep them apart) or one of another
    statement's (`others`), by a coin; a month or a day by another month or day."""
    joined = " ".join(passages)
    said = [name for name in proper_names(statement, common) if name in joined]
    months = [word for word in re.findall(r"\b[A-Z][a-z]+\b", statement) if word in _MONTHS and word in joined]
    if not said and not months:
        return None
    if months and (not said or rng.random() < 0.25):
        old = rng.choice(months)
        group = _MONTHS[:12] if old in _MONTHS[:12] else _MONTHS[12:]
        return re.sub(rf"\b{old}\b", rng.choice([m for m in group if m != old]), statement, count=1)
    old = rng.choice(said)
    length = len(old.split())
    inside = [n for n in dict.fromkeys(proper_names(joined, common)) if n not in statement and len(n.split()) == length]
    outside = [n for n in others if n not in joined and n not in statement and len(n.split()) == length]
    pool = inside if inside and (not outside or rng.random() < 0.5) else outside
    if not pool:
        return None
    return statement.replace(old, rng.choice(pool), 1)


def edited_items(items: list[Item]) -> list[Item]:
    """Every rule that applies to each supported statement, as unsupported items (EDIT_SEED)."""
    rng = random.Random(EDIT_SEED)
    common: dict[str, set[str]] = {}
    for item in items:
        common.setdefault(item.language, set()).update(lowercase_words([item.statement, *item.passages]))
    name_pool: dict[str, list[str]] = {}
    for item in items:
        name_pool.setdefault(item.language, []).extend(proper_names(item.statement, common[item.language]))
    edits = []
    for item in items:
        if not item.supported or item.kind != "natural":
            continue
        for kind, text in (
            ("negation", negated(item.statement, item.language)),
            ("number", number_changed(item.statement, item.language, rng)),
            (
                "name",
                name_swapped(
                    item.statement, item.passages, name_pool.get(item.language, []), common[item.language], rng
                ),
            ),
        ):
            if text and text != item.statement:
                edits.append(
                    replace(item, id=f"{item.id}~{kind}", statement=text, supported=False, kind=kind, source=item.fold)
                )
    return edits


def paraphrase_items(items: list[Item]) -> list[Item]:
    """The hand-written paraphrases of PARAPHRASES, each against its claim's passages. A line names
    its claim (`of`: a WiCE item's id, or `scifact-claim-ID` for a SciFact claim's supported pair)
    and the sha256 of the claim's text it was written from, so a changed dataset is an error,
    never a paraphrase of another sentence."""
    import hashlib

    by_fold = {item.fold if item.collection == "scifact" else item.id: item for item in items if item.supported}
    written = []
    for line in PARAPHRASES.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        item = by_fold[row["of"]]
        if hashlib.sha256(item.statement.encode()).hexdigest()[:16] != row["claim_sha256"]:
            raise ValueError(
                f"{PARAPHRASES.name}: {row['of']}: the claim is not the one the paraphrase was written from"
            )
        written.append(
            replace(item, id=f"{item.id}~paraphrase", statement=row["paraphrase"], kind="paraphrase", source=item.fold)
        )
    return written
