"""The position bias of the judge's pairwise verdicts (`judge calibrate --pairwise`): pairs with a
known better answer built from a golden file, each asked in both orders, and how often the
verdict follows the position instead of the answer."""

from __future__ import annotations

from pathlib import Path

from ragassay.errors import ConfigError, listed_problems
from ragassay.judge.calibration.labelled_statements import seeded_sample
from ragassay.judge.calibration.reports import (
    PairRow,
    PairwiseCalibration,
)
from ragassay.judge.judge import Judge, judging_cost
from ragassay.judge.prompts import PREFERENCE_PROMPT_VERSION
from ragassay.llm.registry import ChatModels
from ragassay.llm.settings import ChatModelConfig
from ragassay.metrics.answers import pair_outcome, tally_pairs
from ragassay.progress import ProgressReporter
from ragassay.user_files import read_jsonl

# The worse answer of a "refusal" pair: what a pipeline that declines an answerable question says.
DECLINED_ANSWER_TEXT = "I cannot answer this from the documents."


def preference_pairs(golden_path: Path) -> list[dict]:
    """Pairs with a known better answer, built from a golden file's questions and reference answers:
    for each question, its reference answer against (a) the next question's reference answer (fluent
    but off the question) and (b) a refusal. A judge without position bias names the reference
    answer better whichever place it is shown in."""
    entries, problems = [], []
    for where, record in read_jsonl(golden_path, "golden file"):
        if isinstance(record, ValueError):
            problems.append(f"{where}: {record}")
        elif not isinstance(record, dict):
            problems.append(f"{where}: each row must be an object")
        elif not isinstance(record.get("question"), str) or not isinstance(record.get("reference_answer") or "", str):
            problems.append(f"{where}: 'question' and 'reference_answer' must be strings")
        elif record.get("reference_answer"):
            entries.append(record)
    if problems:
        raise ConfigError(f"golden file {golden_path} has {len(problems)} bad rows: " + listed_problems(problems))
    if len(entries) < 2:
        raise ConfigError(
            f"{golden_path} needs at least two rows with a question and a reference_answer to build answer pairs"
        )
    pairs = []
    for index, entry in enumerate(entries):
        other = entries[(index + 1) % len(entries)]
        for kind, worse in (("off_question", other["reference_answer"]), ("refusal", DECLINED_ANSWER_TEXT)):
            pairs.append(
                {"question": entry["question"], "better": entry["reference_answer"], "worse": worse, "kind": kind}
            )
    return pairs


def calibrate_pairwise(
    chat_models: ChatModels, config: ChatModelConfig, golden_path: Path, max_items: int | None = None, seed: int = 0
) -> PairwiseCalibration:
    """Position bias of the judge's pairwise verdicts: every pair asked with the better answer
    first and with it second (no reference answer shown).

    flip rate = pairs whose verdict names a different answer (or tie) in the two orders / readable
    pairs; accuracy = pairs that name the better answer in both orders / readable pairs."""
    pairs = seeded_sample(preference_pairs(golden_path), max_items, seed)
    judge = Judge(chat_models.get(config))
    rows, results = [], []
    with ProgressReporter(f"judging {len(pairs)} answer pairs in both orders", total=len(pairs)) as progress:
        for done, pair in enumerate(pairs, start=1):
            better_first = judge.preference(pair["question"], None, pair["better"], pair["worse"])
            better_second = judge.preference(pair["question"], None, pair["worse"], pair["better"])
            results += [better_first, better_second]
            outcome = pair_outcome(
                better_first.value.preferred if better_first.value else None,
                better_second.value.preferred if better_second.value else None,
            )
            rows.append(
                PairRow(
                    **pair,
                    better_first=better_first.value.preferred if better_first.value else None,
                    better_second=better_second.value.preferred if better_second.value else None,
                    outcome=outcome,
                )
            )
            progress(done, len(pairs))
    tally = tally_pairs([row.outcome for row in rows])
    readable = tally["questions"] - tally["unreadable"]
    usage = judging_cost(results)[0]
    return PairwiseCalibration(
        golden_file=str(golden_path),
        judge_model=judge.model_id,
        prompt_version=PREFERENCE_PROMPT_VERSION,
        pairs=len(rows),
        readable=readable,
        flip_rate=tally["inconsistent_share"] if readable else None,
        accuracy=tally["wins_a"] / readable if readable else None,
        ties=tally["ties"],
        unreadable_rate=tally["unreadable"] / len(rows) if rows else 0.0,
        seconds_per_verdict=usage.seconds / usage.calls if usage.calls else None,
        usage=usage,
        rows=rows,
    )
