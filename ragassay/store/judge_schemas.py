"""The judge's tables: its verdicts behind each answer's scores (JUDGMENTS), people's labels of
them (JUDGE_LABELS), the labels a batch was corrected with (JUDGE_CALIBRATION) and the pairwise
comparisons (PAIRWISE)."""

from __future__ import annotations

import polars as pl

from ragassay.store.schemas import UTC_TIME, TableSpec

JUDGMENTS = TableSpec(
    "judgments",
    6,
    pl.Schema(
        {
            "configuration": pl.String,
            "query_collection": pl.String,
            "query_id": pl.String,
            "metric": pl.String,
            "statement_index": pl.Int32,
            "statement": pl.String,
            # The cited source (citation precision); null when judged against the whole context.
            "source_number": pl.Int32,
            # supported, unsupported or unreadable; for answer_correctness (the whole answer graded
            # against the reference answer): correct, incorrect or unreadable.
            "verdict": pl.String,
            # The judge's P(supported) of a support verdict; the verdict applies the threshold to
            # it. Null when unreadable, and for answer_correctness (version 3 and before held its
            # P(correct) here).
            "p_supported": pl.Float64,
            # Version 5: the judge model's own P(supported) against the statement's most similar
            # passage, beside a learned verdict's p_supported, where it was asked (the verdict reads
            # it, or `judge_odds` asked it to be shown); null otherwise.
            "judge_p_supported": pl.Float64,
            # Version 6: the judge model's P(supported) and P(contradicted) under the three-way
            # question (supported / contradicted / not mentioned) against the same passage, which
            # the shipped learned verdict reads; null where it was not asked.
            "three_way_p_supported": pl.Float64,
            "three_way_p_contradicted": pl.Float64,
            # Version 4: the judge's P(correct) of the answer_correctness verdict; null for every
            # other verdict and when unreadable.
            "p_correct": pl.Float64,
            "error": pl.String,
            # Version 3: the exact text the statement was judged against (the numbered sources,
            # the cited source, or the reference answer for answer_correctness), and the sources
            # the statement cites, so a person can label the verdict later (`ragassay judge label`).
            "context": pl.String,
            "cited_sources": pl.List(pl.Int32),
        }
    ),
)


# People's labels of the judge's support verdicts, one collection's (`ragassay judge label`): one
# row per label given (a statement labelled twice, or by two people, has two rows). What was
# labelled, where it was sampled from, what the judge said then (never shown while labelling).
JUDGE_LABELS = TableSpec(
    "judge_labels",
    1,
    pl.Schema(
        {
            # sha256 (16 hex) of the statement and its context digest: the same judgement in two
            # configurations or batches is one item.
            "item_id": pl.String,
            # The sample it was labelled in: batch, seed and size (judge/calibration/labels/sample.py, sample_id).
            "sample_id": pl.String,
            "batch_id": pl.String,
            "configuration": pl.String,
            "query_collection": pl.String,
            "query_id": pl.String,
            "metric": pl.String,
            "question": pl.String,
            "answer": pl.String,
            "statement": pl.String,
            "context": pl.String,
            "context_digest": pl.String,
            "cited_sources": pl.List(pl.Int32),
            # The judge's verdict the sample was stratified by, and how many of the batch's
            # judged statements had that verdict: the weight of the stratum's labels.
            "stratum": pl.String,
            "stratum_size": pl.Int64,
            "judge_model": pl.String,
            "prompt_version": pl.String,
            "support_threshold": pl.Float64,
            "judge_verdict": pl.String,
            "p_supported": pl.Float64,
            "label": pl.String,  # supported, unsupported or skipped (not used in calibration)
            "who": pl.String,
            "labelled_at": UTC_TIME,
        }
    ),
)


# The labels a judge-corrected estimate used, as strata of (label, verdict) counts
# (metrics/judge_error.py): logged with every answer evaluation, read back by `ragassay gate`.
JUDGE_CALIBRATION = TableSpec(
    "judge_calibration",
    1,
    pl.Schema(
        {
            "source": pl.String,  # labels (the collection's); prior (bundled, other documents) before 2026-12-05
            "stratum": pl.String,
            "population": pl.Float64,
            "supported_judged_supported": pl.Int64,
            "supported_judged_unsupported": pl.Int64,
            "unsupported_judged_supported": pl.Int64,
            "unsupported_judged_unsupported": pl.Int64,
        }
    ),
)


PAIRWISE = TableSpec(
    "pairwise",
    1,
    pl.Schema(
        {
            "configuration_a": pl.String,
            "configuration_b": pl.String,
            "query_collection": pl.String,
            "query_id": pl.String,
            # The judge's preference with a shown first: first, second or tie; "identical" when
            # both answers are the same text (a tie, not asked); null when unreadable.
            "a_first": pl.String,
            "b_first": pl.String,
            "outcome": pl.String,  # a, b, tie, inconsistent or unreadable
        }
    ),
)
