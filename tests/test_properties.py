"""Properties of the pure core, checked on inputs hypothesis makes up: metrics stay in [0, 1] and
equal pytrec_eval's, recall@k never falls as k grows, RRF's scores do not depend on the order of
its lists, chunk spans cover the text within bounds, the gate's verdicts do not depend on the order
of candidates, and redaction removes every credential form."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from ragassay.gates.regression import DropBound, compare_batches
from ragassay.ingest.chunking import chunk_document
from ragassay.metrics.retrieval import judge_run, ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank
from ragassay.redaction import redact
from ragassay.search.fusion import reciprocal_rank_fusion

DOCS = [f"d{n}" for n in range(12)]


@st.composite
def judged_runs(draw):
    """(rankings, judgements): 1-5 questions, each a ranking of distinct documents and graded
    judgements with at least one relevant document."""
    questions = draw(st.integers(1, 5))
    rankings, judgements = [], []
    for _ in range(questions):
        rankings.append(draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=10)))
        grades = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(0, 3), min_size=1, max_size=8))
        if not any(g > 0 for g in grades.values()):
            grades[draw(st.sampled_from(DOCS))] = draw(st.integers(1, 3))
        judgements.append(grades)
    return rankings, judgements


@settings(max_examples=150, deadline=None)
@given(judged_runs(), st.integers(1, 10))
def test_metrics_stay_in_range_and_recall_never_falls_as_k_grows(run, k):
    rankings, judgements = run
    judged = judge_run(rankings, judgements, 10)
    for metric in (recall_at_k(judged, k), precision_at_k(judged, k), ndcg_at_k(judged, k), reciprocal_rank(judged)):
        assert ((metric >= 0) & (metric <= 1 + 1e-12)).all()
    assert (recall_at_k(judged, min(k + 1, 10)) >= recall_at_k(judged, k) - 1e-12).all()


@settings(max_examples=100, deadline=None)
@given(judged_runs(), st.sampled_from([1, 3, 5, 10]))
def test_metrics_equal_pytrec_eval_on_random_runs(run, k):
    rankings, judgements = run
    judged = judge_run(rankings, judgements, 10)
    qrels = {f"q{i}": dict(grades) for i, grades in enumerate(judgements)}
    # Distinct descending scores, so pytrec_eval ranks exactly as given.
    trec_run = {
        f"q{i}": {doc: float(100 - rank) for rank, doc in enumerate(ranking)} for i, ranking in enumerate(rankings)
    }
    reference = pytrec_eval.RelevanceEvaluator(
        qrels, {f"recall.{k}", f"P.{k}", f"ndcg_cut.{k}", "recip_rank"}
    ).evaluate(trec_run)
    ours = {
        "recall": recall_at_k(judged, k),
        "P": precision_at_k(judged, k),
        "ndcg_cut": ndcg_at_k(judged, k),
        "recip_rank": reciprocal_rank(judged),
    }
    for i in range(len(rankings)):
        expected = reference.get(f"q{i}")
        if expected is None:  # pytrec_eval leaves out a question whose run is empty: every metric 0
            assert all(values[i] == 0 for values in ours.values())
            continue
        assert ours["recall"][i] == pytest.approx(expected[f"recall_{k}"], abs=1e-9)
        assert ours["P"][i] == pytest.approx(expected[f"P_{k}"], abs=1e-9)
        assert ours["ndcg_cut"][i] == pytest.approx(expected[f"ndcg_cut_{k}"], abs=1e-9)
        assert ours["recip_rank"][i] == pytest.approx(expected["recip_rank"], abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(DOCS), unique=True, max_size=10), min_size=1, max_size=4),
    st.randoms(use_true_random=False),
    st.integers(1, 100),
)
def test_rrf_scores_do_not_depend_on_the_order_of_the_lists(rankings, random, k):
    shuffled = list(rankings)
    random.shuffle(shuffled)
    assert dict(reciprocal_rank_fusion(rankings, k)) == pytest.approx(dict(reciprocal_rank_fusion(shuffled, k)))
    scores = [score for _, score in reciprocal_rank_fusion(rankings, k)]
    assert scores == sorted(scores, reverse=True)


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab c.\n\t"), max_size=3000),
    st.integers(100, 800),
    st.integers(0, 99),
    st.lists(st.integers(1, 2999), max_size=5),
)
def test_chunk_spans_stay_in_bounds_cover_the_text_and_never_cross_a_page(text, size, overlap, cuts):
    pages = tuple(sorted({0, *[c for c in cuts if c < len(text)]})) if text else None
    chunks = chunk_document(text, size, overlap, pages)
    covered = np.zeros(len(text), dtype=bool)
    for chunk in chunks:
        assert 0 <= chunk.start < chunk.end <= len(text) and chunk.end - chunk.start <= size
        covered[chunk.start : chunk.end] = True
        if pages is not None:
            page_start = pages[chunk.page - 1]
            page_end = pages[chunk.page] if chunk.page < len(pages) else len(text)
            assert page_start <= chunk.start and chunk.end <= page_end, "a chunk never crosses a page"
    assert all(covered[i] for i, character in enumerate(text) if not character.isspace()), (
        "every visible character is in a chunk"
    )


SAFE = st.text(
    alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$'()*+,;="),
    min_size=4,
    max_size=24,
)


@settings(max_examples=200, deadline=None)
@given(
    SAFE,
    SAFE,
    st.sampled_from(["http", "https", "postgresql+psycopg2", "redis"]),
    st.sampled_from(["api_key", "API-KEY", "token", "access_token", "password", "secret", "key"]),
)
def test_redaction_removes_every_credential_form(user, secret, scheme, parameter):
    # The credentials' values must not matter: the redacted text is the redaction of the same
    # text with sentinel credentials, which holds neither sentinel. (Asserting only "the secret is
    # not in the output" fails when hypothesis draws a secret that is also the host's name.)
    sentinels = {"user": "SENTINELxUSER", "secret": "SENTINELxSECRET"}
    for template in (
        "{scheme}://{user}:{secret}@host:8080/v1",
        "{scheme}://{secret}@host/x",
        "see {scheme}://{user}:{secret}@h and more",
        "http://host/v1?{parameter}={secret}",
        "http://host/v1?a=1&{parameter}={secret}#frag",
    ):
        text = template.format(scheme=scheme, user=user, secret=secret, parameter=parameter)
        with_sentinels = redact(template.format(scheme=scheme, parameter=parameter, **sentinels))
        assert not any(sentinel in with_sentinels for sentinel in sentinels.values()), with_sentinels
        assert redact(text) == with_sentinels, text


@st.composite
def batch_pair(draw):
    """Per-question tables of one configuration in a baseline and a candidate batch (2-30 shared
    questions, scores on a coarse grid so ties and equal means happen), and a shuffle of each."""
    questions = draw(st.integers(2, 30))
    levels = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])
    ids = [f"q{n}" for n in range(questions)]

    def table(scores: list[float]) -> pl.DataFrame:
        return pl.DataFrame({"query_collection": ["s"] * questions, "query_id": ids, "recall@5": scores})

    baseline = table(draw(st.lists(levels, min_size=questions, max_size=questions)))
    candidate = table(draw(st.lists(levels, min_size=questions, max_size=questions)))
    shuffles = [draw(st.permutations(range(questions))) for _ in range(2)]
    return baseline, candidate, shuffles


@settings(max_examples=60, deadline=None)
@given(batch_pair(), st.sampled_from([0.0, 0.05, 0.2]))
@pytest.mark.slow
def test_the_gates_verdicts_do_not_depend_on_the_order_of_the_rows_or_the_bounds(pair, max_drop):
    baseline, candidate, (baseline_order, candidate_order) = pair
    bounds = [DropBound("recall@5", max_drop), DropBound("recall@5", max_drop, label="hybrid")]
    as_given = compare_batches({"hybrid": baseline}, {"hybrid": candidate}, bounds)
    shuffled = compare_batches(
        {"hybrid": baseline[list(baseline_order)]}, {"hybrid": candidate[list(candidate_order)]}, bounds[::-1]
    )
    assert_frame_equal(as_given, shuffled)
