"""Which rule reads a judge model's support verdicts, and what a statement's verdict costs: the
threshold on its own P(supported) (a catalog model's calibrated one), the learned verdict's where
one reads this judge (judge/learned_verdict.py), and the judge calls a statement asks under each."""

from __future__ import annotations

from ragassay.judge.learned_verdict import LEARNED_THRESHOLD, LearnedVerdict, learned_verdict_for
from ragassay.judge.passage_choice import MAX_PASSAGES_ASKED

# P(supported) at or above which a statement is judged supported, per judge model. 0.5 unless the
# model's threshold was chosen on the development half of MEMERAG-EXT (benchmarks/
# bench_judge_agreement.py; BENCHMARKS.md, "Judge agreement"): a small model says "supported"
# too readily, and a threshold on its probability corrects that bias.
SUPPORT_THRESHOLDS = {"qwen2.5-1.5b": 0.85}
DEFAULT_SUPPORT_THRESHOLD = 0.5


def asking_threshold_for(model_id: str) -> float:
    """The threshold on a judge model's own P(supported): a catalog model's calibrated one (its id
    starts with the catalog name), else 0.5. Where a learned verdict reads the judge, it decides
    only which passages are asked (support_by_passage stops at the first that passes it)."""
    return SUPPORT_THRESHOLDS.get(model_id.split(":", 1)[0], DEFAULT_SUPPORT_THRESHOLD)


def support_threshold_for(model_id: str) -> float:
    """The threshold on a support verdict's P(supported): the learned verdict's where one reads
    this judge (learned_verdict.LEARNED_THRESHOLD), else asking_threshold_for."""
    return LEARNED_THRESHOLD if learned_verdict_for(model_id) is not None else asking_threshold_for(model_id)


def support_calls(model_id: str, own_odds: bool = False) -> tuple[float, int]:
    """(expected, most) judge model calls a statement's support verdict costs over several
    passages: where a learned verdict reads this judge, one for each prompt whose answer it reads
    (against the most similar passage; none for a verdict that reads no judge output), and one
    more for the support prompt when own_odds asks the judge's own P beside it; for another judge,
    its own rule's passages (TYPICAL_PASSAGES_ASKED, at most MAX_PASSAGES_ASKED)."""
    learned = learned_verdict_for(model_id)
    if learned is None:
        return TYPICAL_PASSAGES_ASKED, MAX_PASSAGES_ASKED
    calls = len(prompts_asked(learned, own_odds))
    return float(calls), calls


def prompts_asked(learned: LearnedVerdict, own_odds: bool) -> tuple[str, ...]:
    """The prompts a learned verdict's statement asks the judge, each once: those the verdict reads,
    and the support prompt when the judge's own P is asked to be shown (own_odds)."""
    return tuple(dict.fromkeys((*learned.judge_prompts, *(("support",) if own_odds else ()))))


# Passages a statement is judged against by a judge's own rule (support-probability/5): the most
# similar one, and up to two more for the statements it does not support; measured on
# MEMERAG-EXT's development half (benchmarks/bench_judge_selection.py after; BENCHMARKS.md,
# "Cheaper verdicts").
TYPICAL_PASSAGES_ASKED = 1.4
