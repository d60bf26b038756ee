"""Concurrent writers and interrupted ingests, repeated, counted (RELIABILITY.md):

1. two `ragassay golden add` processes on one collection at once, 15 different rows each;
2. two `ragassay ingest` processes of two halves of a folder (40 files each) into a collection
   that already holds 150 documents;
3. an `ingest` killed (SIGKILL) at a random moment, then `index` and the ingest again;
4. an `ingest` killed (SIGKILL) 0-3 s after its extraction worker starts:
   how many servers (or extraction workers) are still running 5 s later;
5. hostile files, each ingested beside one good file: what the ingest says, how long it takes,
   and the peak memory of the process that reads the file;
6. `ragassay run` of a small pipeline (SmolLM2 answering and judging) interrupted at a random
   moment 1-45 s after it starts, by Ctrl-C (SIGINT to its process group), `timeout`'s SIGTERM to
   the group, or SIGTERM to the command alone, in turn: seconds from the signal to the exit, exit
   codes, processes and MLflow runs left RUNNING, tracebacks, and whether a rerun finishes.

    .venv/bin/python benchmarks/bench_reliability.py [--rounds 10] [--interrupts 20]
        [--only writers kills hostile interrupts]

Prints, per experiment, the rounds run and how many lost, duplicated, crashed (exit code 3 or a
traceback), hung (past 300 s) or left inconsistent (chunks of no document after a completed
command); then the processes left behind by kills, and the hostile files' table. The goal is 0
in every column.
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
        (root / f"{prefix}-{number:03d}.txt").write_text(
            f"Note {prefix} {number}: hive {number} inspected on day {number}.\n" * 20
        )
    return root


def both(commands: list[list[str]], env: dict[str, str]) -> list[subprocess.CompletedProcess]:
    processes = [
        subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for command in commands
    ]
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
    parser.add_argument("--interrupts", type=int, default=20)
    experiments = ("writers", "kills", "hostile", "interrupts")
    parser.add_argument("--only", nargs="+", choices=experiments, default=list(experiments))
    arguments = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ragassay-bench-reliability-"))
    try:
        if "writers" in arguments.only:
            writers(arguments.rounds, folder)
        if "kills" in arguments.only:
            kills(arguments.rounds, folder)
        if "hostile" in arguments.only:
            hostile_files(folder)
        if "interrupts" in arguments.only:
            interrupts(arguments.interrupts, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def writers(rounds_asked: int, folder: Path) -> None:
    """Experiments 1-3: concurrent writers and a killed ingest, counted."""
    rows = []
    # 1. Concurrent golden adds.
    home = folder / "golden-home"
    env = {**os.environ, "RAGASSAY_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    subprocess.run(
        [RAGASSAY, "ingest", "-c", "s", str(corpus(folder / "golden-corpus", 5, "g"))],
        env=env,
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    documents = sorted(p.name for p in (folder / "golden-corpus").iterdir())
    counts = {"lost": 0, "duplicated": 0, "crashed": 0, "hung": 0, "inconsistent": 0}
    for round_ in range(rounds_asked):
        files = []
        for tag in "ab":
            file = folder / f"golden-{round_}-{tag}.jsonl"
            file.write_text(
                "".join(
                    json.dumps(
                        {
                            "question": f"Round {round_} {tag}: what happened to hive {n}?",
                            "expected_document_ids": [documents[n % 5]],
                        }
                    )
                    + "\n"
                    for n in range(15)
                )
            )
            files.append(file)
        results = both([[RAGASSAY, "golden", "add", "-c", "s", "--file", str(f)] for f in files], env)
        counts["crashed"] += sum(crashed(r) for r in results)
        counts["hung"] += sum(r.returncode == -999 for r in results)
        golden = tables(home)[2]
        expected = 30 * (round_ + 1)
        counts["lost"] += max(0, expected - golden.height)
        counts["duplicated"] += golden.height - golden["question"].n_unique()
    rows.append(("concurrent golden add (2 x 15 rows)", rounds_asked, counts))

    # 2. Concurrent ingests of two halves into a large collection.
    counts = {"lost": 0, "duplicated": 0, "crashed": 0, "hung": 0, "inconsistent": 0}
    rounds = max(1, rounds_asked // 3)
    for round_ in range(rounds):
        home = folder / f"ingest-home-{round_}"
        env = {**os.environ, "RAGASSAY_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        subprocess.run(
            [RAGASSAY, "ingest", "-c", "s", str(corpus(folder / f"base-{round_}", 150, "base"))],
            env=env,
            cwd=REPO,
            capture_output=True,
            check=True,
        )
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
        process = subprocess.Popen(
            [RAGASSAY, "ingest", "-c", "s", str(source)],
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(generator.uniform(3.0, 9.0))
        process.send_signal(signal.SIGKILL)
        process.wait()
        index = subprocess.run(
            [RAGASSAY, "index", "-c", "s"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
        )
        counts["crashed"] += crashed(index)
        refused_index += index.returncode == 2 and "interrupted" in index.stderr
        again = subprocess.run(
            [RAGASSAY, "ingest", "-c", "s", str(source)], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
        )
        counts["crashed"] += crashed(again)
        docs, chunks, _ = tables(home)
        counts["lost"] += max(0, 120 - docs.height)
        counts["inconsistent"] += int(set(chunks["doc_id"].to_list()) != set(docs["doc_id"].to_list()))
    rows.append(
        (
            f"ingest SIGKILLed at 3-9 s, then index, then ingest again ({refused_index} index refusals of an interrupted collection)",
            rounds,
            counts,
        )
    )

    print(f"{'experiment':<100} {'rounds':>6} {'lost':>5} {'dup':>5} {'crash':>6} {'hung':>5} {'incons':>7}")
    for name, rounds, counts in rows:
        print(
            f"{name:<100} {rounds:>6} {counts['lost']:>5} {counts['duplicated']:>5} {counts['crashed']:>6} {counts['hung']:>5} {counts['inconsistent']:>7}"
        )


def process_table() -> list[tuple[int, int, str]]:
    """(pid, parent pid, command line) of every process, from /proc: ps cuts long command lines to its width."""
    table = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue  # gone between listing and reading
        table.append((int(entry.name), parent, " ".join(argv)))
    return table


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def kills(rounds: int, folder: Path) -> None:
    """SIGKILL an ingest 0-3 s after its extraction worker starts (its temporary Prefect server is
    up by then, and the worker is mid-file or between files: the corpus holds slow pages); count
    the children still running 5 s later."""
    generator = random.Random(11)
    left_servers = left_workers = caught_servers = caught_workers = 0
    source = hostile_corpus(folder / "kill-children", slow_copies=6)
    for round_ in range(rounds):
        env = {name: value for name, value in os.environ.items() if name != "PREFECT_API_URL"}
        env.update(RAGASSAY_HOME=str(folder / f"kill-children-home-{round_}"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
        process = subprocess.Popen(
            [RAGASSAY, "ingest", "-c", "s", str(source)],
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline, children = time.monotonic() + 180, {}
        while (
            time.monotonic() < deadline
            and process.poll() is None
            and not any("ragassay.ingest.isolation" in a for a in children.values())
        ):
            children = {pid: args for pid, ppid, args in process_table() if ppid == process.pid}
            time.sleep(0.1)
        stop_at = time.monotonic() + generator.uniform(0.0, 3.0)
        while time.monotonic() < stop_at and process.poll() is None:
            children.update({pid: args for pid, ppid, args in process_table() if ppid == process.pid})
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        time.sleep(5)
        servers = [pid for pid, args in children.items() if "temporary_server" in args or "uvicorn" in args]
        workers = [pid for pid, args in children.items() if "ragassay.ingest.isolation" in args]
        caught_servers += bool(servers)
        caught_workers += bool(workers)
        left_servers += sum(running(pid) for pid in servers)
        left_workers += sum(running(pid) for pid in workers)
        for pid in [*servers, *workers]:
            if running(pid):
                os.kill(pid, signal.SIGKILL)
    print(
        f"\ningest SIGKILLed 0-3 s after its extraction worker started, {rounds} rounds: "
        f"{left_servers} servers and {left_workers} extraction workers still running 5 s later "
        f"(a server was running in {caught_servers} rounds, a worker in {caught_workers})"
    )


def hostile_corpus(root: Path, slow_copies: int = 1) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    block = "<div>" * 1000 + "x" + "</div>" * 1000
    for copy in range(slow_copies):
        (root / f"slow-{copy}.html").write_text("<html><body>" + block * 400 + "</body></html>")
    (root / "good.txt").write_text("Hive 7 was inspected on day 3.\n")
    return root


def hostile_files(folder: Path) -> None:
    """Each hostile file beside one good file: the ingest's outcome and time, and the peak memory
    of the worker that read it (measured by reading it alone through the same worker)."""
    import io
    import zipfile

    def docx(body: str, lie_about_size: bool = False) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr(
                "[Content_Types].xml",
                '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
            )
            document = (
                '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
                + body
                + "</w:body></w:document>"
            )
            archive.writestr(zipfile.ZipInfo("word/document.xml"), document, compress_type=zipfile.ZIP_DEFLATED)
        data = buffer.getvalue()
        if lie_about_size:
            # Rewrite the declared uncompressed size (local header and central directory) to 1 KB.
            size = len(document.encode())
            data = data.replace(size.to_bytes(4, "little"), (1024).to_bytes(4, "little"))
        return data

    block = "<div>" * 1000 + "x" + "</div>" * 1000
    hostile = {
        "deep.json (nested 100k)": ("deep.json", ("[" * 100_000 + "]" * 100_000).encode()),
        "deep.html (400k nested divs, 4.4 MB)": (
            "deep.html",
            ("<html><body>" + "<div>" * 400_000 + "x" + "</div>" * 400_000 + "</body></html>").encode(),
        ),
        "slow.html (1000 deep x 400, 4.4 MB)": (
            "slow.html",
            ("<html><body>" + block * 400 + "</body></html>").encode(),
        ),
        "deep.docx (w:sdt nested 100k)": (
            "deep.docx",
            docx("<w:sdt><w:sdtContent>" * 100_000 + "<w:p/>" + "</w:sdtContent></w:sdt>" * 100_000),
        ),
        "bomb.docx (declares 1 KB, inflates to 1 GB)": (
            "bomb.docx",
            docx("<w:p><w:r><w:t>" + "a" * 1_000_000_000 + "</w:t></w:r></w:p>", lie_about_size=True),
        ),
        "huge.json (6M empty objects, 18 MB)": ("huge.json", ("[" + ",".join(["{}"] * 6_000_000) + "]").encode()),
    }
    print(f"\n{'hostile file':<46} {'outcome':<64} {'exit':>4} {'ingest s':>8} {'read s':>7} {'reader peak MB':>14}")
    for label, (name, data) in hostile.items():
        corpus_dir = folder / f"hostile-{name}"
        corpus_dir.mkdir()
        (corpus_dir / name).write_bytes(data)
        (corpus_dir / "good.txt").write_text("Hive 7 was inspected on day 3.\n")
        env = {
            **os.environ,
            "RAGASSAY_HOME": str(folder / f"hostile-home-{name}"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "RAGASSAY_EXTRACT_TIMEOUT": "10",
        }
        started = time.perf_counter()
        result = subprocess.run(
            [RAGASSAY, "ingest", "-c", "s", "--json", str(corpus_dir)],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        seconds = time.perf_counter() - started
        try:
            report = json.loads(result.stdout)
            rejected = {Path(r["path"]).name: f"{r['reason']}: {r['detail']}" for r in report["rejected"]}
            outcome = rejected.get(name, "ingested") + (
                "" if report["ingested"] == ["good.txt"] or "good.txt" in report["ingested"] else " (good.txt LOST)"
            )
        except (json.JSONDecodeError, KeyError):
            outcome = f"CRASH: {result.stderr.strip().splitlines()[-1] if result.stderr.strip() else result.returncode}"
        probe = subprocess.run(
            [sys.executable, "-c", PROBE, str(corpus_dir / name)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "RAGASSAY_EXTRACT_TIMEOUT": "10"},
        )
        read_seconds, peak_mb = probe.stdout.split() if probe.returncode == 0 else ("?", "?")
        print(f"{label:<46} {outcome[:64]:<64} {result.returncode:>4} {seconds:>8.1f} {read_seconds:>7} {peak_mb:>14}")


# Reads one file through the extraction worker, as ingest does, and prints the seconds it took and
# the worker's peak resident memory (getrusage of waited-for children).
PROBE = """
import resource, sys, time
from pathlib import Path
from ragassay.ingest.extraction import ExtractionError
from ragassay.ingest.isolation import IsolatedExtractor
path = Path(sys.argv[1])
with IsolatedExtractor() as extract:
    extract(b"warm", "warm.txt")
    started = time.perf_counter()
    try:
        extract(path.read_bytes(), path.name)
    except ExtractionError:
        pass
    seconds = time.perf_counter() - started
