"""Contradiction cues (judge/contradiction_cues.py): a negation, a number or a name its passages do
not hold, read against the sentence that holds most of the statement."""

from __future__ import annotations

import pytest

from ragassay.judge.contradiction_cues import aligned_sentence, cue_features, negation_count, numbers

PASSAGES = [
    "Smoke calms guard bees. The apiary was founded by Maria Keller in 1998 and holds twelve colonies.",
    "Varroa mites are treated with oxalic acid in winter, when the colony has no brood.",
]


def test_the_aligned_sentence_is_the_one_holding_most_of_the_statement():
    assert aligned_sentence("Maria Keller founded the apiary in 1998.", PASSAGES).startswith("The apiary was founded")


@pytest.mark.parametrize(
    ("statement", "fired"),
    [
        ("The apiary was founded by Maria Keller in 1998.", set()),
        ("The apiary was not founded by Maria Keller.", {"negation_added"}),
        ("Varroa mites are treated with oxalic acid in winter.", {"negation_dropped"}),
        ("The apiary was founded by Maria Keller in 1996.", {"numbers_unmatched"}),
        ("The apiary holds nine colonies.", {"numbers_unmatched"}),
        ("The apiary holds 12 colonies.", set()),
        ("The apiary was founded by Anna Brandt in 1998.", {"names_unmatched"}),
    ],
)
def test_each_cue_fires_on_its_kind_of_edit_and_not_on_the_sentence_as_written(statement, fired):
    features = cue_features(statement, PASSAGES)
    assert {name for name, value in features.items() if value > 0} == fired


def test_negations_and_numbers_are_read_in_the_languages_fitted():
    assert negation_count("It isn't open, and it never was.") == 2
    assert negation_count("Der Stock ist nicht leer") == 1
    assert negation_count("La colmena no está vacía") == 1
    assert negation_count("La ruche n'est pas vide") == 1
    assert negation_count("छत्ता खाली नहीं है") == 1
    assert numbers("two hives, 1,200 bees and zwölf Rähmchen") == {"2", "1200", "12"}
