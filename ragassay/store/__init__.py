"""The workspace on disk and its tables.

- names: what a collection may be called, and where the workspace is (no table library loaded).
- workspace: where each collection's files live; listing, loading and deleting collections.
- schemas: every canonical table's explicit Polars schema, with its name and version.
- judge_schemas: the judge's tables (its verdicts, people's labels of them, the corrections, pairs).
- tables: reading tables validated against their schema, writing them atomically.
- locks: one writer per collection at a time (a kernel-released file lock, naming its holder).
"""
