"""The loaded models and opened collections of this worker process: one Resources for the process's
lifetime, shared by the tasks it runs, so an evaluation loads each model and index once. (A
task-runner worker is a process of its own and gets its own.)"""

from __future__ import annotations

import atexit
from functools import cache
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay.judge.evaluation_judges import EvaluationJudges
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


@cache
def worker_judges() -> EvaluationJudges:
    """This process's judges, over its Resources."""
    return EvaluationJudges(worker_resources())


def worker_judge(config: ChatModelConfig, home: Path, evaluation: str, own_odds: bool = False) -> Judge:
    """This process's judge for one evaluation (ragassay/judge/evaluation_judges.py)."""
    return worker_judges().get(config, home, evaluation, own_odds)


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


def healable_tracking_failure(task, task_run, state) -> bool:
    """Prefect's retry condition for tasks that write to MLflow: a read-only or full store does not
    heal in seconds, so it fails at once; anything else (a server briefly away) is tried again."""
    from ragassay.errors import environment_problem
    from ragassay.tracking import TrackingStoreFailed

    error = state.result(raise_on_failure=False)
    if isinstance(error, TrackingStoreFailed):
        return False  # MLflow's own retries (tracking/unreachable.py) were already spent on it
    return not (isinstance(error, BaseException) and environment_problem(error) is not None)


# What a task writing to MLflow passes to @task: the tracking server may be briefly unreachable,
# so two more tries, after 2 s and 10 s.
TRACKING_RETRIES = {"retries": 2, "retry_delay_seconds": [2, 10], "retry_condition_fn": healable_tracking_failure}
