"""The one answer path: retrieval as `ragassay search` does it, then a grounded answer or a refusal.
Answer evaluation calls answer_question too."""

from __future__ import annotations

from pathlib import Path

from ragassay.answer.grounding import (
    ANSWER_PROMPT_VERSION,
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
from ragassay.llm.settings import model_id_of
from ragassay.llm.structured import generate_structured
from ragassay.resources import Resources
from ragassay.search.run import run_search

# Tokens of the answer prompt around the sources: instruction, two worked examples, question.
PROMPT_OVERHEAD_TOKENS = 320


def answer_question(
    resources: Resources, home: Path, collections: list[str], question: str, config: AnswerSettings
) -> GroundedAnswer:
    """Retrieve, check relevance, and (when something relevant was found) ask the model. The
    answer carries what its model calls cost (reranking included)."""
    searched = run_search(resources, home, collections, question, config.search_settings(), config.k)
    hits = searched.hits
    if not hits:
        return declined(question, "retrieval found no documents", [], None, searched.usage)
    loaded = {name: resources.collections.open(home, name, need_dense=True) for name in dict.fromkeys(collections)}
    # Each collection embeds the question with its own model (collections may differ in fulltext mode).
    query_vectors = {name: collection.embed_query(question) for name, collection in loaded.items()}
    candidates, similarities = [], []
    for hit in hits:
        collection = loaded[hit.collection]
        position = collection.chunk_position(hit.chunk_id)
        candidates.append(
            Source(
                hit.rank,
                hit.collection,
                hit.doc_id,
                hit.chunk_id,
                hit.char_start,
                hit.char_end,
                hit.page,
                collection.chunk_text[position],
            )
        )
        similarities.append(float(collection.dense[position] @ query_vectors[hit.collection]))
    relevance = max(similarities)
    if relevance < config.min_relevance:
        reason = f"nothing relevant retrieved (best similarity {relevance:.3f} < {config.min_relevance})"
        return declined(question, reason, candidates, relevance, searched.usage)
    model = resources.chat_model(config.model, home)
    budget = model.context_size - config.max_answer_tokens - PROMPT_OVERHEAD_TOKENS - model.count_tokens(question)
    sources = assemble_sources(candidates, budget, model.count_tokens)
    result = generate_structured(
        model,
        answer_messages(question, sources),
        AnswerOutput,
        schema=answer_schema(len(sources)),
        max_tokens=config.max_answer_tokens,
        temperature=config.temperature,
        seed=config.seed,
    )
    answer = resolve_answer(question, result.value, sources, config.groundedness, raw=result.raw)
    answer.relevance = relevance
    answer.usage = searched.usage + result.usage
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
        "groundedness": config.groundedness,
        "model_id": model_id_of(config.model),
        "prompt_version": ANSWER_PROMPT_VERSION,
        "usage": answer.usage.as_metrics(),
    }
