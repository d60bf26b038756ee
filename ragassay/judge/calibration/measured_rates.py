"""The default judge's error rates measured on people's labels of collections other than a team's
own, and why none of them corrects a team's numbers.

On MEMERAG-EXT's development half (66 sentences of RAG answers on Wikipedia) the judge's
sensitivity was 0.76 and its specificity 0.67; on all 693 SciFact claims with one abstract people
marked as supporting or contradicting them, 0.47 and 0.89 (benchmarks/bench_judge_scifact.py).
Until 2026-12-05 the first was a bundled prior that corrected the judged numbers of every
collection without labels; on SciFact its corrected interval held people's supported rate in 0 of
50 draws (BENCHMARKS.md, "A second collection"). A judge's error depends on the documents, so a
judged number is corrected only with labels of its own collection (judge/calibration/correction.judge_calibration);
these rates are kept to say so in numbers (`no_labels_reason`) and for the benchmarks.

Only counts are kept here, never the data (read from ../shared).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ragassay.judge.learned_verdict import (
    LEARNED_FOR,
    LEARNED_THRESHOLD,
    learned_verdict_for,
    shipped_learned_verdict,
    verdict_version,
)
from ragassay.metrics.judge_error import LabelStratum


@dataclass(frozen=True)
class MeasuredRates:
    """A judge's (label, verdict) counts on the labelled statements of one collection."""

    catalog_name: str
    prompt_version: str
    support_threshold: float
    collection: str
    supported_judged_supported: int
    supported_judged_unsupported: int
    unsupported_judged_supported: int
    unsupported_judged_unsupported: int

    @property
    def sensitivity(self) -> float:
        """P(judged supported | supported) = TP / (TP + FN)."""
        return self.supported_judged_supported / (self.supported_judged_supported + self.supported_judged_unsupported)

    @property
    def specificity(self) -> float:
        """P(judged unsupported | unsupported) = TN / (TN + FP)."""
        return self.unsupported_judged_unsupported / (
            self.unsupported_judged_unsupported + self.unsupported_judged_supported
        )

    @property
    def name(self) -> str:
        """The collection's name without its description in parentheses."""
        return self.collection.split(" (", 1)[0]

    def stratum(self) -> LabelStratum:
        """The counts as one simple random sample's stratum (what corrected_mean reads)."""
        counts = (
            self.supported_judged_supported,
            self.supported_judged_unsupported,
            self.unsupported_judged_supported,
            self.unsupported_judged_unsupported,
        )
        return LabelStratum(self.collection, float(sum(counts)), *counts)

    def serves(self, judge_model: str, prompt_version: str, support_threshold: float) -> bool:
        """Whether these counts are of this judge: catalog model, prompt version and threshold."""
        return (judge_model.split(":", 1)[0], prompt_version, support_threshold) == (
            self.catalog_name,
            self.prompt_version,
            self.support_threshold,
        )


_MEMERAG_4 = MeasuredRates(
    catalog_name="qwen2.5-1.5b",
    prompt_version="support-probability/4",
    support_threshold=0.85,
    collection="MEMERAG-EXT's development half (66 sentences of RAG answers on Wikipedia)",
    # benchmarks/bench_judge_correction.py, 2026-12-02: sensitivity 0.765, specificity 0.667.
    supported_judged_supported=39,
    supported_judged_unsupported=12,
    unsupported_judged_supported=5,
    unsupported_judged_unsupported=10,
)

MEASURED = (
    _MEMERAG_4,
    # Measured again with version 5 (fewer passages asked; benchmarks/bench_judge_selection.py
    # after, 2026-12-03): the same four counts.
    replace(_MEMERAG_4, prompt_version="support-probability/5"),
    MeasuredRates(
        catalog_name="qwen2.5-1.5b",
        prompt_version="support-probability/5",
        support_threshold=0.85,
        collection="SciFact (693 claims against the abstract people marked as supporting or contradicting each)",
        # benchmarks/bench_judge_scifact.py, 2026-12-05: every claim with one such abstract, judged in
        # three parts (`judge --pairs 300`: sensitivity 0.502, specificity 0.929; `few-shot`'s plain
        # verdicts of 120 others: 0.413, 0.800; `judge --exclude` of the other 273: 0.456, 0.903);
        # all 693: sensitivity 0.469, specificity 0.895.
        supported_judged_supported=214,
        supported_judged_unsupported=242,
        unsupported_judged_supported=25,
        unsupported_judged_unsupported=212,
    ),
)


HELD_OUT_COLLECTIONS = {
    "memerag": "MEMERAG (RAG answers in five languages)",
    "scifact": "SciFact (claims against scientific abstracts)",
    "wice": "WiCE (Wikipedia claims against the pages they cite)",
}


def learned_verdict_rates() -> tuple[MeasuredRates, ...]:
    """The learned verdict's counts on each collection it was not fitted on (fitted on the other
    two: its provenance's `held_out` figures), as the default judge's rates elsewhere."""
    verdict = shipped_learned_verdict()
    held_out = verdict.provenance.get("held_out", {})
    return tuple(
        MeasuredRates(
            catalog_name=LEARNED_FOR[0],
            prompt_version=verdict_version(LEARNED_FOR[0]),
            support_threshold=LEARNED_THRESHOLD,
            collection=f"{described} (held out of the learned verdict's fit)",
            supported_judged_supported=figures["supported_judged_supported"],
            supported_judged_unsupported=figures["supported_judged_unsupported"],
            unsupported_judged_supported=figures["unsupported_judged_supported"],
            unsupported_judged_unsupported=figures["unsupported_judged_unsupported"],
        )
        for collection, described in HELD_OUT_COLLECTIONS.items()
        if "supported_judged_supported" in (figures := held_out.get(collection, {}))
    )


def measured_elsewhere(judge_model: str, prompt_version: str, support_threshold: float) -> tuple[MeasuredRates, ...]:
    """This judge's counts on other collections (none for a judge never measured here)."""
    every = (*MEASURED, *learned_verdict_rates())
    return tuple(rates for rates in every if rates.serves(judge_model, prompt_version, support_threshold))


def measured_on(name: str, judge_model: str, prompt_version: str, support_threshold: float) -> MeasuredRates | None:
    """This judge's counts on the collection called `name` (MeasuredRates.name), or None."""
    return next((r for r in measured_elsewhere(judge_model, prompt_version, support_threshold) if r.name == name), None)


def no_labels_reason(judge_model: str, prompt_version: str, support_threshold: float) -> str:
    """Why a judged number without labels of its collection is the judge's own, in one sentence,
    with this judge's rates on other collections where two or more were measured (how far they
    differ is the reason)."""
    elsewhere = measured_elsewhere(judge_model, prompt_version, support_threshold)
    reason = (
        f"no labels of these documents for judge {judge_model}: the judged metrics are the judge's own numbers, "
        "without its error"
    )
    if learned_verdict_for(judge_model) is not None:
        reason += f" (its verdict: the {shipped_learned_verdict().summary()})"
    if len(elsewhere) > 1:
        first, *others = elsewhere
        reason += (
            f" (its error depends on the documents: sensitivity {first.sensitivity:.2f} and specificity "
            f"{first.specificity:.2f} on {first.name}, "
            + ", ".join(f"{r.sensitivity:.2f} and {r.specificity:.2f} on {r.name}" for r in others)
            + ", so no other collection's labels can correct these)"
        )
    return reason + "; label some of its verdicts with `ragassay judge label`"