print(f"{seconds:.1f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f}")
"""


SAMPLE = REPO / "data" / "sample"
INTERRUPTS = [
    ("SIGINT to the group (Ctrl-C)", signal.SIGINT, True),
    ("SIGTERM to the group", signal.SIGTERM, True),
    ("SIGTERM to the command", signal.SIGTERM, False),
]


def small_pipeline(path: Path) -> Path:
    settings = {
        "collection": "sample",
        "ingest": {"paths": [str(SAMPLE / "corpus")]},
        "golden": {"file": str(SAMPLE / "golden.jsonl"), "generate": False},
        "retrieval": {"configurations": [{"label": "fulltext", "search_type": "fulltext"}]},
        "answers": {
            "max_questions": 4,
            "pairwise": False,
            "configurations": [{"label": "fulltext", "search_type": "fulltext", "k": 2, "max_answer_tokens": 96}],
        },
        "judge": {"backend": "smollm2"},
    }
    path.write_text(json.dumps(settings))
    return path


def descendants(root: int) -> set[int]:
    table = process_table()
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid, _ in table if ppid in frontier} - found
        found |= frontier
    return found


def unfinished_runs(home: Path) -> int:
    """MLflow runs of the workspace still RUNNING (a batch or configuration never ended)."""
    if not (home / "mlflow.db").exists():
        return 0
    import sqlite3

    with sqlite3.connect(home / "mlflow.db") as connection:
        return connection.execute("select count(*) from runs where status = 'RUNNING'").fetchone()[0]


def interrupts(rounds: int, folder: Path) -> None:
    """Interrupt `ragassay run` at random moments, each way in turn, and count what is left."""
    generator = random.Random(24)
    config = small_pipeline(folder / "pipeline.json")
    rows = []
    for round_ in range(rounds):
        name, stop, to_group = INTERRUPTS[round_ % len(INTERRUPTS)]
        home = folder / f"interrupt-home-{round_}"
        env = {key: value for key, value in os.environ.items() if key != "PREFECT_API_URL"}
        env.update(
            RAGASSAY_HOME=str(home), RAGASSAY_CACHE=str(home / "cache"), PREFECT_SERVER_ANALYTICS_ENABLED="false"
        )
        command = [RAGASSAY, "run", "--config", str(config)]
        process = subprocess.Popen(
            command,
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        delay = generator.uniform(1.0, 45.0)
        time.sleep(delay)
        if process.poll() is not None:
            rows.append({"way": name, "at": delay, "finished_first": True})
            continue
        family = descendants(process.pid)
        (os.killpg if to_group else os.kill)(process.pid, stop)
        signalled = time.monotonic()
        try:
            _, errors = process.communicate(timeout=300)
            seconds = time.monotonic() - signalled
        except subprocess.TimeoutExpired:
            process.kill()
            _, errors = process.communicate()
            seconds = None
        time.sleep(5)
        left = [pid for pid in family | descendants(process.pid) if running(pid)]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        rerun = None
        if round_ % 4 == 3:
            rerun = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=900).returncode
        rows.append(
            {
                "way": name,
                "at": delay,
                "finished_first": False,
                "seconds": seconds,
                "code": process.returncode,
                "left": len(left),
                "running_runs": unfinished_runs(home),
                "traceback": "Traceback" in errors or "bug in ragassay" in errors,
                "rerun": rerun,
                "errors": errors[-1500:],
            }
        )
    print(f"\n`ragassay run` interrupted 1-45 s after it started, {rounds} rounds:")
    print(
        f"{'way':<30} {'rounds':>6} {'exit codes':<16} {'max s to exit':>13} {'left':>5} {'RUNNING':>8} {'tracebacks':>10} {'reruns ok':>10}"
    )
    for name, _, _ in INTERRUPTS:
        mine = [row for row in rows if row["way"] == name and not row["finished_first"]]
        if not mine:
            continue
        codes = ",".join(sorted({str(row["code"]) for row in mine}))
        times = [row["seconds"] for row in mine]
        slowest = "hung" if None in times else f"{max(times):.1f}"
        reruns = [row["rerun"] for row in mine if row["rerun"] is not None]
        print(
            f"{name:<30} {len(mine):>6} {codes:<16} {slowest:>13} {sum(r['left'] for r in mine):>5} "
            f"{sum(r['running_runs'] for r in mine):>8} {sum(r['traceback'] for r in mine):>10} "
            f"{f'{sum(code in (0, 1) for code in reruns)}/{len(reruns)}':>10}"
        )
    for row in rows:
        if not row["finished_first"] and (row["code"] not in (130, 143) or row["traceback"]):
            print(f"\n{row['way']} at {row['at']:.1f} s: exit {row['code']}; the end of its stderr:\n{row['errors']}")
    finished = sum(row["finished_first"] for row in rows)
    if finished:
        print(f"({finished} rounds finished before their signal came)")


if __name__ == "__main__":
    main()
