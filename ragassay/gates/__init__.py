"""Gates that fail a CI run (assertions, the regression gate, evaluation cases; not the golden
set's quality gate).

- assertions: `--assert LABEL:METRIC>=BOUND` parsed and checked against run means.
- regression: `ragassay gate`: a candidate batch's paired drops against a baseline's, per bound.
- batch_gate: the gate over two logged batches (found and read from MLflow), for the command.
- suite: a case suite as written (CaseSuite, EvalCase, CaseJudgeCheck), validated.
- cases: the checks of one evaluation case (contains, excludes, judged criteria, grounded).
- case_runs: running a suite of cases through the real answer path.
"""
