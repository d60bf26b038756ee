"""Evaluation of configurations on golden sets.

- questions: the golden (and unanswerable) questions of an evaluation, sampled by seed.
- retrieval_scoring: questions searched per configuration and scored per question.
- answer_judging: questions answered per configuration, judged, and configurations compared pairwise.
- answer_summary: one configuration's answers and verdicts as tables, run metrics and warnings; the
  answer metrics' intervals and paired differences between configurations.
- judge_correction: the judge's error in an answer batch's numbers: judge-corrected estimates in
  its intervals, differences and run metrics, and the warnings of what they rest on.
- answer_traces: each question of an answer evaluation as an MLflow trace (passages, answer,
  verdicts, scores as assessments).
- outcomes: what an evaluation logs (tracking.BatchRecord) and reports (RetrievalEvalReport,
  AnswerEvalReport), computed before MLflow is called; a retrieval batch's whole outcome.
- answer_outcomes: an answer batch's outcome: its params, summary, MLflow record and report.
- interval_text: means with their intervals (and judge-corrected estimates) as Markdown lines, what
  the corrected numbers rest on, and a configuration's child run description.
- reports: an evaluation's outcome as Markdown (the Prefect UI's artifacts and the MLflow batch's
  description): intervals, who is ahead, paired differences.
- estimate: model calls, tokens and seconds of an answer evaluation, before it runs.
- system_runs: a system under test as a retrieval configuration (records, ids, errors, latency).
- system_answers: a system under test's answers, contexts and citations, shaped for the judge.
"""
