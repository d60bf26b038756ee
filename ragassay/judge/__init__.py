"""The judge model: prompts, model calls, verdicts (the learned verdict and its signals), and how
far to trust them (calibration/).

- prompts: each judgement's instruction, examples, output schema and version, kept together.
- judge: the Judge: each judgement asked of the judge model (support, correctness, the implied
  question, preferences, criteria) with its cost.
- support_rules: which rule reads a judge's support verdicts (its threshold, or the learned
  verdict's) and the judge calls a statement's verdict costs.
- memory: the judge's memory of one evaluation (an identical judgement asked once, threads too).
- answer_judgement: judging one answer: each asked metric's score in the declared order, with
  its verdicts' rows and cost.
- metric_input: MetricInput where plugins import it from (declared in metrics/answer_metric.py).
- passage_choice: which passages a statement is judged against, most similar first (pure).
- evaluation_judges: a process's judge per model and workspace for the evaluation running now.
- calibration: how far to trust the judge (a package): people's labels of its verdicts, calibration
  against them, the aligned judge, the label budget and the corrections an evaluation uses.
- verdict_features: a statement's word-level support in its passages, in any language (pure).
- token_alignment: MiniLM's token vectors of a statement matched against its passages' tokens.
- contradiction_cues: a negation, a number or a name a statement has and its passages do not (pure).
- learned_verdict: the verdict fitted on people's labels in three collections (its shipped file,
  loaded and checked), read from the inputs it names (those above, the judge's answers to the
  support prompt or the three-way question), and the verdict version a stored P is named by.
"""
