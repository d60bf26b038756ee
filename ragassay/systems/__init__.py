"""Systems under test: a team's own RAG system as a configuration of ragassay, scored like the
built-in ones.

- kind: what every kind of system is (SystemKind: collect a record a question, secrets, checks).
- kinds: every kind listed once (the built-in ones and RAGASSAY_PLUGINS'), and `SystemSpec`.
- records_system, trec, python_system, http_system: one module a kind (`kind:` records, trec,
  python, http).
- calls: asking a system question by question (CalledSystem): concurrency, retries, sessions, the cache.
- collect: stored records matched to the golden questions, by id or question text.
- columns: a record's fields, and the names other tools give them (`columns:`).
- records: one record per question, and the records files (JSON Lines or Parquet).
- settings: the `system:` configuration and its `doc_ids:` rules.
- doc_ids: a system's ids mapped to the collection's, chunk ids collapsed, unknown ids kept in place and counted.
"""
