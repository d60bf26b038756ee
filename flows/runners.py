"""Where a flow's fanned-out tasks run: the Prefect task runner a TaskRunnerConfig names."""

from __future__ import annotations

from ragassay.config import TaskRunnerConfig
from ragassay.llm.threads import usable_cores


def task_runner(config: TaskRunnerConfig):
    """A task runner to enter (`with task_runner(config) as runner`) and submit tasks to: threads
    in this process, a running Dask scheduler, or a Dask LocalCluster of worker processes that
    lives as long as the `with` block."""
    if config.kind == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=config.workers or 1)
    from prefect_dask import DaskTaskRunner

    if config.address:
        return DaskTaskRunner(address=config.address)
    # One thread per worker process: models and BM25 scoring use the process's cores themselves,
    # an in-process chat model its share of them (more llama.cpp threads than cores is several
    # times slower). No dashboard: nothing is served that nobody asked for.
    workers = config.workers or 2
    return DaskTaskRunner(
        cluster_class="distributed.LocalCluster",
        cluster_kwargs={
            "n_workers": workers,
            "threads_per_worker": 1,
            "processes": True,
            "dashboard_address": None,
            "env": {"RAGASSAY_MODEL_THREADS": str(max(1, usable_cores() // workers))},
        },
    )
