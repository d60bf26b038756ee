"""The index flow: embeddings (cached) and BM25 for one collection, swapped in as one folder."""

from __future__ import annotations

from prefect import flow

from flows.finished import finished
from flows.run_names import run_name
from flows.runners import FannedOut, task_runner
from ragassay.config import IndexConfig
from ragassay.index.build import IndexReport
from tasks.index import (
    build_bm25_indexes,
    embed_text_group,
    one_build_at_a_time,
    plan_embedding,
    read_index_inputs,
    release_index_inputs,
    store_embeddings,
    swap_in_index,
)


@flow(name="index", flow_run_name=run_name, validate_parameters=True)
def index_flow(config: IndexConfig) -> IndexReport:
    """Index one collection: embed chunks the cache lacks, build BM25 over chunks and over whole
    documents, and swap the new index in."""
    # One build of a collection at a time: a second waits, then finds the cache filled.
    with one_build_at_a_time(config):
        inputs = read_index_inputs(config)
        try:
            work = plan_embedding(inputs, config.chunks_per_task)
            # Each group of texts is embedded where config.task_runner says (threads here, or Dask workers).
            with task_runner(config.task_runner) as runner:
                embedding = FannedOut(runner)
                for number, group in enumerate(work.groups):
                    embedding.submit(
                        "embedding",
                        embed_text_group,
                        spec=inputs.spec,
                        snapshot=inputs.snapshot,
                        group=group,
                        batch_size=config.batch_size,
                        part=work.part(number),
                        label=f"group {number + 1} of {len(work.groups)} ({group.height} chunks)",
                    )
                parts = embedding.all()
            embedded = store_embeddings(inputs, work, parts)
            staged = build_bm25_indexes(inputs)
            return finished(swap_in_index(config, inputs, embedded, staged))
        finally:
            release_index_inputs(inputs)
