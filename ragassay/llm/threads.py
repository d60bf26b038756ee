"""How many threads an in-process model runs on, and how calls to a served model fan out."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from ragassay.environment import environment


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_threads() -> int:
    """The threads of an in-process model: RAGASSAY_MODEL_THREADS when set, else the cores this
    process may use.

    Not the cores free at the moment it loads: a model loads once and runs for the whole
    evaluation, and a machine busy for that moment (another command starting) left a judge on one
    thread of an idle 2-core machine for half an hour. Where several processes load models at once
    each is given its share: a Dask LocalCluster's workers (flows/runners.py) through
    RAGASSAY_MODEL_THREADS. (More threads than free cores slows llama.cpp sharply, measured on 2
    cores with one other busy process: 2 threads generated 2.2x slower than 1; BENCHMARKS.md,
    "Judge speed": give a shared machine its share the same way.)"""
    chosen = environment().model_threads
    return chosen if chosen is not None else usable_cores()


def process_share(concurrency: int) -> int:
    """The requests this process keeps in flight to a served model whose setting allows
    `concurrency`: its share when RAGASSAY_SHARING_PROCESSES worker processes call the same server
    (a Dask LocalCluster's workers, flows/runners.py), so the cluster together stays within what
    the server was given, not that many times it. At least 1."""
    return max(1, concurrency // environment().sharing_processes)


def in_order(
    function: Callable,
    items: Sequence,
    workers: int,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> list:
    """function(item) of every item, in the items' order: one after another with one worker (an
    in-process model, whose consecutive prompts share their prefix), else on `workers` threads
    (a served model's concurrency: it bounds the requests in flight itself). on_progress(done,
    total) after each item, from one thread at a time."""
    done, lock = [0], threading.Lock()

    def counted(item):
        result = function(item)
        with lock:
            done[0] += 1
            on_progress(done[0], len(items))
        return result

    if workers <= 1 or len(items) <= 1:
        return [counted(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="model-calls") as pool:
        return list(pool.map(counted, items))
