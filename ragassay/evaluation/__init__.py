"""Evaluation of configurations on golden sets.

- questions: the golden (and unanswerable) questions of an evaluation, sampled by seed.
- retrieval_scoring: questions searched per configuration, scored per question, compared pairwise.
- answer_judging: questions answered per configuration, judged, and configurations compared pairwise.
- answer_summary: one configuration's answers and verdicts as tables, run metrics and warnings.
- outcomes: what an evaluation logs (tracking.BatchRecord) and reports (RetrievalEvalReport,
  AnswerEvalReport), computed before MLflow is called.
- reports: an evaluation's outcome as Markdown (the Prefect UI's artifacts).
- estimate: model calls, tokens and seconds of an answer evaluation, before it runs.
- system_runs: a system under test as a retrieval configuration (records, ids, errors, latency).
- system_answers: a system under test's answers, contexts and citations, shaped for the judge.
"""
