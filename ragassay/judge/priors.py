"""The bundled calibration of the default judge: how its support verdicts agreed with people on
MEMERAG-EXT's development half (human labels of real RAG answers on Wikipedia passages; other
documents than a team's own). It is what a judged number is corrected with until a collection
has labels of its own (`ragassay judge label`), and is named as a general prior wherever it is
used: how far it transfers to other documents is exactly what it cannot say.

Measured by `benchmarks/bench_judge_agreement.py --half dev` (BENCHMARKS.md, "Judge-corrected
estimates", "Cheaper verdicts"); only counts are kept here, never the data (CC BY-NC 4.0, read from ../shared).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ragassay.metrics.judge_error import JudgeCalibration, LabelStratum


@dataclass(frozen=True)
class Prior:
    """A judge's (label, verdict) counts on labelled statements of other documents."""

    catalog_name: str
    prompt_version: str
    support_threshold: float
    description: str
    supported_judged_supported: int
    supported_judged_unsupported: int
    unsupported_judged_supported: int
    unsupported_judged_unsupported: int


_SUPPORT_PROBABILITY_4 = Prior(
    catalog_name="qwen2.5-1.5b",
    prompt_version="support-probability/4",
    support_threshold=0.85,
    description="MEMERAG-EXT development half: 66 labelled sentences of RAG answers on Wikipedia, not these documents",
    # benchmarks/bench_judge_correction.py, 2026-12-02: sensitivity 0.765, specificity 0.667.
    supported_judged_supported=39,
    supported_judged_unsupported=12,
    unsupported_judged_supported=5,
    unsupported_judged_unsupported=10,
)

PRIORS = (
    _SUPPORT_PROBABILITY_4,
    # Measured again with version 5 (fewer passages asked; benchmarks/bench_judge_selection.py
    # after, 2026-12-03): the same four counts.
    replace(_SUPPORT_PROBABILITY_4, prompt_version="support-probability/5"),
)


def prior_calibration(judge_model: str, prompt_version: str, support_threshold: float) -> JudgeCalibration | None:
    """The bundled prior of this judge (catalog model, prompt version and threshold all the same as
    when it was measured), or None: another judge has no prior, and its numbers go uncorrected
    until it has labels."""
    for prior in PRIORS:
        if (
            judge_model.split(":", 1)[0] == prior.catalog_name
            and prompt_version == prior.prompt_version
            and support_threshold == prior.support_threshold
        ):
            stratum = LabelStratum(
                "prior",
                float(
                    prior.supported_judged_supported
                    + prior.supported_judged_unsupported
                    + prior.unsupported_judged_supported
                    + prior.unsupported_judged_unsupported
                ),
                prior.supported_judged_supported,
                prior.supported_judged_unsupported,
                prior.unsupported_judged_supported,
                prior.unsupported_judged_unsupported,
            )
            return JudgeCalibration(
                "prior", prior.description, (stratum,), judge_model, prompt_version, support_threshold
            )
    return None
