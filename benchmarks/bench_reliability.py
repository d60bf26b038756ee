"""Concurrent writers and interrupted ingests, repeated, counted (RELIABILITY.md):

1. two `ragassay golden add` processes on one collection at once, 15 different rows each;
2. two `ragassay ingest` processes of two halves of a folder (40 files each) into a collection
   that already holds 150 documents;
3. an `ingest` killed (SIGKILL) at a random moment, then `index` and the ingest again.

    .venv/bin/python benchmarks/bench_reliability.py [--rounds 10]

Prints, per experiment, the rounds run and how many lost, duplicated, crashed (exit code 3 or a
traceback), hung (past 300 s) or left inconsistent (chunks of no document after a completed
command). The goal is 0 in every column.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RAGASSAY = str(Path(sys.executable).parent / "ragassay")


def corpus(root: Path, count: int, prefix: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        (root / f"{prefix}-{number:03d}.txt").write_text(f"Note {prefix} {number}: hive {number} inspected on day {number}.\n" * 20)
    return root


def both(commands: list[list[str]], env: dict[str, str]) -> list[subprocess.CompletedProcess]:
    processes = [subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for command in commands]
    results = []
    for process, command in zip(processes, commands):
        try:
            out, err = process.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            process.returncode = -999
        results.append(subprocess.CompletedProcess(command, process.returncode, out, err))
    return results


def crashed(result: subprocess.CompletedProcess) -> bool:
    return result.returncode == 3 or "Traceback" in result.stderr


def tables(home: Path):
    sys.path.insert(0, str(REPO))
    from ragassay.golden.store import load_golden
    from ragassay.store.workspace import collection_paths, load_chunks, load_documents

    paths = collection_paths(home, "s")
    return load_documents(paths), load_chunks(paths), load_golden(paths)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    arguments = parser.parse_args()
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="ragassay-bench-reliability-"))
    try:
        # 1. Concurrent golden adds.
        home = folder / "golden-home"
        env = {**os.environ, "RAGASSAY_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        subprocess.run([RAGASSAY, "ingest", "-c", "s", str(corpus(folder / "golden-corpus", 5, "g"))], env=env, cwd=REPO, capture_output=True, check=True)
        documents = sorted(p.name for p in (folder / "golden-corpus").iterdir())
        counts = {"lost": 0, "duplicated": 0, "crashed": 0, "hung": 0, "inconsistent": 0}
        for round_ in range(arguments.rounds):
            files = []
            for tag in "ab":
                file = folder / f"golden-{round_}-{tag}.jsonl"
                file.write_text("".join(json.dumps({"question": f"Round {round_} {tag}: what happened to hive {n}?",
                                                    "expected_document_ids": [documents[n % 5]]}) + "\n" for n in range(15)))
                files.append(file)
            results = both([[RAGASSAY, "golden", "add", "-c", "s", "--file", str(f)] for f in files], env)
            counts["crashed"] += sum(crashed(r) for r in results)
            counts["hung"] += sum(r.returncode == -999 for r in results)
            golden = tables(home)[2]
            expected = 30 * (round_ + 1)
            counts["lost"] += max(0, expected - golden.height)
            counts["duplicated"] += golden.height - golden["question"].n_unique()
        rows.append(("concurrent golden add (2 x 15 rows)", arguments.rounds, counts))

        # 2. Concurrent ingests of two halves into a large collection.
        counts = {"lost": 0, "duplicated": 0, "crashed": 0, "hung": 0, "inconsistent": 0}
        rounds = max(1, arguments.rounds // 3)
        for round_ in range(rounds):
            home = folder / f"ingest-home-{round_}"
            env = {**os.environ, "RAGASSAY_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
            subprocess.run([RAGASSAY, "ingest", "-c", "s", str(corpus(folder / f"base-{round_}", 150, "base"))], env=env, cwd=REPO, capture_output=True, check=True)
            halves = [corpus(folder / f"{half}-{round_}", 40, half) for half in ("left", "right")]
            results = both([[RAGASSAY, "ingest", "-c", "s", str(h)] for h in halves], env)
            counts["crashed"] += sum(crashed(r) for r in results)
            counts["hung"] += sum(r.returncode == -999 for r in results)
            docs, chunks, _ = tables(home)
            counts["lost"] += max(0, 230 - docs.height)
            counts["duplicated"] += docs.height - docs["doc_id"].n_unique()
            counts["inconsistent"] += int(set(chunks["doc_id"].to_list()) != set(docs["doc_id"].to_list()))
        rows.append(("concurrent ingest of two halves (2 x 40 files into 150)", rounds, counts))

        # 3. Ingest killed at a random moment; then index, and the ingest again.
        counts = {"lost": 0, "duplicated": 0, "crashed": 0, "hung": 0, "inconsistent": 0}
        generator = random.Random(7)
        refused_index = 0
        for round_ in range(rounds):
            home = folder / f"kill-home-{round_}"
            env = {**os.environ, "RAGASSAY_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
            source = corpus(folder / f"kill-{round_}", 120, "k")
            process = subprocess.Popen([RAGASSAY, "ingest", "-c", "s", str(source)], env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(generator.uniform(3.0, 9.0))
            process.send_signal(signal.SIGKILL)
            process.wait()
            index = subprocess.run([RAGASSAY, "index", "-c", "s"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
            counts["crashed"] += crashed(index)
            refused_index += index.returncode == 2 and "interrupted" in index.stderr
            again = subprocess.run([RAGASSAY, "ingest", "-c", "s", str(source)], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
            counts["crashed"] += crashed(again)
            docs, chunks, _ = tables(home)
            counts["lost"] += max(0, 120 - docs.height)
            counts["inconsistent"] += int(set(chunks["doc_id"].to_list()) != set(docs["doc_id"].to_list()))
        rows.append((f"ingest SIGKILLed at 3-9 s, then index, then ingest again ({refused_index} index refusals of an interrupted collection)", rounds, counts))
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    print(f"{'experiment':<100} {'rounds':>6} {'lost':>5} {'dup':>5} {'crash':>6} {'hung':>5} {'incons':>7}")
    for name, rounds, counts in rows:
        print(f"{name:<100} {rounds:>6} {counts['lost']:>5} {counts['duplicated']:>5} {counts['crashed']:>6} {counts['hung']:>5} {counts['inconsistent']:>7}")


if __name__ == "__main__":
    main()
