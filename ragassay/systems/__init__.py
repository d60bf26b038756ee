"""Systems under test: a team's own RAG system as a configuration of ragassay, scored like the
built-in ones.

- settings: the `system:` key (records, trec, python, http), `doc_ids:` rules, column presets.
- records: one record per question, and the records files (JSON Lines or Parquet).
- trec: TREC run files with trec_eval's ranking semantics.
- calls: calling a Python callable or an HTTP endpoint: concurrency, retries, the cache.
- collect: a system's records for the golden questions, matched by id or question text.
- doc_ids: a system's ids mapped to the collection's, chunk ids collapsed, unknown ids kept in place and counted.
"""
