"""A temporary Prefect server for one CLI process, which dies with it.

Without PREFECT_API_URL, Prefect starts its own temporary server (uvicorn) as a plain subprocess
and stops it at exit; a CLI killed with SIGKILL (or SIGTERM, which skips atexit) leaves that
server running with its port open (RELIABILITY.md counts how often). The server started
here is the same Prefect app, run by a child that watches its parent and shuts down within a
second of the parent's death, however it died (RELIABILITY.md measures it).

    python -m ragassay.cli.temporary_server PORT PARENT_PID    (started by start_for_this_process)
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from ragassay.errors import RagassayError
from ragassay.orphans import end_when_orphaned

SHUTDOWN_GRACE_SECONDS = 10.0
START_ATTEMPTS = 3  # a port chosen free can be taken before the server binds it; then try another


class TemporaryServerError(RagassayError):
    """The temporary Prefect server did not come up."""


def start_for_this_process() -> str | None:
    """Start a temporary Prefect server tied to this process and point Prefect at it; returns its
    API URL, or None when Prefect already has an API URL (environment or profile) or the user
    switched temporary servers off (then Prefect's own error says what to set)."""
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
    # Commands started at once each start a server on Prefect's one database; each server creates
    # or migrates its tables as it starts, and together they raced ("no such table", a server
    # exiting, another attempt). They start one at a time; once a server answers, the next starts.
    from ragassay.store.locks import collection_lock

    with collection_lock(
        settings.home / "ragassay-server-start.lock",
        timeout=timeout * START_ATTEMPTS * 4,
        name="the start of another command's temporary Prefect server",
    ):
        return _start(server_env, timeout)


def _start(server_env: dict[str, str], timeout: float) -> str:
    from prefect.context import refresh_global_settings_context

    for _attempt in range(START_ATTEMPTS):
        port = _free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "ragassay.cli.temporary_server", str(port), str(os.getpid())],
            env=server_env,
            stdin=subprocess.DEVNULL,
            # Its own session: a terminal's Ctrl-C (SIGINT to the whole foreground group) must not
            # stop the server while the command still reports to it. It ends with the command.
            start_new_session=True,
        )
        if _wait_until_healthy(process, port, timeout):
            atexit.register(_stop, process)
            api_url = f"http://127.0.0.1:{port}/api"
            os.environ["PREFECT_API_URL"] = api_url
            # Prefect infers a UI address from the API's; this server serves no UI and stops with
            # the command, so no "View at" link may point at it (as with Prefect's own).
            os.environ["PREFECT_UI_URL"] = ""
            refresh_global_settings_context()
            return api_url
        if process.poll() is None:
            _stop(process)
            raise TemporaryServerError(
                f"the temporary Prefect server did not answer within {timeout} s; set PREFECT_API_URL to a running "
                "Prefect server, or raise PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
            )
    raise TemporaryServerError(
        f"the temporary Prefect server exited (code {process.returncode}) {START_ATTEMPTS} times before answering; "
        "its output is above; set PREFECT_API_URL to a running Prefect server"
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
            "or unset PREFECT_API_URL to run with a temporary server of this command's own"
        ) from None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_healthy(process: subprocess.Popen, port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
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


def _shut_down() -> None:
    """SIGTERM lets uvicorn close gracefully; if that takes too long, exit outright."""
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(SHUTDOWN_GRACE_SECONDS)
    os._exit(1)


def _serve(port: int, parent_pid: int) -> None:
    import uvicorn

    end_when_orphaned(parent_pid, _shut_down)
    uvicorn.run(
        "prefect.server.api.server:create_app",
        factory=True,
        host="127.0.0.1",
        port=port,
        log_level="error",
        lifespan="on",
    )


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
