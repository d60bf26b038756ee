"""The loaded models and opened collections of this worker process: one Resources for the process's
lifetime, shared by the tasks it runs, so an evaluation loads each model and index once. (A
task-runner worker is a process of its own and gets its own.)"""

from __future__ import annotations

import atexit
from functools import cache

from ragassay.resources import Resources


@cache
def worker_resources() -> Resources:
    """This process's Resources, made on first use and released when the process exits (before
    the interpreter tears its modules down, which llama.cpp's cleanup needs)."""
    resources = Resources()
    atexit.register(resources.close)
    return resources
