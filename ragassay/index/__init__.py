"""Index: a collection's BM25 indexes and chunk embeddings, swapped in as one folder.

- build: embeddings through the cache, BM25 over chunks and documents, the manifest, the swap.
- health: every table and the index checked against each other; what can be rebuilt, repaired.
"""
