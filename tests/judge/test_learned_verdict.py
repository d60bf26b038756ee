"""The learned verdict (issues 59 and 70): shipped in the package with its provenance, fitted
across three collections of different kinds and chosen by leaving each out, read the same way
every time, refused when it is not this code's, and refitted to the same coefficients."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ragassay.judge.learned_verdict import (
    EDIT_KINDS,
    LEARNED_THRESHOLD,
    LEARNED_VERDICT_FILE,
    LEARNED_VERDICT_VERSION,
    LearnedVerdictError,
    fit_coefficients,
    fitted_model,
    learned_verdict_for,
    load_learned_verdict,
    shipped_learned_verdict,
    verdict_version,
)
from ragassay.judge.prompts import SUPPORT_PROMPT_VERSION, THREE_WAY_PROMPT_VERSION
from ragassay.judge.verdict_features import FEATURE_NAMES, verdict_features
from ragassay.metrics.answer_metrics.mean_support import MEAN_SUPPORT_FAITHFUL_AT

PASSAGE = "Ellicott City Station, opened in 1830 between Ellicott City and Baltimore, is the oldest surviving station in the USA."
# Statements written here (from no dataset) against two passages of their own: as written, then
# edited to say the opposite (a negation, a number in words, a year).
BRIDGE = [
    "The Harbour Bridge took eight years to build and opened to traffic in March 1932. It was designed by John "
    "Bradfield, the chief engineer of the New South Wales public works department.",
    "The bridge carries rail, vehicle, bicycle and pedestrian traffic between the city centre and the North Shore.",
]
BRIDGE_QUESTION = "Who designed the Harbour Bridge?"
AS_WRITTEN_AND_EDITED = [
    ("The bridge was designed by John Bradfield.", "The bridge was not designed by John Bradfield."),
    ("The Harbour Bridge took eight years to build.", "The Harbour Bridge took four years to build."),
    ("It opened to traffic in March 1932.", "It opened to traffic in March 1952."),
]
# learned-verdict/1 (shipped 2026-12-04, fitted on MEMERAG alone), copied here to show what it
# called these statements: it reads which words a statement shares with its passages.
V1_INTERCEPT = -1.256235
V1_WEIGHTS = {
    "token_precision_best": -1.947419,
    "token_precision_all": -1.336939,
    "char_precision_best": 3.0748,
    "novel_token_share": -3.158324,
    "novel_numbers": -0.854202,
    "question_share": -1.019495,
    "fuzzy_best": 2.036183,
    "log_tokens": 0.245207,
    "long_token_precision_best": 1.515279,
    "bigram_precision_best": -0.733374,
}


SMALL_FIT = [
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


def v1_p_supported(statement: str, passages: list[str], question: str) -> float:
    features = verdict_features(statement, passages, question)
    return 1 / (1 + math.exp(-(V1_INTERCEPT + sum(w * features[name] for name, w in V1_WEIGHTS.items()))))


def test_the_shipped_verdict_names_its_collections_its_worst_held_out_figure_and_its_inputs():
    verdict = shipped_learned_verdict()
    assert verdict.path == LEARNED_VERDICT_FILE and LEARNED_VERDICT_FILE.parent.name == "judge"
    provenance = verdict.provenance
    assert provenance["collections"] == ["memerag", "scifact", "wice"]
    assert provenance["languages"] == ["de", "en", "es", "fr", "hi"]
    assert provenance["fitted"] and "MEMERAG" in provenance["labels"] and "WiCE" in provenance["labels"]
    assert provenance["command"] and provenance["rule"].startswith("(written after")
    # Each whole collection and each MEMERAG language held out, with its balanced accuracy, AUC and
    # the edits it was tried on; the worst collection is named beside the mean.
    for held in (*provenance["collections"], *(f"memerag-{lang}" for lang in provenance["languages"])):
        figures = provenance["held_out"][held]
        assert 0.5 <= figures["balanced_accuracy"]["value"] <= 1 and figures["sentences"] >= 50
        assert all(f"{kind}_flips" in figures for kind in EDIT_KINDS)
    worst = provenance["worst_held_out"]
    assert worst["balanced_accuracy"]["value"] == min(
        provenance["held_out"][c]["balanced_accuracy"]["value"] for c in provenance["collections"]
    )
    assert worst["balanced_accuracy"]["value"] <= provenance["mean_held_out_balanced_accuracy"]
    # The rule chose the judge's answer to the three-way question: the verdict reads it and nothing
    # else, more likely supported the more the judge says "supported", less the more it says
    # "contradicted".
    assert verdict.candidate == "three-way odds" and verdict.judge_prompts == ("three-way",)
    assert verdict.judge_inputs == ("three_way_supported_log_odds", "three_way_contradicted_log_odds")
    assert set(verdict.weights) == set(verdict.judge_inputs)
    assert verdict.weights["three_way_supported_log_odds"] > 0 > verdict.weights["three_way_contradicted_log_odds"]
    assert verdict.families == (), "no MiniLM or word features to compute"
    # The answer-level score and its bound, chosen on people's answer-level labels.
    answers = provenance["answer_level"]
    assert answers["score"] == "mean P" and answers["threshold"] == MEAN_SUPPORT_FAITHFUL_AT
    assert learned_verdict_for("qwen2.5-1.5b:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf@cc324af070c2") is verdict
    assert learned_verdict_for("smollm2:x") is None and learned_verdict_for("openai:qwen@http://x") is None
    # What its P(supported) is named by wherever one is stored and reused (labels, aligned judges):
    # another verdict's P is never read as this one's.
    assert verdict_version("qwen2.5-1.5b:x") == f"{LEARNED_VERDICT_VERSION} over {THREE_WAY_PROMPT_VERSION}"
    assert verdict_version("smollm2:x") == SUPPORT_PROMPT_VERSION
    summary = verdict.summary()
    assert f"{worst['balanced_accuracy']['value']:.2f} at worst ({worst['collection']} held out)" in summary
    assert "once edited to contradict their passages" in summary


def test_the_first_learned_verdict_called_these_contradictions_supported():
    """What issue 70 found: learned-verdict/1 keeps a negated statement, a number changed in words
    and a changed year supported (the tests with the judge, below, show the shipped verdict)."""
    for written, edited in AS_WRITTEN_AND_EDITED:
        assert v1_p_supported(written, BRIDGE, BRIDGE_QUESTION) >= LEARNED_THRESHOLD
        assert v1_p_supported(edited, BRIDGE, BRIDGE_QUESTION) >= LEARNED_THRESHOLD, edited


def test_features_read_scripts_whose_vowel_signs_are_not_letters():
    # Hindi: a vowel sign (a combining mark) must not cut a word in two.
    hindi = verdict_features("दिल्ली भारत की राजधानी है", ["नई दिल्ली भारत की राजधानी है और एक बड़ा शहर है"])
    assert hindi["token_precision_best"] == 1.0 and hindi["novel_token_share"] == 0.0


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"version": "learned-verdict/2"}, "version 'learned-verdict/2'"),
        ({"prompt_versions": {"three-way": "support-three-way/0"}}, "three-way prompt 'support-three-way/0'"),
        ({"prompt_versions": {}}, f"three-way prompt None, the judge asks {THREE_WAY_PROMPT_VERSION!r}"),
        ({"judge_inputs": ["judge_entropy"]}, "judge inputs ['judge_entropy']"),
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
    x = np.array([[verdict_features(s, [PASSAGE])[n] for n in FEATURE_NAMES] for s, _ in SMALL_FIT])
    y = np.array([int(label) for _, label in SMALL_FIT])
    first, again = fit_coefficients(x, y, list(FEATURE_NAMES)), fit_coefficients(x, y, list(FEATURE_NAMES))
    assert first == again, "a refit gives the same coefficients"
    path = tmp_path / "learned_verdict.json"
    path.write_text(
        json.dumps(
            {
                "version": LEARNED_VERDICT_VERSION,
                "judge_inputs": [],
                **first,
                "provenance": {"sentences": len(y)},
            }
        )
    )
    loaded = load_learned_verdict(path)
    fitted = fitted_model(x, y).predict_proba(x)[:, 1]
    read = [loaded.p_supported(s, [PASSAGE], None, None) for s, _ in SMALL_FIT]
    assert all(math.isclose(a, b, abs_tol=1e-4) for a, b in zip(read, fitted, strict=True))


def test_a_verdict_that_reads_no_judge_output_asks_the_judge_nothing_unless_its_odds_are_asked(tmp_path):
    """No call that nothing reads: a learned verdict of words alone asks the judge model nothing
    (real SmolLM2 behind the judge); asked to show the judge's own P (`judge calibrate`, `eval
    answers --judge-odds`), one call a statement, against its most similar passage."""
    from ragassay.judge.judge import Judge
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import ChatModelConfig

    x = np.array([[verdict_features(s, [PASSAGE])[n] for n in FEATURE_NAMES] for s, _ in SMALL_FIT])
    y = np.array([int(label) for _, label in SMALL_FIT])
    path = tmp_path / "learned_verdict.json"
    path.write_text(
        json.dumps(
            {
                "version": LEARNED_VERDICT_VERSION,
                "judge_inputs": [],
                **fit_coefficients(x, y, list(FEATURE_NAMES)),
                "provenance": {"sentences": len(y)},
            }
        )
    )
    words_only = load_learned_verdict(path)
    models = ChatModels()
    model = models.get(ChatModelConfig())
    passages = [PASSAGE, "Baltimore is a port city in Maryland."]
    statements = ["Ellicott City Station opened in 1830.", "It was rebuilt in 1952."]
    question = "Which station is the oldest?"
    quiet = Judge(model, learned=words_only).support_by_passage(passages, statements, question)
    assert all(r.usage.calls == 0 and r.value.judge_p_supported is None for r in quiet)
    shown = Judge(model, learned=words_only, own_odds=True).support_by_passage(passages, statements, question)
    models.close()
    assert [r.usage.calls for r in shown] == [1, 1]
    assert all(0 <= r.value.judge_p_supported <= 1 for r in shown)
    # The judge's P is shown beside the verdict, never read into it.
    assert [r.value.p_supported for r in shown] == [r.value.p_supported for r in quiet]


@pytest.mark.slow
def test_the_shipped_verdict_calls_a_negation_a_number_in_words_and_a_changed_year_unsupported():
    """The statements learned-verdict/1 kept supported once edited (test above), read by the
    shipped verdict through the default judge: each as written supported, each edit unsupported."""
    from ragassay.judge.judge import Judge
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import DEFAULT_JUDGE

    models = ChatModels()
    judge = Judge(models.get(DEFAULT_JUDGE))
    written, edited = zip(*AS_WRITTEN_AND_EDITED, strict=True)
    verdicts = judge.support_by_passage(BRIDGE, [*written, *edited], BRIDGE_QUESTION)
    models.close()
    called = {s: v.value.verdict for s, v in zip([*written, *edited], verdicts, strict=True)}
    assert [called[s] for s in written] == ["supported"] * 3, called
    assert [called[s] for s in edited] == ["unsupported"] * 3, called
    assert all(v.usage.calls == 1 for v in verdicts), "one call a statement: its most similar passage"


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
    assert [r.usage.calls for r in fresh] == [1, 1], "one call a statement, the one the verdict reads"
    for result, statement in zip(fresh, statements, strict=True):
        value = result.value
        assert value.three_way is not None, "the judge's answer to the three-way question is what the verdict read"
        assert value.judge_p_supported is None, "its own P under the support prompt: not asked, nothing reads it"
        answered = {"supported": value.three_way.p_supported, "contradicted": value.three_way.p_contradicted}
        expected = shipped_learned_verdict().p_supported(
            statement, passages, "Which station is the oldest?", {"three-way": answered}
        )
        assert value.p_supported == round(expected, 6)
        assert value.verdict == ("supported" if value.p_supported >= LEARNED_THRESHOLD else "unsupported")
    assert fresh[0].value.verdict == "supported" and fresh[1].value.verdict == "unsupported"
