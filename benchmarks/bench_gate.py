"""The golden-set quality gate against the team's labelled candidates (data/gate/).

    .venv/bin/python benchmarks/bench_gate.py

Each candidate goes through `gate_candidate` with its known questions and real MiniLM embeddings
(for the duplicate check). Reported: precision and recall of "discard" over all bad candidates,
recall per bad label, and the confusion of labels with gate reasons.
"""

from __future__ import annotations

import collections
import json
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MALFORMED_REASONS = {"unparseable", "not_a_question", "too_short", "too_long", "empty_answer", "copies_passage", "answer_not_in_page"}


def main() -> None:
    from ragassay.golden.gate import GeneratedPair, gate_candidate
    from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, resolve_model

    fixture = json.loads((REPO / "data" / "gate" / "labelled_candidates.json").read_text())
    embedder = Embedder(resolve_model(DEFAULT_MODEL_NAME, Path(tempfile.mkdtemp()) / "models"))
    confusion: collections.Counter = collections.Counter()
    discarded_bad = discarded_good = 0
    bad_total = 0
    per_label: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for candidate in fixture["candidates"]:
        known = candidate.get("known", [])
        vectors = embedder.embed([candidate["question"], *known])
        decision = gate_candidate(
            GeneratedPair(question=candidate["question"], answer=candidate["answer"]),
            fixture["passages"][candidate["passage"]],
            known,
            vectors[0],
            vectors[1:] if known else None,
        )
        reason = decision.reason or "accepted"
        confusion[(candidate["label"], reason)] += 1
        bad = candidate["label"] != "accept"
        bad_total += bad
        if not decision.accepted:
            discarded_bad += bad
            discarded_good += not bad
        if bad:
            expected = {"malformed": MALFORMED_REASONS, "passage_dependent": {"passage_dependent"}, "near_duplicate": {"near_duplicate"}}[candidate["label"]]
            per_label[candidate["label"]][0] += reason in expected
            per_label[candidate["label"]][1] += 1
    discarded = discarded_bad + discarded_good
    print(f"{len(fixture['candidates'])} labelled candidates ({bad_total} bad, {len(fixture['candidates']) - bad_total} good)")
    print(f"discard precision {discarded_bad / discarded:.3f} ({discarded_bad}/{discarded}), "
          f"discard recall {discarded_bad / bad_total:.3f} ({discarded_bad}/{bad_total})")
    for label, (right, total) in sorted(per_label.items()):
        print(f"  {label}: discarded for the right reason {right}/{total} = {right / total:.3f}")
    print("label -> gate decision counts:")
    for (label, reason), count in sorted(confusion.items()):
        print(f"  {label:<18} -> {reason:<20} {count}")


if __name__ == "__main__":
    main()
