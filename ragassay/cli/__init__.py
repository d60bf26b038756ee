"""The `ragassay` command (typer): parsing, rendering, exit codes. Batch work runs Prefect flows;
look-ups call the library directly.

- entry: the console script (an environment that cannot load is one line, exit 2).
- main: the app, and ingest, index, search and answer.
- run: `ragassay run --config FILE` (every stage, one flow run) and its summary.
- gate: `ragassay gate` (a candidate batch against a baseline, paired).
- documents: `ragassay documents list|delete`.
- collections: `ragassay collections list|delete`.
- golden: `ragassay golden add|import|generate|list|delete`.
- eval: `ragassay eval retrieval|answers`.
- runs: `ragassay runs list|show|compare`.
- cases: `ragassay cases run`.
- judge: `ragassay judge calibrate` (support verdicts against labels, or pairwise position bias) and
  `ragassay judge label` (people's labels of the judge's verdicts, in a terminal or a file): a
  package, a module a command, with the labelling screens and loop and their renderers.
- models: `ragassay models fetch|verify|list` (named chat models, assembled and verified).
- render: the tables and lines evaluation commands print.
- console_log: Prefect's console handler, less the tracebacks of errors the command reports itself.
- common: exit codes, consoles, --json output, running a flow, config files.
- options: the options commands share, made from settings fields where one exists.
- temporary_server: the temporary Prefect server a command starts, which stops with it.
- interrupts: Ctrl-C and SIGTERM end a command within seconds (exit 130 / 143).
"""
