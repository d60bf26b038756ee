"""Prefect tasks and, beside them, the pure modules they call.

Pure modules (never import Prefect or MLflow): extraction, chunking, lexical, dense, fusion,
retrieval, schemas, tables. Prefect tasks: ingest_tasks, index_tasks.
"""
