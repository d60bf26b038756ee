"""Evaluation of configurations on golden sets.

- questions: the golden (and unanswerable) questions of an evaluation, sampled by seed.
- retrieval: questions searched per configuration, scored per question, compared pairwise.
- answers: questions answered per configuration, judged, and configurations compared pairwise.
- answer_summary: one configuration's answers and verdicts as tables, run metrics and warnings.
- reports: an evaluation's outcome as Markdown (the Prefect UI's artifacts).
- estimate: model calls, tokens and seconds of an answer evaluation, before it runs.
"""
