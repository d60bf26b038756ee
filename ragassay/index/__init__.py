"""Index: a collection's BM25 indexes and chunk embeddings, swapped in as one folder.

- inputs: what a build reads, a snapshot of the collection's chunks and documents.
- embedding: the chunks' embeddings, planned in groups, each written as a part, stored through the cache.
- build: BM25 over chunks and documents, the manifest, the staged index swapped in whole.
- health: every table and the index checked against each other; what can be rebuilt, repaired.
"""
