#!/usr/bin/env python3
"""Start an evaluation from CI over plain HTTP, wait for it, print its verdict and metrics as JSON,
and exit 1 when an assertion failed.

Needs only Python 3's standard library on the CI side: no Prefect, MLflow or ragassay install.
It calls Prefect's REST API (and, with --mlflow, MLflow's):

1. `GET  /deployments/name/FLOW/DEPLOYMENT`          the deployment's id
2. `POST /deployments/ID/create_flow_run`            a flow run with {"overrides": {...}}
3. `GET  /flow_runs/RUN`                             polled until the run ends
4. `POST /artifacts/filter`                          the run's `*-assertions` and `*-metrics` tables
5. `POST /api/2.0/mlflow/runs/search` (--mlflow)     the batch's parent run: its verdict tag

    python3 scripts/ci_evaluate.py --prefect-api http://prefect-host:4200/api \\
        --deployment pipeline/sample-pipeline-nightly --set answers.max_questions=2 \\
        --mlflow http://mlflow-host:5000

Exit codes: 0 the run completed and every assertion held (or it had none); 1 it ended Failed on
its assertions; 2 it did not finish its work (crashed, cancelled, failed before its verdict, or
still running at --timeout), or a server could not be asked. docs/how-to/ci-and-gate.md, "Evaluations from CI".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

EXIT_PASSED, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
ENDED = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")


class Unreachable(Exception):
    """A server could not be asked, answered with an error, or answered something that is not the
    JSON asked for."""


# A busy server's answers that a later try may not get (Prefect's API answers 503 while its
# database is locked, a proxy 502 while the server restarts): tried again after 1, 2, 4 and 8
# seconds, within the whole wait's deadline.
TRANSIENT = (429, 500, 502, 503, 504)
TRIES = 5
# The longest one request may take (less when the whole wait's deadline is nearer).
REQUEST_TIMEOUT = 30.0
# What a message shows of a server's answer or a value: enough to recognise it.
SHOWN = 300


class Deadline:
    """The end of the whole wait (--timeout): no request, retry or poll goes past it."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


def call(method: str, url: str, body: object | None = None, deadline: Deadline | None = None) -> object:
    """One JSON request, tried again on a transient answer or no connection while the deadline
    allows; Unreachable naming the URL and what the server said when it still fails, or when its
    answer is not JSON (a login page a proxy put in front of the API)."""
    deadline = deadline or Deadline(REQUEST_TIMEOUT * TRIES)
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(TRIES):
        timeout = min(REQUEST_TIMEOUT, deadline.left())
        if timeout <= 0:
            raise Unreachable(f"{method} {url}: no answer before the --timeout ran out")
        request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                content = response.read()
        except urllib.error.HTTPError as error:
            said = f"{method} {url}: HTTP {error.code}: {error.read()[:SHOWN].decode(errors='replace')}"
            if error.code not in TRANSIENT or attempt == TRIES - 1:
                raise Unreachable(said) from None
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            said = f"{method} {url}: {error}"
            if attempt == TRIES - 1:
                raise Unreachable(said) from None
        else:
            try:
                return json.loads(content or b"null")
            except ValueError:
                shown = content[:SHOWN].decode(errors="replace")
                raise Unreachable(f"{method} {url}: the answer is not JSON (it starts {shown!r})") from None
        wait = min(2**attempt, max(0.0, deadline.left()))
        print(f"{said}; trying again in {wait:g} s", file=sys.stderr)
        time.sleep(wait)
    raise AssertionError("unreachable: the last try returns or raises")


def field(payload: object, key: str, what: str):
    """payload[key], or Unreachable naming what answered without it (a proxy's or another API's JSON)."""
    if not isinstance(payload, dict) or key not in payload:
        shown = json.dumps(payload)[:SHOWN]
        raise Unreachable(f"{what}: the answer has no {key!r} ({shown})")
    return payload[key]


def parsed_overrides(settings: list[str]) -> dict[str, object]:
    """`KEY=VALUE` pairs as overrides: VALUE read as JSON (2, true, ["a"]), else as text."""
    overrides = {}
    for setting in settings:
        key, equals, value = setting.partition("=")
        if not equals or not key:
            raise SystemExit(f"--set {setting!r}: expected KEY=VALUE, such as answers.max_questions=2")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    return overrides


def start_run(api: str, deployment: str, overrides: dict[str, object], deadline: Deadline) -> dict:
    """Create a flow run of the deployment (`FLOW/DEPLOYMENT`) with the overrides."""
    url = f"{api}/deployments/name/{urllib.parse.quote(deployment)}"
    found = field(call("GET", url, deadline=deadline), "id", f"GET {url}")
    parameters = {"overrides": overrides} if overrides else {}
    url = f"{api}/deployments/{found}/create_flow_run"
    started = call("POST", url, {"parameters": parameters}, deadline)
    field(started, "id", f"POST {url}")
    return started


