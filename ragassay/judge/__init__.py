"""The judge model: prompts, verdicts, and how far to trust them.

- prompts: each judgement's instruction, examples, output schema and version, kept together.
- judge: the Judge (asks, remembers identical judgements) and judging one answer for every metric.
- evaluation_judges: a process's judge per model and workspace for the evaluation running now.
- calibration: the judge's support verdicts against human labels (accuracy, Cohen's kappa).
"""
