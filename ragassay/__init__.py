"""ragassay: exact, reproducible, offline evaluation of retrieval-augmented generation.

This package is the library (pure code, I/O at its edges) with the CLI on top; Prefect tasks
(tasks/) and flows (flows/) sit between them. Dependencies point one way: CLI -> flows -> tasks
-> library, checked by import-linter (pyproject.toml). Subpackages, by concern:

- store: the workspace on disk, canonical table schemas, atomic Parquet reads and writes.
- ingest: files and BEIR datasets into documents and chunks.
- index: building a collection's BM25 and embedding index.
- search: lexical, dense and hybrid search, reranking, the one search path.
- llm: chat models, structured output, prompt helpers.
- answer: grounded answers with citations, or refusals.
- judge: the judge model, its prompts, and its calibration on human labels.
- metrics: retrieval and answer metrics, their names, averaging, significance.
- golden: golden sets, and their seeded generation through the quality gate.
- evaluation: retrieval and answer evaluation of configurations, and their cost estimate.
- gates: --assert bounds, the regression gate between batches, and evaluation cases.
- cli: the `ragassay` command.

Modules: config (one validated config per run, the pipeline's included), pipeline (the
pipeline's input checks and summary), errors (typed errors), progress (progress of long steps),
resources (loaded models, collections and completion caches, held explicitly), tracking (MLflow,
the only module that imports it), plots (a batch's pictures), redaction (credentials masked in
whatever is shown or logged), plugins (modules named in RAGASSAY_PLUGINS that add system
kinds), orphans (child processes that end with their parent), work_span (when a configuration's or a
stage's work began and ended).
"""

__version__ = "0.1.0"
