"""The loaded models and opened collections of this worker process: one Resources for the process's
lifetime, shared by the tasks it runs, so an evaluation loads each model and index once. (A
task-runner worker is a process of its own and gets its own.)"""

from __future__ import annotations

import atexit
import threading
from functools import cache
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay.judge.judge import Judge
from ragassay.llm import registry
from ragassay.llm.settings import ChatModelConfig
from ragassay.resources import Resources


@cache
def worker_resources() -> Resources:
    """This process's Resources, made on first use and released when the process exits (before
    the interpreter tears its modules down, which llama.cpp's cleanup needs)."""
    resources = Resources()
    atexit.register(resources.close)
    return resources


_judges: dict[tuple[ChatModelConfig, Path, str], Judge] = {}
_judges_lock = threading.Lock()


def worker_judge(config: ChatModelConfig, home: Path, evaluation: str) -> Judge:
    """This process's judge for one evaluation (any token naming it, e.g. its flow run). A Judge
    remembers its judgements for one evaluation; the tasks of an evaluation that run in this process
    share one, and a Dask worker makes its own (the judge's model cannot travel between processes;
    the workspace's completion cache is shared by all). Judges of earlier evaluations are dropped."""
    key = (config, home, evaluation)
    with _judges_lock:
        if key not in _judges:
            for earlier in [k for k in _judges if k[2] != evaluation]:
                del _judges[earlier]
            _judges[key] = Judge(worker_resources().chat_model(config, home))
        return _judges[key]


@task(name="locate-models", cache_policy=NO_CACHE)
def locate_models(models: list[ChatModelConfig]) -> None:
    """Check that every chat model the run will call is there (files verified, API key variables
    set) before any work starts; a missing one fails the run at once with what to run."""
    registry.locate_models(models)


def transient_failure(task, task_run, state) -> bool:
    """Prefect's retry condition for tasks that call a model server: retry only what may pass on
    a later try (the server unreachable, overloaded or failing on its side, a file system hiccup);
    a bad config or an unreadable file fails at once. Model calls already answered come from the
    completion cache on the retry, so a retry costs only what had not been done."""
    from ragassay.llm.openai_server import ModelServerError

    error = state.result(raise_on_failure=False)
    return isinstance(error, (ModelServerError, ConnectionError, TimeoutError))


# What a task calling a model server passes to @task: two more tries, after 10 s and 60 s.
MODEL_SERVER_RETRIES = {"retries": 2, "retry_delay_seconds": [10, 60], "retry_condition_fn": transient_failure}


# What a task writing to MLflow passes to @task: the tracking server may be briefly unreachable,
# so two more tries, after 2 s and 10 s.
TRACKING_RETRIES = {"retries": 2, "retry_delay_seconds": [2, 10]}
