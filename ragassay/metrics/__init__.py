"""Metrics: small pure functions with their formula in the docstring, per-question values out.

- retrieval: recall@k, precision@k, hit rate@k, nDCG@k, reciprocal rank (pytrec_eval parity).
- answers: what every answer metric shares (Scored, the supported fraction, statements), refusal
  both ways, pairwise outcomes.
- answer_metric: what an answer metric's module declares (AnswerMetric, MetricInput, JudgeCalls,
  LabelPrompt) and what judging one answer records (VerdictRow, AnswerJudgement).
- answer_metrics: the built-in answer metrics, a module each with its formula and score.
- agreement: a judge against human labels: accuracy, balanced accuracy, Cohen's kappa with a
  bootstrap interval, per-class precision and recall.
- declared: every answer metric, built in or added by a plugin, and the lists derived from them.
- names: metric names parsed in one place, their MLflow-safe form, and the lists derived from
  the declarations.
- averaging: per-question values into run values, one rule for every metric.
- significance: paired bootstrap confidence interval and randomization p-value.
- levels: the significance level (ALPHA) they are read at.
- conversations: a dialogue's turns resampled together, the follow-up gap, conversation success.
- judge_error: the judge's sensitivity and specificity from labels, and judged means and paired
  differences corrected for them, with intervals that include the judge's error.
- judge_calibration: the labels one judge's numbers are corrected with, and what to know of them.
- label_need: how many more labels would narrow a corrected interval to a width.
- corrected_rows: an answer batch's interval and comparison rows, the judge-corrected estimate
  beside the raw one (CorrectedEstimate).
"""
