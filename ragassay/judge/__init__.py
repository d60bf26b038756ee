"""The judge model: prompts, verdicts, and how far to trust them.

- prompts: each judgement's instruction, examples, output schema and version, kept together.
- judge: the Judge: each judgement asked of the judge model (support, correctness, the implied
  question, preferences, criteria) with its cost.
- memory: the judge's memory of one evaluation (an identical judgement asked once, threads too).
- answer_judgement: judging one answer: each asked metric's score in the declared order, with
  its verdicts' rows and cost.
- metric_input: MetricInput where plugins import it from (declared in metrics/answer_metric.py).
- passage_choice: which passages a statement is judged against, most similar first (pure).
- evaluation_judges: a process's judge per model and workspace for the evaluation running now.
- calibration: the judge's support verdicts against human labels (accuracy, Cohen's kappa), and
  the labels an evaluation's judged metrics are corrected with.
- label_files: statements labelled outside ragassay (label files), seeded samples and context
  groups of them, and every label a collection stores.
- label_budget: how many more labels would narrow a corrected interval to a target width.
- aligned_store: aligned judges stored in a collection and loaded for an evaluation's judge.
- pairwise_calibration: the position bias of the judge's pairwise verdicts.
- labels: people's labels of the judge's verdicts (a package: sample, store, files): seeded,
  stratified samples of a batch, the collection's label table, export and import.
- labelled_batches: a batch's judged runs read back from MLflow, and label files matched to
  their items and stored per collection (what `judge label` does).
- calibration_reports: what a calibration reports, as types (SupportCalibration,
  CollectionCalibration, PairwiseCalibration, the label budget, the aligned judge's summary).
- calibration_log: what a calibration run logs to MLflow (params, metrics, rows).
- alignment: the aligned judge: the judge's P(supported) and cheap signals beside it read into a
  collection's verdict by a model fitted on its labels, cross-fitted, used only when ahead (pure).
- verdict_features: a statement's word-level support in its passages, in any language (pure).
- token_alignment: MiniLM's token vectors of a statement matched against its passages' tokens.
- contradiction_cues: a negation, a number or a name a statement has and its passages do not (pure).
- learned_verdict: the verdict fitted on people's labels in three collections (its shipped file,
  loaded and checked), read from the inputs it names (those above, the judge's log-odds).
- measured_rates: the default judge's error rates on two other collections (MEMERAG-EXT, SciFact
  counts), and why no other collection's labels correct a team's numbers.
"""
