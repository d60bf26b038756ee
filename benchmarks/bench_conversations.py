"""How a follow-up question should be searched (issue 39): as written, with the conversation's
earlier questions, or rewritten by the chat model to stand alone; measured on the sample corpus's
hand-written dialogues (data/sample/dialogues.jsonl), every search type.

    .venv/bin/python benchmarks/bench_conversations.py [--model qwen2.5-1.5b] [--work DIR]

Ingests and indexes the sample corpus into a fresh workspace under --work, adds the dialogues, and
for each answerable turn searches with each follow-up query (answer/conversation.search_query: a
rewrite reads the earlier questions only, as a retrieval evaluation has no answers) and scores the
ranking against the turn's expected documents (recall@5, MRR to rank 100). Prints first turns and
follow-ups apart, with the follow-up gap, and the rewrite's calls and seconds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from harness import flow_engine

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
K, MAX_RANK = 5, 100


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-1.5b", help="the chat model that rewrites")
    parser.add_argument("--work", type=Path, default=None)
    arguments = parser.parse_args()
    home = (arguments.work or Path(tempfile.mkdtemp(prefix="ragassay-bench-conversations-"))) / "workspace"
    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay.config import IndexConfig, IngestConfig
    from ragassay.golden.store import add_from_file

    with flow_engine():
        ingest_flow(IngestConfig(collection="sample", paths=(SAMPLE / "corpus",), home=home))
        index_flow(IndexConfig(collection="sample", home=home))
    add_from_file(home, "sample", SAMPLE / "dialogues.jsonl")

    from ragassay.golden.store import load_dialogues
    from ragassay.llm.settings import ChatModelConfig
    from ragassay.resources import Resources
    from ragassay.search.followups import FOLLOWUP_QUERIES, Exchange, search_query
    from ragassay.search.run import run_search
    from ragassay.search.settings import SearchSettings
    from ragassay.store.workspace import collection_paths

    resources = Resources()
    model = resources.chat_model(ChatModelConfig(backend=arguments.model), home)
    turns = load_dialogues(collection_paths(home, "sample")).to_dicts()
    print(f"{len({t['dialogue_id'] for t in turns})} dialogues, {len(turns)} turns; recall@{K}, MRR to rank {MAX_RANK}")
    print(
        f"{'search':<9} {'follow-up query':<16} {'first R@5':>9} {'follow R@5':>10} {'gap':>7} "
        f"{'first MRR':>9} {'follow MRR':>10} {'rewrites':>8} {'seconds':>8}"
    )
    for search_type in ("fulltext", "semantic", "hybrid"):
        for mode in FOLLOWUP_QUERIES:
            scores = {True: [], False: []}
            calls, seconds = 0, 0.0
            history: dict[str, list[Exchange]] = {}
            for turn in turns:
                earlier = history.setdefault(turn["dialogue_id"], [])
                started = time.perf_counter()
                query = search_query(mode, earlier, turn["question"], model)
                seconds += time.perf_counter() - started if query.how.startswith("rewrite") else 0.0
                calls += query.usage.calls + query.usage.cached_calls
                earlier.append(Exchange(turn["question"]))
                if not turn["answerable"]:
                    continue
                hits = run_search(
                    resources, home, ["sample"], query.text, SearchSettings(search_type=search_type), MAX_RANK
                ).hits
                ranked = list(dict.fromkeys(hit.doc_id for hit in hits))
                expected = set(turn["expected_document_ids"])
                recall = len(expected & set(ranked[:K])) / len(expected)
                rank = next((n for n, doc in enumerate(ranked, 1) if doc in expected), None)
                scores[turn["turn"] == 1].append((recall, 1 / rank if rank else 0.0))
            first, follow = scores[True], scores[False]

            def mean(values, at):
                return sum(v[at] for v in values) / len(values)

            print(
                f"{search_type:<9} {mode:<16} {mean(first, 0):>9.3f} {mean(follow, 0):>10.3f} "
                f"{mean(follow, 0) - mean(first, 0):>+7.3f} {mean(first, 1):>9.3f} {mean(follow, 1):>10.3f} "
                f"{calls:>8} {seconds:>8.1f}",
                flush=True,
            )
    resources.chat_models.close()


if __name__ == "__main__":
    main()
