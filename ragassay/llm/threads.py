"""How many threads an in-process model runs on, and how calls to a served model fan out."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ragassay.environment import environment


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_threads() -> int:
    """Cores free for a model now: the usable cores less the processes that keep running.

    llama.cpp slows down sharply when it runs more threads than free cores (measured on 2 cores:
    with one other busy process, 2 threads generated 2.2x slower than 1; idle, 2 threads were 1.5-2x
    faster than 1: BENCHMARKS.md, "Judge speed"). Other processes are counted as the fewest
    runnable in five looks 20 ms apart: a process busy for a moment (Prefect's server answering
    this run's own calls) is not one that will compete for the whole evaluation.

    RAGASSAY_MODEL_THREADS, when set, is the answer: a Dask LocalCluster gives each of its worker
    processes its share of the cores (flows/runners.py), as workers load their models at once and
    would each see the machine idle."""
    chosen = environment().model_threads
    if chosen is not None:
        return chosen
    cores = usable_cores()
    others = []
    for look in range(5):
        try:
            # /proc/loadavg's 4th field is "runnable/total" right now, this process included.
            others.append(int(Path("/proc/loadavg").read_text().split()[3].split("/")[0]) - 1)
        except (OSError, ValueError, IndexError):
            return cores
        if look < 4:
            time.sleep(0.02)
    return max(1, min(cores, cores - min(others)))


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
