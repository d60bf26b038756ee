"""People's labels of the judge's support verdicts (`ragassay judge label`), per collection.

- A **sample** is drawn from one answer batch: its judged statements (faithfulness, context
  recall and citation precision verdicts that were readable), one item per distinct judgement
  (statement and passages: a statement citing its answer's one passage is one item, not one for
  faithfulness and one for citation precision), split into two strata by the judge's verdict and drawn seeded, half from each (the
  rest from the other when one is short), so that both verdicts are represented and the
  configurations are mixed as they are in the batch. Items are shown in a seeded shuffle, never
  grouped by verdict, and the judge's verdict is never shown to the person labelling.
- A **label** is supported, unsupported or skipped (the person could not tell; kept, so a resumed
  session does not ask again, and never used in calibration). Labels are stored in the
  collection's `judge_labels.parquet`, one row per label given, under the collection's write
  lock; nothing is overwritten without being asked (`replace`).
- The **strata** the judge-error correction reads (metrics/judge_error.py): per (sample, stratum),
  the counts of (label, verdict of the judge being corrected), weighted by how many of the
  batch's statements the stratum stands for.

Its modules: `sample` (the sample and its items' ids), `store` (the collection's stored labels,
the labelling session and review, what calibration reads back), `files` (a sample exported to a
file, a filled-in file read back and matched). Callers use the names below.
"""

from ragassay.judge.calibration.labels.files import (
    EXPORT_COLUMNS,
    ImportedLabel,
    export_sample,
    matched_labels,
    read_label_file,
)
from ragassay.judge.calibration.labels.sample import (
    LABELS,
    SUPPORT_METRICS,
    VERDICTS,
    JudgedConfiguration,
    SampleItem,
    collections_of,
    draw_sample,
    item_id_of,
    judged_items,
    judgement_of,
    parse_sample_id,
    sample_id_of,
)
from ragassay.judge.calibration.labels.store import (
    LabellingSession,
    LabelReview,
    check_labels,
    current_probabilities,
    current_verdicts,
    disagreements,
    label_row,
    label_strata,
    labelled_statements,
    load_labels,
    remove_label,
    store_labels,
)

__all__ = [
    "EXPORT_COLUMNS",
    "LABELS",
    "SUPPORT_METRICS",
    "VERDICTS",
    "ImportedLabel",
    "JudgedConfiguration",
    "LabelReview",
    "LabellingSession",
    "SampleItem",
    "check_labels",
    "collections_of",
    "current_probabilities",
    "current_verdicts",
    "disagreements",
    "draw_sample",
    "export_sample",
    "item_id_of",
    "judged_items",
    "judgement_of",
    "label_row",
    "label_strata",
    "labelled_statements",
    "load_labels",
    "matched_labels",
    "parse_sample_id",
    "read_label_file",
    "remove_label",
    "sample_id_of",
    "store_labels",
]
