"""Conversations (issue 39), on the sample corpus's hand-written dialogues (data/sample/dialogues.jsonl):

    .venv/bin/python benchmarks/bench_conversations.py retrieval [--model qwen2.5-1.5b] [--work DIR]
    .venv/bin/python benchmarks/bench_conversations.py cost [--dialogues 3] [--model qwen2.5-1.5b] [--work DIR]

Both ingest and index the sample corpus into a fresh workspace under --work and add the dialogues.

`retrieval`: how a follow-up should be searched: as written (`alone`), with the conversation's
earlier questions (`history`), or rewritten by the chat model to stand alone (`rewrite`; it reads
the earlier questions only, as a retrieval evaluation has no answers). Each answerable turn is
searched under every search type and scored against its expected documents (recall@5, MRR to
rank 100), first turns and follow-ups apart, with the rewrites' calls and seconds.

`cost`: what a turn costs against a single question, answered through the built-in path
(answer/answering.answer_question) by the chat model in process, no completion cache: the
dialogues' first turns, their follow-ups under `history` (the conversation in the prompt) and under
`rewrite` (one more call), and as many of the golden set's single questions; model calls, prompt
tokens and seconds per answer.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from harness import flow_engine

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
K, MAX_RANK = 5, 100


def workspace(work: Path | None) -> Path:
    home = (work or Path(tempfile.mkdtemp(prefix="ragassay-bench-conversations-"))) / "workspace"
    from flows.index import index_flow
    from flows.ingest import ingest_flow
    from ragassay.config import IndexConfig, IngestConfig
    from ragassay.golden.store import add_from_file

    with flow_engine():
        ingest_flow(IngestConfig(collection="sample", paths=(SAMPLE / "corpus",), home=home))
        index_flow(IndexConfig(collection="sample", home=home))
    add_from_file(home, "sample", SAMPLE / "dialogues.jsonl")
    return home


def retrieval(home: Path, model_name: str) -> None:
    from ragassay.golden.store import load_dialogues
    from ragassay.llm.settings import ChatModelConfig
    from ragassay.resources import Resources
    from ragassay.search.followups import FOLLOWUP_QUERIES, Exchange, search_query
    from ragassay.search.run import run_search
    from ragassay.search.settings import SearchSettings
    from ragassay.store.workspace import collection_paths

    resources = Resources()
    model = resources.chat_model(ChatModelConfig(backend=model_name), home)
    turns = load_dialogues(collection_paths(home, "sample")).to_dicts()
    print(f"{len({t['dialogue_id'] for t in turns})} dialogues, {len(turns)} turns; recall@{K}, MRR to rank {MAX_RANK}")
    print(
        f"{'search':<9} {'follow-up query':<16} {'first R@5':>9} {'follow R@5':>10} {'gap':>7} "
        f"{'first MRR':>9} {'follow MRR':>10} {'rewrites':>8} {'seconds':>8}"
    )
    rewrites: dict[str, str] = {}
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
                if query.how.startswith("rewrite"):
                    rewrites[f"{turn['dialogue_id']}#{turn['turn']}: {turn['question']}"] = query.text
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
    # Each rewrite beside its follow-up, to be read one by one.
    print("\nrewrites:")
    for followup, rewritten in rewrites.items():
        print(f"  {followup}\n    -> {rewritten}")
    resources.chat_models.close()


def cost(home: Path, model_name: str, dialogues: int) -> None:
    from ragassay.answer.answering import answer_question
    from ragassay.answer.settings import AnswerSettings
    from ragassay.golden.store import load_dialogues
    from ragassay.llm.settings import ChatModelConfig
    from ragassay.resources import Resources
    from ragassay.search.followups import Exchange
    from ragassay.store.workspace import collection_paths

    # No completion cache: every call is asked (the cost is what is measured).
    model = ChatModelConfig(backend=model_name, cache=False)
    resources = Resources()
    resources.chat_model(model, home).count_tokens("load the model outside the timing")
    turns = load_dialogues(collection_paths(home, "sample")).to_dicts()
    chosen = list(dict.fromkeys(t["dialogue_id"] for t in turns if t["answerable"]))[:dialogues]
    singles = [
        json.loads(line)["question"] for line in (SAMPLE / "golden.jsonl").read_text().splitlines() if line.strip()
    ][: dialogues * 3]
    rows: dict[str, list[tuple[int, int, float]]] = {}

    def answered(kind: str, question: str, settings: AnswerSettings, conversation=()) -> str:
        started = time.perf_counter()
        answer = answer_question(resources, home, ["sample"], question, settings, tuple(conversation))
        rows.setdefault(kind, []).append(
            (answer.usage.calls, answer.usage.prompt_tokens, time.perf_counter() - started)
        )
        return answer.prose

    for question in singles:
        answered("single question", question, AnswerSettings(model=model))
    for mode in ("history", "rewrite"):
        settings = AnswerSettings(model=model, followup_query=mode)
        for dialogue in chosen:
            conversation: list[Exchange] = []
            for turn in (t for t in turns if t["dialogue_id"] == dialogue):
                kind = "first turn" if turn["turn"] == 1 else f"follow-up ({mode})"
                if kind == "first turn" and mode == "rewrite":
                    conversation.append(Exchange(turn["question"], answered("ignored", turn["question"], settings)))
                    continue
                conversation.append(
                    Exchange(turn["question"], answered(kind, turn["question"], settings, conversation))
                )
    rows.pop("ignored", None)
    print(f"{model_name}, in process, no completion cache; {len(chosen)} dialogues, {len(singles)} single questions")
    print(f"{'':<22} {'answers':>7} {'calls each':>10} {'prompt tokens each':>18} {'seconds each':>12}")
    for kind, values in rows.items():
        count = len(values)
        print(
            f"{kind:<22} {count:>7} {sum(v[0] for v in values) / count:>10.2f} "
            f"{sum(v[1] for v in values) / count:>18.0f} {sum(v[2] for v in values) / count:>12.1f}"
        )
    resources.chat_models.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=("retrieval", "cost"))
    parser.add_argument("--model", default="qwen2.5-1.5b", help="the chat model that rewrites (and answers)")
    parser.add_argument("--dialogues", type=int, default=3, help="cost: dialogues answered")
    parser.add_argument("--work", type=Path, default=None)
    arguments = parser.parse_args()
    home = workspace(arguments.work)
    if arguments.part == "retrieval":
        retrieval(home, arguments.model)
    else:
        cost(home, arguments.model, arguments.dialogues)


if __name__ == "__main__":
    main()
