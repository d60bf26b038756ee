"""The golden-set quality gate against the team's labelled candidates (data/gate/).

    .venv/bin/python benchmarks/bench_gate.py                                   # rules only, the fixture the rules were written against
    .venv/bin/python benchmarks/bench_gate.py --fixture data/gate/holdout_candidates.json --judge qwen2.5-1.5b

Each candidate goes through `gate_candidate` with its known questions and real MiniLM embeddings
(for the duplicate check); with --judge, a candidate the rules accept then gets the gate's judged
check (`gate_judged_support` on the judge's support verdict of `answer_claim` against the page),
exactly as generation does. Reported: precision and recall of "discard" over all bad candidates,
recall per bad label, and the confusion of labels with gate reasons.
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MALFORMED_REASONS = {
    "unparseable",
    "not_a_question",
    "too_short",
    "too_long",
    "empty_answer",
    "copies_passage",
    "answer_not_in_page",
}


EXPECTED_REASONS = {
    "malformed": MALFORMED_REASONS,
    "passage_dependent": {"passage_dependent"},
    "near_duplicate": {"near_duplicate"},
    "wrong_answer": {"answer_unsupported", "answer_not_in_page", "judge_unreadable"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixture", type=Path, default=REPO / "data" / "gate" / "labelled_candidates.json")
    parser.add_argument("--judge", help="add the judged check with this model (qwen2.5-1.5b, smollm2)")
    arguments = parser.parse_args()
    from ragassay.golden.quality_gate import GeneratedPair, answer_claim, gate_candidate, gate_judged_support
    from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, resolve_model

    judge = None
    if arguments.judge:
        from ragassay.judge.judge import Judge
        from ragassay.llm.registry import ChatModels
        from ragassay.llm.settings import ChatModelConfig

        judge = Judge(ChatModels().get(ChatModelConfig(backend=arguments.judge)))
    fixture = json.loads(arguments.fixture.read_text())
    embedder = Embedder(resolve_model(DEFAULT_MODEL_NAME, Path(tempfile.mkdtemp()) / "models"))
    confusion: collections.Counter = collections.Counter()
    discarded_bad = discarded_good = 0
    bad_total = 0
    per_label: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for candidate in fixture["candidates"]:
        known = candidate.get("known", [])
        vectors = embedder.embed([candidate["question"], *known])
        pair = GeneratedPair(question=candidate["question"], answer=candidate["answer"])
        passage = fixture["passages"][candidate["passage"]]
        decision = gate_candidate(pair, passage, known, vectors[0], vectors[1:] if known else None)
        if decision.accepted and judge is not None:
            support = judge.support(passage, answer_claim(pair))
            value = support.value
            decision = gate_judged_support(
                value.verdict if value else None,
                value.p_supported if value else None,
                judge.support_threshold,
                support.error,
            )
        reason = decision.reason or "accepted"
        confusion[(candidate["label"], reason)] += 1
        bad = candidate["label"] != "accept"
        bad_total += bad
        if not decision.accepted:
            discarded_bad += bad
            discarded_good += not bad
        if bad:
            expected = EXPECTED_REASONS[candidate["label"]]
            per_label[candidate["label"]][0] += reason in expected
            per_label[candidate["label"]][1] += 1
    discarded = discarded_bad + discarded_good
    print(
        f"{arguments.fixture.name}: {len(fixture['candidates'])} labelled candidates ({bad_total} bad, {len(fixture['candidates']) - bad_total} good); "
        f"judged check: {judge.model_id + f' (threshold {judge.support_threshold})' if judge else 'off'}"
    )
    print(
        f"discard precision {discarded_bad / discarded:.3f} ({discarded_bad}/{discarded}), "
        f"discard recall {discarded_bad / bad_total:.3f} ({discarded_bad}/{bad_total})"
    )
    for label, (right, total) in sorted(per_label.items()):
        print(f"  {label}: discarded for the right reason {right}/{total} = {right / total:.3f}")
    print("label -> gate decision counts:")
    for (label, reason), count in sorted(confusion.items()):
        print(f"  {label:<18} -> {reason:<20} {count}")


if __name__ == "__main__":
    main()
