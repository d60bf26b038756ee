"""How a search runs: the one settings type of `ragassay search`, retrieval evaluation and answering.

Retrieval configurations (ragassay.config.RetrievalConfiguration) and answer settings
(ragassay.answer.settings.AnswerSettings) are SearchSettings with more fields, so a search is described by
the same names wherever it is configured: `search_type`, `depth`, `fusion.k`, `lexical_unit`,
filters and reranking. How many results come back (k) is not a search setting: a search call
asks for it, retrieval evaluation takes its max rank, answering its own `k`.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from ragassay.config_model import ConfigModel
from ragassay.llm.settings import ChatModelConfig
from ragassay.search.followups import FOLLOWUP_QUERIES, FollowupQuery
from ragassay.search.fusion import RRF_K
from ragassay.search.served_settings import ServedModelSettings

SearchType = Literal["fulltext", "semantic", "hybrid"]
SEARCH_TYPES: tuple[str, ...] = ("fulltext", "semantic", "hybrid")
# How many documents a search returns when not told (`ragassay search --k`, search/run.run_search).
SEARCH_RESULTS = 10
# What BM25 scores: whole documents (default) or chunks (max-passage); see search/ranking.py.
LexicalUnit = Literal["document", "chunk"]


class FusionSettings(ConfigModel):
    """How hybrid search fuses the lexical and dense lists: reciprocal-rank fusion and its k."""

    method: Literal["rrf"] = Field("rrf", description="rrf: reciprocal-rank fusion, the only method.")
    k: int = Field(RRF_K, ge=1, description="Reciprocal-rank fusion constant.")


class ServedReranker(ServedModelSettings):
    """A reranker behind an HTTP API. backend `cohere`: POST {url}/v1/rerank with {model, query,
    documents}, answered {results: [{index, relevance_score}]}; `tei`: POST {url}/rerank with
    {query, texts}, answered [{index, score}]."""

    backend: Literal["cohere", "tei"] = Field(
        "cohere", description="cohere: POST {url}/v1/rerank (vLLM, llama.cpp, Jina); tei: POST {url}/rerank."
    )

    @property
    def endpoint(self) -> str:
        return "/v1/rerank" if self.backend == "cohere" else "/rerank"


class SearchSettings(ConfigModel):
    """How one search runs: type, depth, fusion, filters and reranking.

    depth: how many documents each retriever contributes before fusion (hybrid); a search that
    asks for more than depth results reads max(depth, k). rerank "llm": the chat model
    (rerank_model; None: the default chat model, or the answer model when answering) scores the
    top rerank_candidates results 0-10 and the best k are kept; a served reranker
    (search/rerank.ServedReranker) scores them instead (search/rerank.py).
    followup_query: how a follow-up question of a conversation is searched (search/followups.py):
    with the earlier questions, rewritten by the chat model (rewrite_model; None: the default chat
    model, or the answer model when answering) to stand alone, or alone as written.
    """

    search_type: SearchType = Field("hybrid", description=f"One of {', '.join(SEARCH_TYPES)}.")
    depth: int = Field(100, ge=1, le=100_000, description="Documents each retriever contributes to hybrid fusion.")
    fusion: FusionSettings = Field(FusionSettings(), description="How hybrid search fuses its two lists.")
    lexical_unit: LexicalUnit = Field(
        "document", description="What BM25 scores: document (whole text) or chunk (best chunk)."
    )
    content_types: tuple[str, ...] = Field((), description="Keep only documents of these types (pdf, md, ...).")
    path_glob: str | None = Field(None, description="Keep only documents whose id or source path matches this glob.")
    rerank: Literal["off", "llm"] | ServedReranker = Field(
        "off",
        description="off; llm: the chat model scores the top 20 passages 0-10; or a served reranker "
        '(a mapping, or its JSON: {"backend": "cohere" or "tei", "url": ..., "model": ...}).',
    )
    rerank_candidates: int = Field(20, ge=1, le=200, description="Top results the reranker scores.")
    rerank_model: ChatModelConfig | None = Field(
        None, description="The chat model of rerank llm (none: the default chat model, or the answer model)."
    )
    followup_query: FollowupQuery = Field(
        "history", description=f"How a follow-up in a conversation is searched: {', '.join(FOLLOWUP_QUERIES)}."
    )
    rewrite_model: ChatModelConfig | None = Field(
        None, description="The chat model that rewrites a follow-up (none: the default, or the answer model)."
    )

    @field_validator("rerank", mode="before")
    @classmethod
    def _off_as_written(cls, value):
        # YAML 1.1 readers (Prefect's, most YAML libraries) turn a written `off` into false.
        if value is False:
            return "off"
        if isinstance(value, str) and value.lstrip().startswith("{"):
            return json.loads(value)  # a served reranker as JSON text (`--rerank '{"backend": ...}'`)
        if isinstance(value, str) and value not in ("off", "llm"):
            # One message, not one for each member of the union.
            raise PydanticCustomError(
                "literal_error", "Input should be 'off' or 'llm', or a served reranker's {backend, url, model}"
            )
        return value

    def applicable_settings(self) -> dict:
        """The settings (of a subclass too) as a dict, without those that do not affect this
        search: fusion outside hybrid, lexical_unit in semantic search, the reranker's settings
        when reranking is off (its chat model unless it reranks with one), and unset values. What a run records as its configuration."""
        settings = self.model_dump(exclude_none=True)
        if self.search_type != "hybrid":
            settings.pop("fusion", None)
        if self.search_type == "semantic":
            settings.pop("lexical_unit", None)
        if self.rerank == "off":
            settings.pop("rerank_candidates", None)
        if self.rerank != "llm":
            settings.pop("rerank_model", None)
        if not self.content_types:
            settings.pop("content_types", None)
        if self.followup_query != "rewrite":
            settings.pop("rewrite_model", None)
        return settings

    def search_settings(self) -> SearchSettings:
        """Only the search part of a subclass (a retrieval or answer configuration)."""
        return SearchSettings(**{name: getattr(self, name) for name in SearchSettings.model_fields})
