"""Pages a generation is drafting, claimed so that a concurrent one skips them.

Two `golden generate` runs with one seed on one collection draw the same pages in the same order;
each read the candidates log once at its start, so both drafted every page (no row lost or
doubled, but the model's work done twice). Before drafting a page a generation claims it, under
the collection's write lock: a page already in the candidates log (another run finished it) or
claimed by a live process is skipped. A claim is a small file under
`<home>/locks/claims/<collection>/`, removed once the page's candidate is logged; one left by a
process that died (same host, pid gone) or older than CLAIM_LIFETIME_SECONDS is taken over."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ragassay.orphans import process_alive
from ragassay.store.workspace import CollectionPaths

# A draft takes seconds to a few minutes; a claim this old is a lost one, whatever its host says.
CLAIM_LIFETIME_SECONDS = 3600


def claim_file(paths: CollectionPaths, run_key: str, chunk_id: str) -> Path:
    digest = hashlib.sha256(f"{run_key}\0{chunk_id}".encode()).hexdigest()[:32]
    return paths.lock_file.parent / "claims" / paths.name / f"{digest}.json"


@contextmanager
def claimed_page(
    paths: CollectionPaths, run_key: str, chunk_id: str, finished_elsewhere: Callable[[], bool]
) -> Iterator[bool]:
    """Within it, True when this process holds the page's claim (and must draft it), False when
    another run finished the page (finished_elsewhere(), read under the lock) or is drafting it.
    run_key: what makes two runs draw the same pages (kind, seed, model, prompt version)."""
    path = claim_file(paths, run_key, chunk_id)
    with paths.write_lock():
        mine = not finished_elsewhere() and not _held_by_another(path)
        if mine:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}), encoding="utf-8"
            )
    try:
        yield mine
    finally:
        if mine:
            path.unlink(missing_ok=True)


def _held_by_another(path: Path) -> bool:
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # no claim, or a torn one: its writer died writing it
    if time.time() - float(holder.get("since", 0)) > CLAIM_LIFETIME_SECONDS:
        return False
    if holder.get("host") != socket.gethostname():
        return True  # another machine's process: alive as far as we can tell
    pid = int(holder.get("pid", 0))
    return pid != os.getpid() and process_alive(pid)
