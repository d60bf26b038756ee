"""Where a flow's fanned-out tasks run: the Prefect task runner a TaskRunnerConfig names."""

from __future__ import annotations

import threading

from ragassay.config import TaskRunnerConfig
from ragassay.llm.threads import usable_cores
from ragassay.work_span import WorkSpan, now_ms


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
            # Each worker's share of the cores (in-process models) and of a served model's
            # concurrency (llm/threads.process_share): together they keep within the setting.
            "env": {
                "RAGASSAY_MODEL_THREADS": str(max(1, usable_cores() // workers)),
                "RAGASSAY_SHARING_PROCESSES": str(workers),
            },
        },
    )


class FannedOut:
    """Tasks submitted to a task runner under a label (a configuration, or a group of texts),
    their results read back per label in the order they were submitted. With a WorkClock, each
    task's end is counted in its label's work."""

    def __init__(self, runner, clock: WorkClock | None = None) -> None:
        self._runner, self._clock = runner, clock
        self._futures: dict[str, list] = {}

    def submit(self, label: str, task, /, **arguments) -> None:
        """Run task(**arguments) on the runner, counted under label."""
        future = self._runner.submit(task, arguments)
        if self._clock is not None:
            self._clock.watch(label, future)
        self._futures.setdefault(label, []).append(future)

    def results(self) -> dict[str, list]:
        """Each label's task results, in the order submitted (waits for them)."""
        return {label: [future.result() for future in futures] for label, futures in self._futures.items()}

    def joined(self) -> dict[str, list]:
        """Each label's task results (lists) concatenated: the parts of one configuration's work as one."""
        return {label: [item for part in parts for item in part] for label, parts in self.results().items()}

    def single(self) -> dict:
        """Each label's one task result."""
        return {label: only for label, (only,) in self.results().items()}

    def all(self) -> list:
        """Every task's result, labels in the order first submitted."""
        return [result for results in self.results().values() for result in results]


class WorkClock:
    """When each configuration's work ended, from the moment the flow began submitting it: a done
    callback on each of its tasks' futures keeps the latest end, so a configuration that finished
    early is not timed to when the flow came to read its results. Its spans are what the child
    runs are logged over (tracking.WorkSpan)."""

    def __init__(self) -> None:
        self.started_ms = now_ms()
        self._ended: dict[str, int] = {}
        self._lock = threading.Lock()

    def watch(self, label: str, future):
        """The future, its end counted in `label`'s work."""
        future.add_done_callback(lambda _: self._done(label))
        return future

    def _done(self, label: str) -> None:
        with self._lock:
            self._ended[label] = max(self._ended.get(label, 0), now_ms())

    def spans(self) -> dict[str, WorkSpan]:
        with self._lock:
            return {label: WorkSpan(self.started_ms, ended) for label, ended in self._ended.items()}
