"""The significance level every paired test, report and gate reads its p-values at, and the sample
size a bootstrap interval needs, kept apart from the tests themselves (metrics/significance.py,
numpy) so a command's --help can name them without loading them."""

from __future__ import annotations

# A difference is called significant when its randomization p is below this (reports, the CLI's
# tables and the regression gate's default).
ALPHA = 0.05

# Below this many questions (or dialogues) a percentile bootstrap interval is narrower than the
# truth: simulated (300 samples a size and shape, 2026-12-07), it first held the true value in at
# least 94% of samples (95% claimed) at this size for recall-like paired differences and for means
# of skewed and of rare scores (at 20: 0.95, 0.92 and 0.86); nDCG-like graded differences stay at
# 0.92-0.93 up to 50 questions (benchmarks/bench_small_sample_intervals.py; BENCHMARKS.md,
# "Intervals over a handful of questions"). Below it a mean's interval is Clopper-Pearson's
# (bounded_mean_interval) and a paired difference's the randomization test's own, inverted
# (significance.randomization_interval: it excludes 0 exactly when the test rejects); a follow-up
# gap over fewer dialogues has none (conversations.followup_gap).
MIN_BOOTSTRAP_QUESTIONS = 25
