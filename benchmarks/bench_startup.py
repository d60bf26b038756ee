"""How long each command takes to answer, against the library call doing the same work (issue 73).

    .venv/bin/python benchmarks/bench_startup.py [--repeat 3]

Builds the sample workspace (data/sample: ingest, index, the golden set) in a temporary RAGASSAY_HOME
with a new PREFECT_HOME, then times each command as a user types it:

- cold: the first command after the shared Prefect server stopped (RAGASSAY_PREFECT_SERVER_IDLE_SECONDS=0:
  every flow command starts one), and with the import caches of a new process;
- warm: with the shared server left running (idle 120 s), the median of --repeat runs;
- at once: the same command twice at the same moment, warm (the slower of the two);
- direct: the library call that does the command's work, timed inside one Python process (no
  interpreter start, no imports), the floor a command could reach.

Prints a table of seconds, and the fixed start of a flow command (warm minus direct). The goals:
a command that does no flow work under 1 s; a flow command's fixed start at most 3 s, idle.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RAGASSAY = str(Path(sys.executable).parent / "ragassay")
SAMPLE = REPO / "data" / "sample"
QUERY = "How often should a hive be inspected?"

# Each command as typed, whether it runs a flow, and the library call doing the same work.
COMMANDS = [
    ("--help", ["--help"], False, "pass"),
    ("runs list", ["runs", "list"], False, "from ragassay import tracking; tracking.find_runs(home)"),
    (
        "collections list",
        ["collections", "list"],
        False,
        "from ragassay.store.workspace import list_collections; list_collections(home)",
    ),
    (
        "documents list",
        ["documents", "list", "-c", "sample"],
        False,
        "from ragassay.store.workspace import collection_paths, load_documents; "
        "load_documents(collection_paths(home, 'sample'))",
    ),
    (
        "search",
        ["search", QUERY, "-c", "sample"],
        False,
        "from ragassay.resources import Resources; from ragassay.search.run import run_search; "
        "from ragassay.search.settings import SearchSettings; "
        f"run_search(Resources(), home, ['sample'], {QUERY!r}, SearchSettings())",
    ),
    (
        "eval retrieval (fulltext)",
        ["eval", "retrieval", "-c", "sample", "--mode", "fulltext"],
        True,
        "from ragassay.resources import Resources; from ragassay.search.run import run_search; "
        "from ragassay.search.settings import SearchSettings; "
        "from ragassay.store.workspace import collection_paths; from ragassay.golden.store import load_golden; "
        "r = Resources(); [run_search(r, home, ['sample'], q, SearchSettings(search_type='fulltext'), 10) "
        "for q in load_golden(collection_paths(home, 'sample'))['question']]",
    ),
]


def timed(arguments: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([RAGASSAY, *arguments], env=env, cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"ragassay {' '.join(arguments)} exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds


def direct(call: str, env: dict[str, str]) -> float:
    """The library call's seconds inside one process, its imports done first."""
    code = (
        "import time; from pathlib import Path; import os\n"
        "home = Path(os.environ['RAGASSAY_HOME'])\n"
        f"exec({call!r})\n"  # once, to import and load what it needs
        "started = time.perf_counter()\n"
        f"exec({call!r})\n"
        "print(time.perf_counter() - started)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"direct call failed: {done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def at_once(arguments: list[str], env: dict[str, str]) -> float:
    seconds: list[float] = []
    threads = [threading.Thread(target=lambda: seconds.append(timed(arguments, env))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return max(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    folder = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    base = {name: value for name, value in os.environ.items() if name != "PREFECT_API_URL"}
    base |= {"RAGASSAY_HOME": str(folder / "workspace"), "PREFECT_HOME": str(folder / "prefect")}
    cold_env = base | {"RAGASSAY_PREFECT_SERVER_IDLE_SECONDS": "0"}
    warm_env = base | {"RAGASSAY_PREFECT_SERVER_IDLE_SECONDS": "120"}
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} before the set-up", flush=True)
    for step in (
        ["ingest", "-c", "sample", str(SAMPLE / "corpus")],
        ["index", "-c", "sample"],
        ["golden", "add", "-c", "sample", "--file", str(SAMPLE / "golden.jsonl")],
        ["eval", "retrieval", "-c", "sample", "--mode", "fulltext"],  # a batch for runs list to find
    ):
        print(f"set-up: ragassay {' '.join(step)}: {timed(step, cold_env):.1f} s", flush=True)
    time.sleep(2)  # the set-up's server stops (idle 0)
    print(f"\n{'command':<28} {'cold s':>7} {'warm s':>7} {'at once s':>10} {'direct s':>9}")
    for name, arguments, runs_flow, call in COMMANDS:
        cold = timed(arguments, cold_env)
        time.sleep(1.0 if runs_flow else 0)  # its server stops
        timed(arguments, warm_env)  # starts the shared server for the warm runs
        warm = statistics.median(timed(arguments, warm_env) for _ in range(repeat))
        both = at_once(arguments, warm_env)
        floor = direct(call, warm_env)
        print(f"{name:<28} {cold:>7.2f} {warm:>7.2f} {both:>10.2f} {floor:>9.3f}", flush=True)
        if runs_flow:
            print(f"  the fixed start of a flow command (warm - direct): {warm - floor:.2f} s")
    print(f"\nload average {os.getloadavg()[0]:.2f} after; workspace {folder}")


if __name__ == "__main__":
    main()