def wait_for(api: str, run_id: str, poll: float, deadline: Deadline) -> dict:
    """The flow run once it has ended, or as it stands when the deadline comes. A look that fails
    is tried again as every call is (a 500 while the run goes on abandons nothing)."""
    url = f"{api}/flow_runs/{run_id}"
    while True:
        run = call("GET", url, deadline=deadline)
        state = field(field(run, "state", f"GET {url}"), "type", f"GET {url}")
        if state in ENDED or deadline.left() <= poll:
            return run
        print(f"flow run {run.get('name')} ({run_id}): {state}", file=sys.stderr)
        time.sleep(poll)


def run_tables(api: str, run_id: str, deadline: Deadline) -> dict[str, list]:
    """The run's table artifacts by the end of their key (`assertions`, `metrics`)."""
    url = f"{api}/artifacts/filter"
    artifacts = call("POST", url, {"artifacts": {"flow_run_id": {"any_": [run_id]}}}, deadline)
    if not isinstance(artifacts, list):
        raise Unreachable(f"POST {url}: the answer is not a list of artifacts ({json.dumps(artifacts)[:SHOWN]})")
    tables = {}
    for artifact in artifacts:
        key = artifact.get("key") or ""
        for kind in ("assertions", "metrics"):
            if artifact.get("type") == "table" and key.endswith(f"-{kind}"):
                data = artifact["data"]
                tables[kind] = json.loads(data) if isinstance(data, str) else data
    return tables


def mlflow_batch(mlflow: str, run_id: str, deadline: Deadline) -> dict | None:
    """The MLflow batch the flow run logged: its parent run's id, batch id, verdict and metrics."""
    experiments = call("POST", f"{mlflow}/api/2.0/mlflow/experiments/search", {"max_results": 1000}, deadline)
    ids = [e["experiment_id"] for e in experiments.get("experiments", [])]
    if not ids:
        return None
    found = call(
        "POST",
        f"{mlflow}/api/2.0/mlflow/runs/search",
        {
            "experiment_ids": ids,
            "filter": f"tags.`ragassay.prefect.flow_run_id` = '{run_id}' and tags.`ragassay.role` = 'batch'",
        },
        deadline,
    )
    runs = found.get("runs", [])
    if not runs:
        return None
    parent = runs[0]
    tags = {tag["key"]: tag["value"] for tag in parent["data"].get("tags", [])}
    return {
        "run_id": parent["info"]["run_id"],
        "batch_id": tags.get("ragassay.batch_id"),
        "verdict": tags.get("ragassay.verdict"),
        "metrics": {metric["key"]: metric["value"] for metric in parent["data"].get("metrics", [])},
    }


def outcome(run: dict, assertions: list[dict]) -> tuple[str, int]:
    """The run's verdict and the exit code it earns."""
    state = run["state"]["type"]
    failed = [row for row in assertions if row.get("outcome") == "failed"]
    if state == "COMPLETED" and not failed:
        return ("passed" if assertions else "none"), EXIT_PASSED
    if state == "FAILED" and failed:
        return "failed", EXIT_FAILED
    return f"no verdict: the run ended {state}", EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefect-api", required=True, help="Prefect's API, such as http://prefect-host:4200/api")
    parser.add_argument("--deployment", required=True, help="FLOW/DEPLOYMENT, such as pipeline/sample-pipeline-nightly")
    parser.add_argument(
        "--set", dest="settings", action="append", default=[], help="An override KEY=VALUE (repeatable)"
    )
    parser.add_argument("--mlflow", help="MLflow's tracking server, to read the batch's verdict there too")
    parser.add_argument("--timeout", type=float, default=3600, help="Seconds to wait for the run (default 3600)")
    parser.add_argument("--poll", type=float, default=5, help="Seconds between looks at the run (default 5)")
    arguments = parser.parse_args(argv)
    api = arguments.prefect_api.rstrip("/")
    # --timeout bounds the whole wait: starting the run, every look at it, reading its results.
    deadline = Deadline(arguments.timeout)
    try:
        started = start_run(api, arguments.deployment, parsed_overrides(arguments.settings), deadline)
        print(f"created flow run {started.get('name')} ({started['id']})", file=sys.stderr)
        run = wait_for(api, started["id"], arguments.poll, deadline)
        # The results are read however little of the wait is left: a few seconds more at most.
        after = Deadline(max(deadline.left(), REQUEST_TIMEOUT))
        tables = run_tables(api, run["id"], after)
        batch = mlflow_batch(arguments.mlflow.rstrip("/"), run["id"], after) if arguments.mlflow else None
    except Unreachable as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as error:  # exit 1 means a failed assertion and nothing else
        print(f"error: {type(error).__name__}: {str(error)[:SHOWN]}", file=sys.stderr)
        return EXIT_ERROR
    verdict, code = outcome(run, tables.get("assertions", []))
    result = {
        "flow_run_id": run["id"],
        "flow_run_name": run["name"],
        "state": run["state"]["type"],
        "message": run["state"].get("message"),
        "verdict": verdict,
        "assertions": tables.get("assertions", []),
        "metrics": tables.get("metrics", []),
        "mlflow": batch,
    }
    print(json.dumps(result, indent=2))
    if batch is not None and code != EXIT_ERROR and batch["verdict"] != verdict:
        print(f"error: MLflow's batch says {batch['verdict']!r}, Prefect's run {verdict!r}", file=sys.stderr)
        return EXIT_ERROR
    return code


if __name__ == "__main__":
    sys.exit(main())
