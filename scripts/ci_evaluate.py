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
    """A server could not be asked, or answered with an error."""


# A busy server's answers that a later try may not get (Prefect's API answers 503 while its
# database is locked): tried again after 1, 2, 4 and 8 seconds.
TRANSIENT = (429, 502, 503, 504)
TRIES = 5


def call(method: str, url: str, body: object | None = None, timeout: float = 30) -> object:
    """One JSON request, tried again on a transient answer or no connection; Unreachable naming
    the URL and what the server said when it still fails."""
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(TRIES):
        request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            said = f"{method} {url}: HTTP {error.code}: {error.read()[:500].decode(errors='replace')}"
            if error.code not in TRANSIENT or attempt == TRIES - 1:
                raise Unreachable(said) from None
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            said = f"{method} {url}: {error}"
            if attempt == TRIES - 1:
                raise Unreachable(said) from None
        print(f"{said}; trying again", file=sys.stderr)
        time.sleep(2**attempt)
    raise AssertionError("unreachable: the last try returns or raises")


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


def start_run(api: str, deployment: str, overrides: dict[str, object]) -> dict:
    """Create a flow run of the deployment (`FLOW/DEPLOYMENT`) with the overrides."""
    found = call("GET", f"{api}/deployments/name/{urllib.parse.quote(deployment)}")
    parameters = {"overrides": overrides} if overrides else {}
    return call("POST", f"{api}/deployments/{found['id']}/create_flow_run", {"parameters": parameters})


def wait_for(api: str, run_id: str, timeout: float, poll: float) -> dict:
    """The flow run once it has ended, or as it stands at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        run = call("GET", f"{api}/flow_runs/{run_id}")
        state = run["state"]["type"]
        if state in ENDED or time.monotonic() >= deadline:
            return run
        print(f"flow run {run['name']} ({run_id}): {state}", file=sys.stderr)
        time.sleep(poll)


def run_tables(api: str, run_id: str) -> dict[str, list]:
    """The run's table artifacts by the end of their key (`assertions`, `metrics`)."""
    artifacts = call("POST", f"{api}/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [run_id]}}})
    tables = {}
    for artifact in artifacts:
        key = artifact.get("key") or ""
        for kind in ("assertions", "metrics"):
            if artifact.get("type") == "table" and key.endswith(f"-{kind}"):
                data = artifact["data"]
                tables[kind] = json.loads(data) if isinstance(data, str) else data
    return tables


def mlflow_batch(mlflow: str, run_id: str) -> dict | None:
    """The MLflow batch the flow run logged: its parent run's id, batch id, verdict and metrics."""
    experiments = call("POST", f"{mlflow}/api/2.0/mlflow/experiments/search", {"max_results": 1000})
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
    try:
        started = start_run(api, arguments.deployment, parsed_overrides(arguments.settings))
        print(f"created flow run {started['name']} ({started['id']})", file=sys.stderr)
        run = wait_for(api, started["id"], arguments.timeout, arguments.poll)
        tables = run_tables(api, run["id"])
        batch = mlflow_batch(arguments.mlflow.rstrip("/"), run["id"]) if arguments.mlflow else None
    except Unreachable as error:
        print(f"error: {error}", file=sys.stderr)
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
