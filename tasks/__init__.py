"""Prefect tasks and, beside them, the modules they call.

Pure modules (never import Prefect or MLflow): extraction, chunking, ingestion, lexical, dense,
fusion, retrieval, schemas, tables, golden, metrics, scoring, significance, models, answering,
reranking, generation. MLflow edge: tracking. Prefect tasks: ingest_tasks, index_tasks,
eval_tasks, generation_tasks (progress reports their progress).
"""
