"""The learned verdict (issue 59): shipped in the package with its provenance, read the same way
every time, refused when it is not this code's, and refitted to the same coefficients."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ragassay.judge.learned_verdict import (
    LEARNED_THRESHOLD,
    LEARNED_VERDICT_FILE,
    LEARNED_VERDICT_VERSION,
    LearnedVerdictError,
    fit_coefficients,
    fitted_model,
    learned_verdict_for,
    load_learned_verdict,
    shipped_learned_verdict,
)
from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION
from ragassay.judge.verdict_features import FEATURE_NAMES, verdict_features

PASSAGE = "Ellicott City Station, opened in 1830 between Ellicott City and Baltimore, is the oldest surviving station in the USA."


def test_the_shipped_verdict_loads_with_its_provenance_and_reads_the_default_judge_only():
    verdict = shipped_learned_verdict()
    assert verdict.path == LEARNED_VERDICT_FILE and LEARNED_VERDICT_FILE.parent.name == "judge"
    provenance = verdict.provenance
    assert provenance["sentences"] == 3171 and provenance["languages"] == ["de", "en", "es", "fr", "hi"]
    assert provenance["fitted"] and "MEMERAG" in provenance["labels"] and provenance["command"]
    for language in ("de", "es", "fr", "hi"):
        held_out = provenance["held_out"][language][verdict.candidate]
        assert 0.5 < held_out["balanced_accuracy"]["value"] <= 1 and held_out["sentences"] > 100
    assert set(verdict.weights) <= set(FEATURE_NAMES) | {"judge_log_odds"}
    assert learned_verdict_for("qwen2.5-1.5b:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf@cc324af070c2") is verdict
    assert learned_verdict_for("smollm2:x") is None and learned_verdict_for("openai:qwen@http://x") is None


def test_a_statement_its_passage_holds_is_supported_and_one_it_does_not_is_not_the_same_every_time():
    verdict = shipped_learned_verdict()
    held = "Ellicott City Station is the oldest surviving station in the USA."
    invented = "The station was rebuilt in 1952 by Amtrak after a flood destroyed its roof."
    ps = [verdict.p_supported(s, [PASSAGE], "Which station is the oldest?", 0.9) for s in (held, invented) * 2]
    assert ps[0] >= LEARNED_THRESHOLD > ps[1]
    assert ps[:2] == ps[2:], "the same inputs, the same verdict"
    features = verdict_features(invented, [PASSAGE])
    assert features["novel_numbers"] == 1 and features["token_precision_best"] < 0.5


def test_features_read_scripts_whose_vowel_signs_are_not_letters():
    # Hindi: a vowel sign (a combining mark) must not cut a word in two.
    hindi = verdict_features("दिल्ली भारत की राजधानी है", ["नई दिल्ली भारत की राजधानी है और एक बड़ा शहर है"])
    assert hindi["token_precision_best"] == 1.0 and hindi["novel_token_share"] == 0.0


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"version": "learned-verdict/0"}, "version 'learned-verdict/0'"),
        ({"support_prompt_version": "support-probability/4"}, "support prompt 'support-probability/4'"),
        ({"weights": {"judge_entropy": 1.0}}, "judge_entropy"),
    ],
)
def test_a_file_of_another_version_prompt_or_inputs_is_refused_naming_it(tmp_path, change, named):
    data = json.loads(LEARNED_VERDICT_FILE.read_text()) | change
    path = tmp_path / "learned_verdict.json"
    path.write_text(json.dumps(data))
    with pytest.raises(LearnedVerdictError, match=r"learned_verdict\.json") as refused:
        load_learned_verdict(path)
    assert named in str(refused.value)
    path.write_text("{not json")
    with pytest.raises(LearnedVerdictError, match="not a learned-verdict file"):
        load_learned_verdict(path)


def test_a_small_real_fit_reproduces_its_coefficients_and_reads_as_the_fitted_model(tmp_path):
    statements = [
        ("Ellicott City Station is the oldest station in the USA.", True),
        ("The line opened in 1830 between Ellicott City and Baltimore.", True),
        ("Ellicott City Station opened in 1830.", True),
        ("The station lies between Ellicott City and Baltimore.", True),
        ("The oldest surviving station in the USA is Ellicott City Station.", True),
        ("The station was designed by Benjamin Latrobe in 1829.", False),
        ("Trains reach Washington in forty minutes from there.", False),
        ("It closed in 1972 and reopened as a museum in 1976.", False),
        ("The station has four platforms and a freight yard.", False),
        ("Amtrak rebuilt it after the flood of 2016.", False),
    ]
    x = np.array([[verdict_features(s, [PASSAGE])[n] for n in FEATURE_NAMES] for s, _ in statements])
    y = np.array([int(label) for _, label in statements])
    first, again = fit_coefficients(x, y, list(FEATURE_NAMES)), fit_coefficients(x, y, list(FEATURE_NAMES))
    assert first == again, "a refit gives the same coefficients"
    path = tmp_path / "learned_verdict.json"
    path.write_text(
        json.dumps(
            {
                "version": LEARNED_VERDICT_VERSION,
                "support_prompt_version": SUPPORT_PROMPT_VERSION,
                "judge_input": False,
                **first,
                "provenance": {"sentences": len(y)},
            }
        )
    )
    loaded = load_learned_verdict(path)
    fitted = fitted_model(x, y).predict_proba(x)[:, 1]
    read = [loaded.p_supported(s, [PASSAGE], None, None) for s, _ in statements]
    assert all(math.isclose(a, b, abs_tol=1e-4) for a, b in zip(read, fitted, strict=True))


@pytest.mark.slow
def test_the_default_judges_verdicts_are_the_learned_ones_and_replay_exactly_from_the_cache(tmp_path):
    from ragassay.judge.judge import Judge
    from ragassay.llm.cache import CompletionCache
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import DEFAULT_JUDGE

    statements = ["Ellicott City Station is the oldest surviving station in the USA.", "It was rebuilt in 1952."]
    passages = [PASSAGE, "Baltimore is a port city in Maryland."]
    results = []
    for _ in range(2):  # a fresh judge each time: the second reads every call from the cache
        models = ChatModels()
        judge = Judge(models.get(DEFAULT_JUDGE, CompletionCache(tmp_path / "cache.sqlite")))
        results.append(judge.support_by_passage(passages, statements, "Which station is the oldest?"))
        models.close()
    fresh, replayed = results
    assert [r.value for r in fresh] == [r.value for r in replayed]
    assert all(r.usage.calls == 0 and r.usage.cached_calls for r in replayed)
    assert all(r.usage.calls for r in fresh)
    for result, statement in zip(fresh, statements, strict=True):
        value = result.value
        assert value.judge_p_supported is not None, "the judge's own P is kept beside the learned one"
        expected = shipped_learned_verdict().p_supported(statement, passages, "Which station is the oldest?", None)
        assert value.p_supported == round(expected, 6)
        assert value.verdict == ("supported" if value.p_supported >= LEARNED_THRESHOLD else "unsupported")
    assert fresh[0].value.verdict == "supported" and fresh[1].value.verdict == "unsupported"
