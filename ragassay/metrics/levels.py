"""The significance level every paired test, report and gate reads its p-values at, kept apart from
the tests themselves (metrics/significance.py, numpy) so a command's --help can name it without
loading them."""

from __future__ import annotations

# A difference is called significant when its randomization p is below this (reports, the CLI's
# tables and the regression gate's default).
ALPHA = 0.05
