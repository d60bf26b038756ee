"""Token-level alignment with the bundled MiniLM (judge/token_alignment.py): each statement token's
best cosine among a passage's tokens, read from the real model's token vectors."""

from __future__ import annotations

import numpy as np
import pytest

from ragassay.judge.token_alignment import (
    ALIGNMENT_FEATURES,
    MAX_PIECES,
    default_token_encoder,
    token_matches,
)

PASSAGE = "The colony was moved to a new hive in April, after the queen had been marked with a blue dot."


@pytest.fixture(scope="module")
def encoder():
    return default_token_encoder()


def test_a_statement_its_passage_says_in_other_words_aligns_better_than_one_it_does_not(encoder):
    said_again = token_matches(encoder, "In April the bees were rehoused after the queen was marked.", [PASSAGE])
    unrelated = token_matches(encoder, "Honey is extracted by spinning the frames in a centrifuge.", [PASSAGE])
    assert said_again.features()["align_precision_best"] > unrelated.features()["align_precision_best"] + 0.1
    assert said_again.features()["align_low_share"] < unrelated.features()["align_low_share"]
    # A statement copied from its passage matches itself token for token.
    copied = token_matches(encoder, PASSAGE, [PASSAGE]).features()
    assert copied["align_precision_best"] == pytest.approx(1.0, abs=1e-3) and copied["align_low_share"] == 0.0


def test_each_passage_is_matched_apart_and_together(encoder):
    passages = ["Beeswax melts between 62 and 64 degrees Celsius.", PASSAGE]
    matches = token_matches(encoder, "The queen was marked with a blue dot and wax melts at 63 degrees.", passages)
    assert matches.by_passage.shape[0] == 2
    features = matches.features()
    assert set(features) == set(ALIGNMENT_FEATURES)
    # Together the passages hold more of the statement than either one alone.
    assert features["align_precision_all"] > features["align_precision_best"]
    assert np.allclose(matches.over_all, matches.by_passage.max(axis=0))


def test_a_text_longer_than_the_model_reads_at_once_is_read_in_windows_every_token_once(encoder):
    long_text = " ".join(f"Hive {n} was inspected on day {n} and its queen was seen." for n in range(80))
    pieces = len(encoder._tokenizer.encode(long_text, add_special_tokens=False).ids)
    assert pieces > 3 * MAX_PIECES
    vectors = encoder.vectors(long_text)
    assert vectors.shape == (pieces, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # The last sentence, read in the last window (among other sentences, so its vectors are not
    # those of the sentence alone), is found there as nearly as in itself, and far above a
    # sentence the text never says.
    last = "Hive 79 was inspected on day 79 and its queen was seen."
    found = token_matches(encoder, last, [long_text]).features()["align_precision_best"]
    never = token_matches(encoder, "The beekeeper sold honey at the market.", [long_text]).features()
    assert found > 0.85 and found - never["align_precision_best"] > 0.4


def test_no_passage_or_no_tokens_reads_as_nothing_held(encoder):
    assert token_matches(encoder, "A statement.", []).features()["align_precision_best"] == 0.0
    assert token_matches(encoder, "", [PASSAGE]).features()["align_low_share"] == 1.0
