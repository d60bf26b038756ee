"""Search over indexed collections.

- settings: SearchSettings, the one settings type of search, retrieval evaluation and answering.
- followups: what a conversation's follow-up searches (with its earlier questions, or rewritten).
- run: run_search, the one search path (`ragassay search`, evaluation and answering call it).
- ranking: ranking documents fulltext, semantic or hybrid; filters; snippets.
- lexical: BM25 with bm25s and PyStemmer.
- dense: fastembed embedding models, loaded offline, and their cache (Embedders).
- served_settings: where a served model is and how it is called (its settings, secrets as ${VAR}).
- served_calls: calls to a model served over HTTP (retries, bounds, secrets).
- served_embeddings: an embedding model behind an HTTP API (OpenAI's /v1/embeddings, Ollama's /api/embed).
- fusion: reciprocal-rank fusion.
- rerank: the LLM reranker's prompt and ordering rule.
- collections: opening an indexed collection for search, and the cache of opened ones.
"""
