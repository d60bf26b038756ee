"""The labels one judge's numbers are corrected with (JudgeCalibration: the collection's own, as
strata, and the judge they describe), and what a reader of the corrected numbers must know of them."""

from __future__ import annotations

from dataclasses import dataclass

from ragassay.metrics.judge_error import MIN_LABELS_PER_CLASS, ErrorRates, LabelStratum, error_rates, separability_text


@dataclass(frozen=True)
class JudgeCalibration:
    """The labels that one judge's numbers are corrected with: the collection's own (source
    `labels`; `prior`, a bundled prior from other documents, only in batches logged before
    2026-12-05), as strata, and the judge they describe (model, prompt version, threshold)."""

    source: str
    description: str
    strata: tuple[LabelStratum, ...]
    judge_model: str
    prompt_version: str
    support_threshold: float
    # The collections whose verdicts (and so these strata) are an aligned judge's (judge/calibration/alignment.py),
    # described; and why one a collection has stored is not used.
    aligned_judges: tuple[str, ...] = ()
    alignment_notes: tuple[str, ...] = ()

    @property
    def rates(self) -> ErrorRates:
        return error_rates(self.strata)

    def warnings(self) -> list[str]:
        """What a reader of the corrected numbers must know: too few labels of a class, a judge the
        labels do not show separating the classes."""
        rates = self.rates
        notes = list(self.alignment_notes)
        fewest = min(rates.labelled_supported, rates.labelled_unsupported)
        if fewest < MIN_LABELS_PER_CLASS:
            notes.append(
                f"only {rates.labelled_supported} supported and {rates.labelled_unsupported} unsupported labelled "
                f"statements (fewer than {MIN_LABELS_PER_CLASS} of a class): the corrected intervals are wide"
            )
        if not rates.separable:
            notes.append(f"{separability_text(rates)}: no judge-corrected estimate (its interval is [0, 1])")
        return notes
