"""Trying to break it: concurrent writers in real processes, a writer killed between its writes,
a lock held too long, links out of the ingest root, hostile names and values, and crashes that
must not read as partial success."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from ragassay.cli.main import app
from tests.conftest import REPO
from tests.helpers import index, ingest, search_hits

RAGASSAY = str(Path(sys.executable).parent / "ragassay")
runner = CliRunner()


def ragassay(*args: str, env: dict[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [RAGASSAY, *args], env=env or os.environ.copy(), cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def small_corpus(root: Path, documents: int, prefix: str = "note") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for number in range(documents):
        (root / f"{prefix}-{number:03d}.txt").write_text(
            f"Note {prefix} {number}: hive {number} was inspected on day {number}.\n", encoding="utf-8"
        )
    return root


def golden_file(path: Path, tag: str, documents: list[str]) -> Path:
    rows = [
        {"question": f"What happened to hive {n} ({tag})?", "expected_document_ids": [documents[n % len(documents)]]}
        for n in range(15)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.slow
def test_concurrent_golden_adds_keep_every_entry(home, tmp_path):
    from ragassay.golden.store import load_golden
    from ragassay.store.workspace import collection_paths, load_documents

    ingest(home, "s", (small_corpus(tmp_path / "corpus", 5),))
    documents = load_documents(collection_paths(home, "s"))["doc_id"].to_list()
    for round_ in range(3):
        files = [golden_file(tmp_path / f"{round_}-{tag}.jsonl", f"{round_}{tag}", documents) for tag in "ab"]
        writers = [
            subprocess.Popen(
                [RAGASSAY, "golden", "add", "-c", "s", "--file", str(f), "--json"],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for f in files
        ]
        outputs = [writer.communicate(timeout=300) for writer in writers]
        assert all(w.returncode == 0 for w in writers), outputs
        assert [len(json.loads(out)["added"]) for out, _ in outputs] == [15, 15]
        assert load_golden(collection_paths(home, "s")).height == 30 * (round_ + 1), f"round {round_}: an add was lost"


@pytest.mark.slow
def test_concurrent_ingests_of_two_halves_keep_every_document(home, tmp_path):
    from ragassay.store.workspace import collection_paths, load_chunks, load_documents

    ingest(home, "s", (small_corpus(tmp_path / "base", 150, "base"),))
    halves = [small_corpus(tmp_path / half, 40, half) for half in ("left", "right")]
    writers = [
        subprocess.Popen(
            [RAGASSAY, "ingest", "-c", "s", str(half)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for half in halves
    ]
    outputs = [writer.communicate(timeout=300) for writer in writers]
    assert all(w.returncode == 0 for w in writers), outputs
    paths = collection_paths(home, "s")
    documents, chunks = load_documents(paths), load_chunks(paths)
    assert documents.height == 230, "both halves and the base are kept"
    assert set(chunks["doc_id"]) == set(documents["doc_id"]), "no chunks without a document, no document without chunks"


@pytest.mark.slow
def test_a_lock_held_too_long_names_its_holder(home, tmp_path):
    from ragassay.store.locks import collection_lock
    from ragassay.store.workspace import collection_paths, load_documents

    ingest(home, "s", (small_corpus(tmp_path / "corpus", 3),))
    documents = load_documents(collection_paths(home, "s"))["doc_id"].to_list()
    with collection_lock(collection_paths(home, "s").lock_file):
        waited = ragassay(
            "golden",
            "add",
            "-c",
            "s",
            "--file",
            str(golden_file(tmp_path / "g.jsonl", "x", documents)),
            env={**os.environ, "RAGASSAY_LOCK_TIMEOUT": "1"},
        )
    assert waited.returncode == 2
    assert (
        f"collection 's' is being written by process {os.getpid()}" in waited.stderr
        and "gave up after 1s" in waited.stderr
    )


@pytest.mark.slow
def test_a_second_index_build_waits_for_the_first_and_leaves_its_embedded_groups(home, tmp_path):
    """Two builds of one collection at once would each remove the other's embedded groups: the
    second waits for the index-build lock (here past RAGASSAY_LOCK_TIMEOUT, naming the holder)."""
    from ragassay.index.embedding import EMBEDDING_PARTS
    from ragassay.store.workspace import collection_paths

    ingest(home, "s", (small_corpus(tmp_path / "corpus", 3),))
    paths = collection_paths(home, "s")
    group = paths.root / EMBEDDING_PARTS / "group-1-000000.parquet"
    group.parent.mkdir()
    group.write_bytes(b"a finished group of the build that holds the lock")
    with paths.index_build_lock():
        waited = ragassay("index", "-c", "s", env={**os.environ, "RAGASSAY_LOCK_TIMEOUT": "1"})
    assert waited.returncode == 2, waited.stderr
    assert f"collection 's' (an index build) is being written by process {os.getpid()}" in waited.stderr
    assert "gave up after 1s" in waited.stderr
    assert group.exists() and not paths.index_dir.exists()


@pytest.mark.slow
def test_an_ingest_killed_between_its_writes_is_refused_by_index_and_repaired_by_the_next_ingest(home, tmp_path):
    from ragassay.store.schemas import CHUNKS
    from ragassay.store.tables import write_table
    from ragassay.store.workspace import STALE_STAGING_SECONDS, collection_paths, load_chunks

    corpus = small_corpus(tmp_path / "corpus", 4)
    ingest(home, "s", (corpus,))
    paths = collection_paths(home, "s")
    chunks = load_chunks(paths)
    # The state a SIGKILL after `chunks.parquet` and before `documents.parquet` leaves: chunks of a
    # document that was never stored, and a temporary file of a write that never finished.
    orphan = chunks.head(1).with_columns(pl.lit("ghost.txt").alias("doc_id"), pl.lit("ghost.txt#0").alias("chunk_id"))
    write_table(pl.concat([chunks, orphan]), paths.chunks, CHUNKS)
    (paths.root / ".chunks.parquet.tmp1234").write_bytes(b"half a table")
    # Written before the kill, an hour and more ago: a younger one could be a live writer's.
    stale = time.time() - STALE_STAGING_SECONDS - 60
    os.utime(paths.root / ".chunks.parquet.tmp1234", (stale, stale))
    # A young one, as an index build writing its embedding cache outside the lock leaves it.
    (paths.root / ".embeddings.parquet.live").write_bytes(b"being written")

    refused = ragassay("index", "-c", "s")
    assert refused.returncode == 2 and "an ingest was interrupted" in refused.stderr and "ghost.txt" in refused.stderr

    # The repair is the ingest's own (the same in the flow and the library, which runs faster here).
    ingest(home, "s", (corpus,))
    assert (
        "ghost.txt" not in set(load_chunks(paths)["doc_id"]) and not (paths.root / ".chunks.parquet.tmp1234").exists()
    )
    assert (paths.root / ".embeddings.parquet.live").exists(), "a live writer's file is left to it"
    (paths.root / ".embeddings.parquet.live").unlink()
    index(home, "s")
    assert search_hits(home, ["s"], "hive inspected")


@pytest.mark.flows
def test_links_out_of_the_root_and_unsafe_names_are_refused(home, tmp_path):
    corpus = small_corpus(tmp_path / "corpus", 2)
    outside = tmp_path / "secret.txt"
    outside.write_text("the password is hunter2", encoding="utf-8")
    (corpus / "passwd.txt").symlink_to(outside)
    (corpus / "evil\u202etxt.md").write_text("A name that reads backwards.", encoding="utf-8")
    (corpus / "line\nbreak.txt").write_text("A name with a newline.", encoding="utf-8")

    result = runner.invoke(app, ["ingest", "-c", "s", str(corpus), "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    reasons = {Path(r["path"]).name: r["reason"] for r in report["rejected"]}
    assert reasons == {
        "passwd.txt": "outside_root",
        "evil\u202etxt.md": "unsafe_name",
        "line\nbreak.txt": "unsafe_name",
    }
    assert report["counts"]["ingested"] == 2
    assert runner.invoke(app, ["index", "-c", "s"]).exit_code == 0
    found = runner.invoke(app, ["search", "-c", "s", "--mode", "fulltext", "--json", "password hunter2"])
    assert all("hunter2" not in hit["snippet"] for hit in json.loads(found.stdout)["results"])


@pytest.mark.flows
@pytest.mark.parametrize(
    "name, text", [("deep.json", "[" * 100_000 + "]" * 100_000), ("deep.yaml", "- " * 3_000 + "x")]
)
def test_a_configuration_file_nested_too_deeply_is_one_clear_error(home, tmp_path, name, text):
    (tmp_path / name).write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["eval", "retrieval", "-c", "s", "--configs", str(tmp_path / name)])
    assert result.exit_code == 2 and f"{name} is nested too deeply to be a configuration file" in result.output, (
        result.output
    )


@pytest.mark.flows
def test_a_collection_name_with_a_newline_is_refused(home, tmp_path):
    result = runner.invoke(app, ["ingest", "-c", "name\n", str(small_corpus(tmp_path / "corpus", 1))])
    assert result.exit_code == 2 and "collection name" in result.output


@pytest.mark.flows
@pytest.mark.parametrize("grades", [[1099511627776], [1.9], ["2"], [True]])
def test_relevance_grades_are_validated_strictly_with_file_and_line(home, tmp_path, grades):
    from ragassay.golden.store import load_golden
    from ragassay.store.workspace import collection_paths

    assert runner.invoke(app, ["ingest", "-c", "s", str(small_corpus(tmp_path / "corpus", 1))]).exit_code == 0
    rows = [
        {"question": "What was inspected?", "expected_document_ids": ["note-000.txt"], "relevance": grades},
        {"question": "Which day was hive 0 inspected?", "expected_document_ids": ["note-000.txt"]},
    ]
    file = tmp_path / "golden.jsonl"
    deep = '{"question": "deep", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    file.write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[1]) + "\n" + deep + "\n", encoding="utf-8")
    result = runner.invoke(app, ["golden", "add", "-c", "s", "--file", str(file), "--json"])
    assert result.exit_code == 1, result.output
    problems = json.loads(result.stdout)["problems"]
    assert [(p["source"], p["reason"]) for p in problems] == [
        (f"{file}:1", "malformed_row"),
        (f"{file}:3", "malformed_row"),
    ]
    assert "relevance" in problems[0]["detail"] and "nested too deeply" in problems[1]["detail"]
    assert load_golden(collection_paths(home, "s"))["question"].to_list() == ["Which day was hive 0 inspected?"], (
        "the good row is kept"
    )


def test_a_workspace_path_that_is_a_file_is_exit_2_naming_it(tmp_path):
    not_a_folder = tmp_path / "workspace"
    not_a_folder.write_text("a file, not a folder", encoding="utf-8")
    refused = ragassay("runs", "list", env={**os.environ, "RAGASSAY_HOME": str(not_a_folder)})
    assert refused.returncode == 2 and str(not_a_folder) in refused.stderr, refused.stderr
    assert "a file is where a folder is to be made" in refused.stderr and "Traceback" not in refused.stderr


def test_an_unexpected_error_is_exit_code_3_with_one_line_and_a_traceback_under_debug(tmp_path):
    # MLflow's store replaced by bytes that are no SQLite database: nothing in ragassay expects it.
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "mlflow.db").write_bytes(b"not a database " * 100)
    env = {**os.environ, "RAGASSAY_HOME": str(workspace)}
    crashed = ragassay("runs", "list", env=env)
    assert crashed.returncode == 3, crashed.stderr
    assert "unexpected error" in crashed.stderr and "Traceback" not in crashed.stderr
    debugged = ragassay("runs", "list", "--debug", env=env)
    assert debugged.returncode == 3 and "Traceback (most recent call last)" in debugged.stderr


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
    """Alive and not a zombie waiting to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def port_open(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_command_leaves_no_prefect_server_behind(home, tmp_path, stop):
    # Its own Prefect home, so the server is this command's alone, and stops as soon as no command
    # holds it (idle 0, the suite's setting).
    env = {name: value for name, value in os.environ.items() if name != "PREFECT_API_URL"}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "RAGASSAY_PREFECT_SERVER_IDLE_SECONDS": "0"}
    command = subprocess.Popen(
        [RAGASSAY, "ingest", "-c", "s", str(small_corpus(tmp_path / "corpus", 30))],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline, server = time.monotonic() + 180, None
    while server is None and time.monotonic() < deadline and command.poll() is None:
        servers = [
            (pid, args)
            for pid, ppid, args in process_table()
            if ppid == command.pid and "ragassay.cli.temporary_server" in args
        ]
        if servers and port_open(int(servers[0][1].split()[-2])):
            server = servers[0]
        time.sleep(0.1)
    assert server is not None and command.poll() is None, "the command runs its flow on a temporary server of its own"
    server_pid, port = server[0], int(server[1].split()[-2])
    command.send_signal(stop)
    command.wait(timeout=60)
    deadline = time.monotonic() + 20
    while (running(server_pid) or port_open(port)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = running(server_pid)
    if left:
        os.kill(server_pid, signal.SIGKILL)
    assert not left and not port_open(port), "the shared server stops once no command holds it"


@pytest.mark.slow
def test_commands_share_one_prefect_server_which_stops_once_idle(tmp_path):
    """Two commands started at once on a new Prefect database start one server; the next command
    finds it (no start of its own); once no command has held it for the idle seconds, it stops and
    says so (`server.json` removed)."""
    prefect_home = tmp_path / "prefect"
    env = {name: value for name, value in os.environ.items() if name != "PREFECT_API_URL"}
    env |= {
        "PREFECT_HOME": str(prefect_home),
        "RAGASSAY_HOME": str(tmp_path / "workspace"),
        "RAGASSAY_PREFECT_SERVER_IDLE_SECONDS": "8",
    }
    corpus = small_corpus(tmp_path / "corpus", 2)
    both = [
        subprocess.Popen([RAGASSAY, "ingest", "-c", f"s{n}", str(corpus)], env=env, cwd=REPO, stderr=subprocess.PIPE)
        for n in range(2)
    ]
    assert [command.wait(timeout=300) for command in both] == [0, 0]
    state = prefect_home / "ragassay-server" / "server.json"
    server = json.loads(state.read_text(encoding="utf-8"))

    def servers() -> list[int]:
        found = []
        for pid, _, args in process_table():
            if "ragassay.cli.temporary_server" not in args:
                continue
            try:
                environment = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                continue
            if f"PREFECT_HOME={prefect_home}".encode() in environment:
                found.append(pid)
        return found

    assert servers() == [server["pid"]], "the two commands started one server"
    started = time.monotonic()
    assert subprocess.run([RAGASSAY, "ingest", "-c", "s0", str(corpus)], env=env, cwd=REPO).returncode == 0
    assert json.loads(state.read_text(encoding="utf-8")) == server, "the next command used the running server"
    assert not list((prefect_home / "ragassay-server" / "leases").iterdir()), "each command gave its lease back"
    # A flow run of a command on the shared server sends no heartbeats (nothing there reads them,
    # and each flow run waited for the heartbeat thread at its end); on a server the user
    # configured it keeps Prefect's default.
    heartbeat_seen_in_a_flow_run = (
        "from prefect import flow\n"
        "from prefect.settings import get_current_settings\n"
        "from ragassay.cli.common import prefect_defaults, run_flow\n"
        "prefect_defaults()\n"
        "print(run_flow(flow(name='heartbeat')(lambda: get_current_settings().flows.heartbeat_frequency)))\n"
    )
    for api_url, expected in ((None, "None"), (f"http://127.0.0.1:{server['port']}/api", "180")):
        seen = subprocess.run(
            [sys.executable, "-c", heartbeat_seen_in_a_flow_run],
            env=env | ({"PREFECT_API_URL": api_url} if api_url else {}),
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert seen.returncode == 0 and seen.stdout.split()[-1] == expected, (api_url, seen.stdout, seen.stderr[-2000:])
    deadline = time.monotonic() + 60
    while (state.exists() or running(server["pid"])) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not state.exists() and not running(server["pid"]) and not port_open(server["port"])
    assert time.monotonic() - started > 8, "it stayed up for the idle seconds after the last command"


@pytest.mark.slow
def test_a_ctrl_c_during_a_pipeline_ends_it_within_seconds_its_batch_killed_and_its_calls_kept(home, tmp_path):
    """Ctrl-C (SIGINT to the terminal's whole process group) while models answer: the command
    exits 130 in seconds (before: minutes, then exit 3), its temporary Prefect server ends with it,
    its MLflow batch ends KILLED (before: RUNNING for ever) and the calls it finished are in the
    completion cache. (SIGTERM to the command alone, 143, takes the same path: RELIABILITY.md.)"""
    from ragassay import tracking
    from tests.conftest import SAMPLE

    pipeline = tmp_path / "pipeline.json"
    pipeline.write_text(
        json.dumps(
            {
                "collection": "sample",
                "ingest": {"paths": [str(SAMPLE / "corpus")]},
                "golden": {"file": str(SAMPLE / "golden.jsonl"), "generate": False},
                "retrieval": {"configurations": [{"label": "fulltext", "search_type": "fulltext"}]},
                "answers": {
                    "max_questions": 5,
                    "pairwise": False,
                    "configurations": [{"label": "fulltext", "search_type": "fulltext", "k": 2}],
                },
                "judge": {"backend": "smollm2"},
            }
        ),
        encoding="utf-8",
    )
    env = {name: value for name, value in os.environ.items() if name != "PREFECT_API_URL"}
    # A server of its own, stopped once the command is gone: "no process left" is about it.
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "RAGASSAY_PREFECT_SERVER_IDLE_SECONDS": "0"}
    command = subprocess.Popen(
        [RAGASSAY, "run", "--config", str(pipeline)],
        env={**env, "RAGASSAY_CACHE": str(tmp_path / "cache")},
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a terminal gives a command
    )
    deadline = time.monotonic() + 180
    while not (tmp_path / "cache" / "completions.sqlite").exists() and time.monotonic() < deadline:
        time.sleep(0.2)  # until the first model call is under way
    time.sleep(3)
    servers = [pid for pid, ppid, args in process_table() if ppid == command.pid and "temporary_server" in args]
    os.killpg(command.pid, signal.SIGINT)
    stopped = time.monotonic()
    _, errors = command.communicate(timeout=60)
    assert command.returncode == 130, errors[-2000:]
    assert time.monotonic() - stopped < 30, "seconds, not minutes (benchmarks measure how many)"
    assert "interrupted (SIGINT)" in errors, errors[-3000:]
    assert "bug in ragassay" not in errors and "Traceback" not in errors, errors[-3000:]
    deadline = time.monotonic() + 10
    while any(running(pid) for pid in servers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert servers and not any(running(pid) for pid in servers), "its temporary server ended with it"
    assert (tmp_path / "cache" / "completions.sqlite").stat().st_size > 0, "the calls it made are kept"
    [batch] = tracking.find_runs(home, role="batch")
    assert batch.info.status == "KILLED"
    assert batch.data.tags[tracking.TAG_INTERRUPTED] == "interrupted by SIGINT"
    assert {"ingest", "index", "retrieval"} <= {run.data.tags[tracking.TAG_KIND] for run in tracking.find_runs(home)}, (
        "what the stages before it logged stays"
    )


def hostile_pages(root: Path, slow_copies: int = 1) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    block = "<div>" * 1000 + "x" + "</div>" * 1000  # under the depth limit, over a second for lexbor
    for copy in range(slow_copies):
        (root / f"slow-{copy}.html").write_text("<html><body>" + block * 400 + "</body></html>", encoding="utf-8")
    (root / "deep.html").write_text(
        "<html><body>" + "<div>" * 400_000 + "x" + "</div>" * 400_000 + "</body></html>", encoding="utf-8"
    )
    (root / "good.txt").write_text("Hive 7 was inspected on day 3.\n", encoding="utf-8")
    return root


@pytest.mark.slow
def test_a_file_past_the_time_bound_is_rejected_alone_and_the_ingest_goes_on(home, tmp_path):
    ingested = ragassay(
        "ingest",
        "-c",
        "s",
        "--json",
        str(hostile_pages(tmp_path / "corpus")),
        env={**os.environ, "RAGASSAY_EXTRACT_TIMEOUT": "0.5"},
    )
    assert ingested.returncode == 1, ingested.stderr
    report = json.loads(ingested.stdout)
    assert {Path(r["path"]).name: r["reason"] for r in report["rejected"]} == {
        "slow-0.html": "too_slow",
        "deep.html": "unreadable",
    }
    assert report["ingested"] == ["good.txt"]


@pytest.mark.slow
def test_a_killed_ingest_leaves_no_extraction_worker_behind(home, tmp_path):
    command = subprocess.Popen(
        [RAGASSAY, "ingest", "-c", "s", str(hostile_pages(tmp_path / "corpus", slow_copies=20))],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline, worker = time.monotonic() + 180, None
    while worker is None and time.monotonic() < deadline and command.poll() is None:
        workers = [
            pid for pid, ppid, args in process_table() if ppid == command.pid and "ragassay.ingest.isolation" in args
        ]
        worker = workers[0] if workers else None
        time.sleep(0.05)
    assert worker is not None and command.poll() is None, "the ingest extracts in a worker process"
    command.kill()
    command.wait(timeout=60)
    deadline = time.monotonic() + 10
    while running(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = running(worker)
    if left:
        os.kill(worker, signal.SIGKILL)
    assert not left, "the extraction worker ends with the ingest, even mid-file"


SECRET = "S3cret-p4ss"


@pytest.mark.slow
@pytest.mark.flows
@pytest.mark.parametrize(
    "url",
    [
        f"http://alice:{SECRET}@127.0.0.1:9/v1",
        f"https://{SECRET}@models.example/v1",
        f"http://127.0.0.1:9/v1?api_key={SECRET}",
        f"http://127.0.0.1:9/v1?x=1&token={SECRET}#part",
    ],
)
def test_credentials_in_a_model_url_are_never_shown(home, tmp_path, url, monkeypatch):
    from ragassay import tracking
    from ragassay.llm import openai_server
    from ragassay.llm.settings import ChatModelConfig, model_id_of
    from ragassay.redaction import redact

    # Retried without waiting: what the error says is checked here (the waits are in tests/llm).
    monkeypatch.setattr(openai_server, "RETRY_DELAYS", (0.0, 0.0))
    assert SECRET not in redact(url) and "***" in redact(url)
    config = ChatModelConfig(backend="openai", url=url, model="m", timeout_seconds=2)
    assert SECRET not in model_id_of(config)
    assert SECRET not in json.dumps(
        tracking.flatten_params({"judge": config.model_dump(), "judge_model_id": model_id_of(config)})
    )

    assert runner.invoke(app, ["ingest", "-c", "s", str(small_corpus(tmp_path / "corpus", 2))]).exit_code == 0
    assert runner.invoke(app, ["index", "-c", "s"]).exit_code == 0
    # The server is unreachable: the error names the endpoint, without its credentials.
    for output in ("--json", None):
        result = runner.invoke(
            app,
            [
                "answer",
                "-c",
                "s",
                "--model-backend",
                "openai",
                "--model-url",
                url,
                "--model-name",
                "m",
                *([output] if output else []),
                "On which day was hive 1 inspected?",
            ],
        )
        assert result.exit_code == 2, result.output
        assert "chat endpoint openai:m@" in result.output and SECRET not in result.output


@pytest.mark.flows
def test_credentials_in_a_model_url_stay_out_of_prefect_flow_run_parameters(home):
    from prefect.client.orchestration import get_client

    url = f"http://alice:{SECRET}@127.0.0.1:9/v1"
    # The judge's key variable is not set, so the flow fails at once (its first task locates the
    # models), after Prefect stored its parameters.
    ingest(home, "unindexed", (small_corpus(home.parent / "corpus", 2),))
    generated = runner.invoke(
        app,
        [
            "golden",
            "generate",
            "-c",
            "unindexed",
            "--count",
            "1",
            "--model-url",
            url,
            "--model-name",
            "m",
            "--judge-url",
            url,
            "--judge-name",
            "m",
            "--judge-api-key-env",
            "RAGASSAY_TEST_KEY_NEVER_SET",
        ],
    )
    assert generated.exit_code == 2 and SECRET not in generated.output, generated.output
    with get_client(sync_client=True) as client:
        stored = json.dumps([run.parameters for run in client.read_flow_runs()])
    assert '"url": "http://***@127.0.0.1:9/v1"' in stored, "the flow run records which server it used"
    assert SECRET not in stored, "but not the password in its URL"


@pytest.mark.flows
def test_an_api_key_comes_from_the_environment_variable_it_names(home, monkeypatch):
    from ragassay.llm.catalog import ModelError
    from ragassay.llm.registry import load_chat_model
    from ragassay.llm.settings import ChatModelConfig

    with pytest.raises(ModelError, match="RAGASSAY_TEST_KEY"):
        load_chat_model(
            ChatModelConfig(backend="openai", url="http://127.0.0.1:9", model="m", api_key_env="RAGASSAY_TEST_KEY")
        )
    monkeypatch.setenv("RAGASSAY_TEST_KEY", SECRET)
    model = load_chat_model(
        ChatModelConfig(backend="openai", url="http://127.0.0.1:9", model="m", api_key_env="RAGASSAY_TEST_KEY")
    )
    assert SECRET not in model.model_id
    # The judge options take it too.
    monkeypatch.delenv("RAGASSAY_TEST_KEY")
    refused = runner.invoke(
        app,
        [
            "judge",
            "calibrate",
            "--labels",
            str(REPO / "data" / "judge" / "labelled_statements.jsonl"),
            "--judge-url",
            "http://127.0.0.1:9",
            "--judge-name",
            "m",
            "--judge-api-key-env",
            "RAGASSAY_TEST_KEY",
        ],
    )
    assert refused.exit_code == 2 and "api_key_env names 'RAGASSAY_TEST_KEY', which is not set" in refused.output, (
        refused.output
    )


@pytest.mark.slow
def test_commands_write_nothing_outside_the_workspace(home, tmp_path):
    user_home, temporary = tmp_path / "user-home", tmp_path / "tmp"
    user_home.mkdir()
    temporary.mkdir()
    # Prefect's own state (its temporary server's database) goes where PREFECT_HOME says.
    env = {**os.environ, "HOME": str(user_home), "TMPDIR": str(temporary), "PREFECT_HOME": str(tmp_path / "prefect")}
    for command in (
        ["ingest", "-c", "s", str(small_corpus(tmp_path / "corpus", 3))],
        ["index", "-c", "s"],
        ["search", "-c", "s", "hive inspected"],
        ["answer", "-c", "s", "On which day was hive 1 inspected?"],
    ):
        result = ragassay(*command, env=env)
        assert result.returncode == 0, result.stderr
    written = sorted(str(path.relative_to(tmp_path)) for folder in (user_home, temporary) for path in folder.rglob("*"))
    assert written == [], "no telemetry ids, caches or session files outside the workspace"


def test_a_missing_collection_is_one_line_without_a_traceback(home):
    result = ragassay("index", "-c", "nosuch")
    assert result.returncode == 2
    assert "error: no collection 'nosuch'" in result.stderr and "Traceback" not in result.stderr
    debugged = ragassay("index", "-c", "nosuch", "--debug")
    assert debugged.returncode == 2 and "Traceback" in debugged.stderr, "--debug shows the traceback"


@pytest.mark.slow
@pytest.mark.flows
def test_collections_stay_isolated_at_every_entry_point(home, tmp_path):
    """A token planted in collection B never comes back from anything scoped to collection A."""
    from ragassay.answer.answering import answer_question
    from ragassay.answer.settings import AnswerSettings
    from ragassay.resources import Resources

    token = "zqxjvorptoken"
    corpus_a = small_corpus(tmp_path / "a", 3, "a")
    corpus_b = tmp_path / "b"
    corpus_b.mkdir()
    (corpus_b / "planted.txt").write_text(
        f"The hive password is {token}. Hive {token} was inspected on day 1.", encoding="utf-8"
    )
    for name, corpus in (("a", corpus_a), ("b", corpus_b)):
        assert runner.invoke(app, ["ingest", "-c", name, str(corpus)]).exit_code == 0
        assert runner.invoke(app, ["index", "-c", name]).exit_code == 0

    for mode in ("fulltext", "semantic", "hybrid"):
        found = json.loads(
            runner.invoke(app, ["search", "-c", "a", "--mode", mode, "--json", f"{token} hive password"]).stdout
        )
        assert found["results"] and all(
            hit["collection"] == "a" and token not in hit["snippet"] for hit in found["results"]
        )
    answer = answer_question(
        Resources(), home, ["a"], f"What is the hive password {token}?", AnswerSettings(min_relevance=-1.0)
    )
    # (The answer may repeat the question's words; what matters is where its sources come from.)
    assert answer.sources and all(source.collection == "a" and token not in source.text for source in answer.sources)

    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        json.dumps({"question": f"hive password {token}", "expected_document_ids": ["a-000.txt"]}) + "\n",
        encoding="utf-8",
    )
    assert runner.invoke(app, ["golden", "add", "-c", "a", "--file", str(golden)]).exit_code == 0
    evaluated = runner.invoke(app, ["eval", "retrieval", "-c", "a", "--mode", "fulltext", "--json"])
    assert evaluated.exit_code == 0, evaluated.output
    from ragassay import tracking

    run = tracking.download_table(home, json.loads(evaluated.stdout)["run_ids"]["fulltext"], "run")
    assert set(run["collection"]) == {"a"} and "planted.txt" not in set(run["doc_id"])


def test_a_new_prefect_home_starts_from_the_database_set_up_migrated_and_nothing_else_is_replaced(tmp_path):
    """The shared server's database on a new Prefect home is a copy of the empty one set-up
    migrated (the server then starts without Prefect's migrations: the commands above run on it);
    an existing database, and one the user configured elsewhere, are never touched."""
    import sqlite3

    from ragassay.cli.temporary_server import database_template_path, seed_new_database

    template = database_template_path()
    assert template.is_file(), "scripts/setup.sh migrates the template once per environment"
    with sqlite3.connect(template) as database:
        assert database.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)
        assert database.execute("SELECT count(*) FROM flow_run").fetchone() == (0,)
    home = tmp_path / "prefect"
    home.mkdir()
    default_url = f"sqlite+aiosqlite:///{home / 'prefect.db'}"
    assert not seed_new_database(home, f"sqlite+aiosqlite:///{tmp_path / 'elsewhere.db'}")
    assert not (home / "prefect.db").exists() and not (tmp_path / "elsewhere.db").exists()
    assert seed_new_database(home, default_url)
    assert (home / "prefect.db").read_bytes() == template.read_bytes()
    (home / "prefect.db").write_bytes(b"a database with runs in it")
    assert not seed_new_database(home, default_url)
    assert (home / "prefect.db").read_bytes() == b"a database with runs in it"
