"""Golden sets: questions with the documents that answer them.

- entries: validating candidate entries, reading them from files, the golden set's digest.
- store: adding, importing, listing and deleting a collection's entries.
- generation: seeded page sampling, the question prompt, and the generation loop.
- quality_gate: the quality gate every generated question must pass, with each discard reason.
"""
