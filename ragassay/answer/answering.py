"""The one answer path: retrieval as `ragassay search` does it, then a grounded answer or a refusal.
Answer evaluation calls answer_question too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ragassay.answer.grounding import (
    ANSWER_PROMPT_VERSION,
    CONVERSATION_PROMPT_VERSION,
    CONVERSATION_TURNS,
    AnswerOutput,
    GroundedAnswer,
    Source,
    answer_messages,
    answer_schema,
    assemble_sources,
    declined,
    resolve_answer,
)
from ragassay.answer.settings import AnswerSettings
from ragassay.errors import RagassayError
from ragassay.llm.settings import model_id_of
from ragassay.llm.structured import generate_structured
from ragassay.resources import Resources
from ragassay.search.followups import Exchange, history_query, search_query
from ragassay.search.run import SearchResult, run_search

# Tokens of the answer prompt around the sources: instruction, two worked examples, question.
PROMPT_OVERHEAD_TOKENS = 320


def answer_question(
    resources: Resources,
    home: Path,
    collections: list[str],
    question: str,
    config: AnswerSettings,
    conversation: Sequence[Exchange] = (),
) -> GroundedAnswer:
    """Retrieve, check relevance, and (when something relevant was found) ask the model. The
    answer carries what its model calls cost (reranking, a follow-up's rewrite included).

    conversation: the earlier turns when the question is a follow-up. It retrieves with them as
    the configuration's followup_query says (search/followups.py), and is answered from this
    turn's sources only, cited or declined, with the conversation shown for what "it" means
    (not under `alone`: a system without memory sees neither)."""
    search = config.search_settings()
    rewriter = (
        resources.chat_model(search.rewrite_model, home)
        if conversation and search.followup_query == "rewrite"
        else None
    )
    query = search_query(search.followup_query, conversation, question, rewriter, config.seed)
    searched = run_search(resources, home, collections, query.text, search, config.k)
    searched = replace(searched, usage=query.usage + searched.usage)
    # What the follow-up means in its conversation, as the judge reads it: what it searched, or,
    # for a configuration without memory (`alone`), the follow-up with the questions before it.
    remembered = search.followup_query != "alone"
    in_context = (query.text if remembered else history_query(conversation, question)) if conversation else None
    asked_in = (query.text if conversation else None, in_context)
    hits = searched.hits
    if not hits:
        return _as_searched(
            declined(question, "retrieval found no documents", [], None, searched.usage), searched, asked_in
        )
    candidates, similarities = _retrieved_sources(resources, home, collections, hits, query.text)
    relevance = max(similarities)
    if relevance < config.min_relevance:
        reason = f"nothing relevant retrieved (best similarity {relevance:.3f} < {config.min_relevance})"
        return _as_searched(declined(question, reason, candidates, relevance, searched.usage), searched, asked_in)
    model = resources.chat_model(config.model, home)
    shown = [(turn.question, turn.answer) for turn in conversation][-CONVERSATION_TURNS:] if remembered else []
    kept, budget = _prompt_room(model, question, shown, config.max_answer_tokens)
    sources = assemble_sources(candidates, budget, model.count_tokens)
    result = generate_structured(
        model,
        answer_messages(question, sources, kept),
        AnswerOutput,
        schema=answer_schema(len(sources)),
        max_tokens=config.max_answer_tokens,
        temperature=config.temperature,
        seed=config.seed,
    )
    answer = resolve_answer(question, result.value, sources, config.groundedness, raw=result.raw)
    answer.relevance = relevance
    answer.usage = searched.usage + result.usage
    answer.history_cut = len(shown) - len(kept)
    return _as_searched(answer, searched, asked_in)


class PromptTooLong(RagassayError):
    """A question that does not fit the answer model's context even without its conversation:
    its evaluation row's too_long outcome (counted, named, in no metric), never the batch's end."""


def _asked_text(question: str, turns: Sequence[tuple[str, str | None]]) -> str:
    """The question and the conversation turns the prompt shows, as one text to count tokens of."""
    return " ".join([question, *(f"{q} {a or ''}" for q, a in turns)])


def _retrieved_sources(
    resources: Resources, home: Path, collections: list[str], hits: list, query_text: str
) -> tuple[list[Source], list[float]]:
    """Each hit as a Source with its chunk's text, and its chunk's dense similarity to the query."""
    loaded = {name: resources.collections.open(home, name, need_dense=True) for name in dict.fromkeys(collections)}
    # Each collection embeds the question with its own model (collections may differ in fulltext
    # mode); a follow-up, as it searched, with its conversation.
    query_vectors = {name: collection.embed_query(query_text) for name, collection in loaded.items()}
    candidates, similarities = [], []
    for hit in hits:
        collection = loaded[hit.collection]
        position = collection.chunk_position(hit.chunk_id)
        text = collection.chunk_text[position]
        candidates.append(
            Source(hit.rank, hit.collection, hit.doc_id, hit.chunk_id, hit.char_start, hit.char_end, hit.page, text)
        )
        similarities.append(float(collection.dense[position] @ query_vectors[hit.collection]))
    return candidates, similarities


def _prompt_room(model, question: str, shown: list[tuple[str, str]], max_answer_tokens: int) -> tuple[list, int]:
    """The conversation turns the prompt keeps and the tokens left for the sources. The question
    and the conversation take the sources' room; a conversation that leaves none is cut from its
    oldest turns, and a question that alone does not fit is that question's too_long outcome
    (llama.cpp would refuse the prompt, ending the evaluation)."""
    room = model.context_size - max_answer_tokens - PROMPT_OVERHEAD_TOKENS
    if model.count_tokens(question) > room:
        raise PromptTooLong(
            f"too_long: the question, about {model.count_tokens(question):,} tokens, does not fit the answer model's "
            f"context of {model.context_size:,} tokens ({max_answer_tokens} kept for the answer)"
        )
    kept = list(shown)
    while kept and model.count_tokens(_asked_text(question, kept)) > room:
        kept.pop(0)
    return kept, room - model.count_tokens(_asked_text(question, kept))


def _as_searched(
    answer: GroundedAnswer, searched: SearchResult, asked_in: tuple[str | None, str | None]
) -> GroundedAnswer:
    """The answer with what its search reranked, and what its follow-up searched and means in its
    conversation (asked_in; both None for a question asked alone)."""
    answer.search_query, answer.in_context = asked_in
    answer.rerank = searched.rerank
    return answer


def answer_payload(answer: GroundedAnswer, config: AnswerSettings) -> dict:
    """The JSON form of an answer: outcome, text, cited spans, sources, model and cost."""
    return {
        "question": answer.question,
        "outcome": answer.outcome,
        "reason": answer.reason,
        "text": answer.text,
        "statements": [{"text": s.text, "citations": [c.__dict__ for c in s.citations]} for s in answer.statements],
        "sources": [s.__dict__ for s in answer.sources],
        "dropped_citations": answer.dropped_citations,
        "dropped_statements": answer.dropped_statements,
        "unparseable": answer.unparseable,
        "relevance": answer.relevance,
        "search_query": answer.search_query,
        "groundedness": config.groundedness,
        "model_id": model_id_of(config.model),
        # The conversation is in the prompt of a follow-up, but for a configuration without memory.
        "prompt_version": CONVERSATION_PROMPT_VERSION
        if answer.search_query and config.followup_query != "alone"
        else ANSWER_PROMPT_VERSION,
        "usage": answer.usage.as_metrics(),
    }
