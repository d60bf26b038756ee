"""How far to trust the judge: people's labels of its verdicts, and what they measure and correct.

- labels: people's labels of the judge's verdicts (a package: sample, store, files): seeded,
  stratified samples of a batch, the collection's label table, export and import.
- labelled_statements: statements labelled outside ragassay (label files), seeded samples and
  context groups of them, and every label a collection stores.
- labelled_batches: a batch's judged runs read back from MLflow, and label files matched to
  their items and stored per collection (what `judge label` does).
- support: the judge's support verdicts against labelled statements (accuracy, kappa, the judge's
  own rule beside a learned verdict), and one label's P(supported) asked again.
- calibrate: `judge calibrate`: a label file or a collection's labels against the judge, as used.
- correction: the calibration an evaluation's judged metrics are corrected with (or none).
- label_budget: how many more labels would narrow a corrected interval to a target width.
- alignment: the aligned judge: the judge's P(supported) and cheap signals beside it read into a
  collection's verdict by a model fitted on its labels, cross-fitted, used only when ahead (pure).
- aligned_store: aligned judges stored in a collection and loaded for an evaluation's judge.
- pairwise: the position bias of the judge's pairwise verdicts.
- measured_rates: the default judge's error rates on two other collections (MEMERAG-EXT, SciFact
  counts), and why no other collection's labels correct a team's numbers.
- reports: what a calibration reports, as types (SupportCalibration, CollectionCalibration,
  PairwiseCalibration, the label budget, the aligned judge's summary).
- log: what a calibration run logs to MLflow (params, metrics, rows).
"""
