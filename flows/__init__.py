"""Prefect flows: they wire tasks together and take one validated config each; no computation
happens in a flow body.

- ingest: files (or a BEIR dataset) into a collection.
- index: embeddings and BM25 for one collection.
- generate_golden: seeded golden questions through the quality gate.
- eval_retrieval: golden questions × retrieval configurations, one MLflow batch.
- eval_answers: questions × answer configurations, judged and compared, one MLflow batch.
- run_cases: a suite of evaluation cases, one MLflow run.
"""
