"""`ragassay judge`: a command a module.

- app: the command group.
- calibrate: `judge calibrate`, the judge measured on people's labels.
- calibration_tables: what `judge calibrate` prints.
- label: `judge label`, a sample of a batch's verdicts labelled and imported.
- terminal: the labelling loop in a terminal, and the review of disagreements.
- screens: one labelling screen's lines (pure: tested without a terminal).
- budget: how many more labels would narrow a corrected interval, and its table.
"""

from __future__ import annotations

from ragassay.cli.judge import calibrate, label  # each adds its command to judge_app
from ragassay.cli.judge.app import judge_app

__all__ = ["calibrate", "judge_app", "label"]
