"""Golden sets: questions with the documents that answer them.

- entries: validating candidate entries, the golden set's digest.
- dialogues: golden dialogues (conversations of turns): validating them, turn ids, their digest.
- files: golden files people write: JSONL or CSV entries, JSONL dialogues, bad rows by file:line.
- store: adding, importing, listing and deleting a collection's entries and dialogues.
- generation: seeded page sampling and the generation loop.
- question_prompt: the prompt that writes a golden question from a page, and its version.
- dialogue_generation: generated dialogues: the prompt, the loop, the gate turn by turn.
- claims: a page claimed before it is drafted, so a concurrent generation passes over it.
- quality_gate: the quality gate every generated question must pass, with each discard reason.
"""
