"""The Prefect server commands share: started by the first command that runs a flow, found by the
next, stopped once no command has used it for RAGASSAY_PREFECT_SERVER_IDLE_SECONDS.

Without PREFECT_API_URL, Prefect would start a temporary server of its own (uvicorn, 5-10 s) for
every command, as a plain subprocess that outlives a command killed with SIGKILL (or SIGTERM, which
skips atexit). This one is the same Prefect app, shared through a folder in Prefect's home (where
its one database lives, so one server a database):

- `server.json`: the running server's port and pid;
- `leases/<pid>`: one file a command using it; the command removes it at exit, and a command that
  died (however it died) is seen gone by its pid;
- `start.lock`: held while a command finds or starts the server and takes its lease, and by the
  server while it decides to stop, so a command never takes a lease on a server that is stopping,
  and two commands starting at once start one server.

The server watches the leases: once none is held it waits the idle seconds for a new one, then
removes `server.json` and shuts down (RELIABILITY.md measures both).

    python -m ragassay.cli.temporary_server PORT STARTER_PID    (started by start_for_this_process)
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from ragassay.errors import RagassayError
from ragassay.orphans import process_alive

SHUTDOWN_GRACE_SECONDS = 10.0
START_ATTEMPTS = 3  # a port chosen free can be taken before the server binds it; then try another
LEASE_POLL_SECONDS = 0.25


class TemporaryServerError(RagassayError):
    """The shared Prefect server did not come up."""


# The API URL of the shared server this process uses; None when Prefect has one of the user's.
_shared_api_url: str | None = None


def flow_run_settings():
    """A context for this process's flow runs: on the shared server, no flow-run heartbeats.

    A heartbeat (Prefect's default: every 180 s) exists so that an automation on the server can
    mark a run Crashed once its heartbeats stop; the shared server is ragassay's own temporary one,
    with no UI and no automation to read them, and every flow and subflow run waits at its end for
    the heartbeat thread's one-second sleep (up to a second a run: 0.24 s in a profiled retrieval
    evaluation; a pipeline has six). A server the user configured (PREFECT_API_URL), and a
    deployment's worker, keep Prefect's default."""
    from contextlib import nullcontext

    if _shared_api_url is None:
        return nullcontext()
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    return temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})


def shared_folder(prefect_home: Path) -> Path:
    return prefect_home / "ragassay-server"


def database_template_path() -> Path:
    """Where this environment keeps an empty Prefect database of the installed Prefect version."""
    from importlib.metadata import version

    return Path(sys.prefix) / "share" / "ragassay" / f"prefect-{version('prefect')}.db"


def write_database_template() -> Path:
    """Migrate an empty Prefect database with the installed Prefect (its own `prefect server
    database upgrade`) and keep it as the template, once. Run by the set-up command."""
    import shutil
    import sqlite3
    import tempfile

    target = database_template_path()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as folder:
        env = {name: value for name, value in os.environ.items() if not name.startswith("PREFECT_")}
        upgraded = subprocess.run(
            [str(Path(sys.executable).parent / "prefect"), "server", "database", "upgrade", "-y"],
            env=env | {"PREFECT_HOME": folder, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"},
            capture_output=True,
            text=True,
        )
        if upgraded.returncode != 0:
            said = (upgraded.stderr or upgraded.stdout).strip()[-2000:]
            raise TemporaryServerError(f"`prefect server database upgrade` exited {upgraded.returncode}: {said}")
        # One file, whatever the write-ahead log still held.
        with sqlite3.connect(Path(folder) / "prefect.db") as database:
            database.execute("VACUUM INTO ?", (str(Path(folder) / "template.db"),))
        shutil.move(Path(folder) / "template.db", target)
    return target


def seed_new_database(prefect_home: Path, connection_url: str) -> bool:
    """Start Prefect's default database, when it does not exist yet, as a copy of the template:
    a server on a new Prefect home ran all of Prefect's migrations first (10.8 s to answer against
    4.4 s on the reference machine). Only the default SQLite file (`<PREFECT_HOME>/prefect.db`);
    a database the user configured is left to Prefect. False when nothing was copied. The caller
    holds the start lock."""
    from ragassay.store.tables import copy_if_absent

    database = prefect_home / "prefect.db"
    if connection_url != f"sqlite+aiosqlite:///{database}":
        return False
    return copy_if_absent(database_template_path(), database)


def start_for_this_process() -> str | None:
    """Point Prefect at the shared server, starting it when none is running, and hold a lease on it
    until this process ends; returns its API URL, or None when Prefect already has an API URL
    (environment or profile) or the user switched temporary servers off (then Prefect's own error
    says what to set)."""
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    if settings.api.url:
        _check_reachable(settings.api.url)
        return None
    if not settings.server.ephemeral.enabled:
        return None
    server_env = {
        **os.environ,
        **settings.to_environment_variables(exclude_unset=True),
        # What Prefect's own temporary server sets: no UI, and the server knows it is temporary.
        "PREFECT_UI_ENABLED": "0",
        "PREFECT__SERVER_EPHEMERAL": "1",
        "PREFECT__SERVER_FINAL": "1",
    }
    timeout = settings.server.ephemeral.startup_timeout_seconds
    folder = shared_folder(settings.home)
    (folder / "leases").mkdir(parents=True, exist_ok=True)
    from ragassay.store.locks import collection_lock

    # Commands started at once on a new database each started a server that created or migrated
    # its tables, and together they raced ("no such table"); under the lock one starts it and the
    # others find it.
    with collection_lock(
        folder / "start.lock", timeout=timeout * START_ATTEMPTS * 4, name="the start of the shared Prefect server"
    ):
        _take_lease(folder)
        seed_new_database(Path(settings.home), settings.server.database.connection_url.get_secret_value())
        api_url = _running(folder) or _start(folder, server_env, timeout)
    from prefect.context import refresh_global_settings_context

    global _shared_api_url
    _shared_api_url = api_url
    os.environ["PREFECT_API_URL"] = api_url
    # Prefect infers a UI address from the API's; this server serves no UI, so no "View at" link
    # may point at it (as with Prefect's own temporary server).
    os.environ["PREFECT_UI_URL"] = ""
    refresh_global_settings_context()
    return api_url


def _take_lease(folder: Path) -> None:
    lease = folder / "leases" / str(os.getpid())
    lease.write_text(str(os.getpid()), encoding="utf-8")
    atexit.register(lease.unlink, missing_ok=True)


def _running(folder: Path) -> str | None:
    """The API URL of the server `server.json` names, when that server is alive and answers."""
    try:
        state = json.loads((folder / "server.json").read_text(encoding="utf-8"))
        port, pid = int(state["port"]), int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not process_alive(pid) or not _healthy(port, timeout=2.0):
        return None
    return f"http://127.0.0.1:{port}/api"


def _start(folder: Path, server_env: dict[str, str], timeout: float) -> str:
    # The server outlives the command that started it, so it must not hold that command's output
    # open (a caller reading the command's output to its end would wait for the server): its own
    # output goes to server.log, quoted when it fails to start.
    log = folder / "server.log"
    for _attempt in range(START_ATTEMPTS):
        port = _free_port()
        with log.open("wb") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "ragassay.cli.temporary_server", str(port), str(os.getpid())],
                env=server_env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                # Its own session: a terminal's Ctrl-C (SIGINT to the whole foreground group) must
                # not stop the server other commands may be using; it stops when no command holds a lease.
                start_new_session=True,
            )
        if _wait_until_healthy(process, port, timeout):
            (folder / "server.json").write_text(json.dumps({"port": port, "pid": process.pid}), encoding="utf-8")
            return f"http://127.0.0.1:{port}/api"
        if process.poll() is None:
            _stop(process)
            raise TemporaryServerError(
                f"the Prefect server did not answer within {timeout} s; set PREFECT_API_URL to a running "
                "Prefect server, or raise PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
            )
    said = log.read_text(encoding="utf-8", errors="replace").strip()[-2000:]
    raise TemporaryServerError(
        f"the Prefect server exited (code {process.returncode}) {START_ATTEMPTS} times before answering; "
        f"set PREFECT_API_URL to a running Prefect server. Its last output ({log}):\n{said}"
    )


def _check_reachable(api_url: str, timeout: float = 5.0) -> None:
    """TemporaryServerError naming PREFECT_API_URL when the Prefect API there does not answer:
    said before any work, where Prefect's client would retry and then fail with a traceback."""
    from ragassay.redaction import redact

    try:
        with urllib.request.urlopen(f"{api_url.rstrip('/')}/health", timeout=timeout):
            return
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise TemporaryServerError(
            f"the Prefect API at PREFECT_API_URL={redact(api_url)} does not answer ({reason}); start that server, "
            "or unset PREFECT_API_URL to run with the server ragassay's commands share"
        ) from None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _healthy(port: int, timeout: float) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _wait_until_healthy(process: subprocess.Popen, port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if _healthy(port, timeout=2.0):
            return True
        time.sleep(0.1)
    return False


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _holders(folder: Path) -> list[int]:
    """The pids of the commands holding a lease; the leases of commands that died are removed."""
    alive = []
    for lease in (folder / "leases").glob("*"):
        try:
            pid = int(lease.name)
        except ValueError:
            continue
        if process_alive(pid):
            alive.append(pid)
        else:
            lease.unlink(missing_ok=True)
    return alive


def _stop_when_idle(folder: Path, idle_seconds: float) -> None:
    """From a daemon thread: once no lease has been held for idle_seconds, stop taking commands
    (under the start lock, so none takes a lease meanwhile: `server.json` removed) and shut down."""
    from ragassay.store.locks import collection_lock

    def watch() -> None:
        idle_since = None
        while True:
            time.sleep(LEASE_POLL_SECONDS)
            if _holders(folder):
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since < idle_seconds:
                continue
            with collection_lock(folder / "start.lock", name="the shared Prefect server's stop"):
                if _holders(folder):
                    idle_since = None
                    continue
                state = folder / "server.json"
                try:
                    if json.loads(state.read_text(encoding="utf-8")).get("pid") == os.getpid():
                        state.unlink()
                except (OSError, ValueError):
                    pass
            _shut_down()

    threading.Thread(target=watch, daemon=True, name="lease-watch").start()


def _shut_down() -> None:
    """SIGTERM lets uvicorn close gracefully; if that takes too long, exit outright."""
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(SHUTDOWN_GRACE_SECONDS)
    os._exit(1)


def _serve(port: int) -> None:
    import uvicorn
    from prefect.settings import get_current_settings

    from ragassay.environment import environment

    _stop_when_idle(shared_folder(get_current_settings().home), environment().prefect_server_idle_seconds)
    uvicorn.run(
        "prefect.server.api.server:create_app",
        factory=True,
        host="127.0.0.1",
        port=port,
        log_level="error",
        lifespan="on",
    )


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
