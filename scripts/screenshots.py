"""What a user sees in the browser after a pipeline run: starts a Prefect server and runs a small
pipeline of the sample corpus against it (SmolLM2 answering and judging, so it takes minutes, not
an hour), starts MLflow's UI on the run's store, takes headless Chromium screenshots, and stops
both servers.

Screenshots (PNG, in --out): the MLflow batch's parent run (its description: the report), the
Traces view of one question of an answer run (its retrieved passages, verdicts and
assessments), the run's Traces tab, the Prefect flow run's page and its pipeline report artifact.

    .venv/bin/python scripts/screenshots.py --out /tmp/screens
Needs Debian's `chromium` (`apt-get install chromium`). Loopback only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(url: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise SystemExit(f"{url} did not come up in {seconds:.0f} s")


def screenshot(url: str, path: Path, profile: Path, width: int = 1600, height: int = 1100) -> None:
    """One page, after its scripts have had 20 s of (virtual) time to render."""
    subprocess.run(
        [
            shutil.which("chromium") or "chromium",
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "--virtual-time-budget=20000",
            f"--screenshot={path}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    print(f"{path.name}: {url}")


def pipeline_file(folder: Path) -> Path:
    """The sample pipeline, small: SmolLM2 everywhere, four golden and one unanswerable question
    under two answer configurations, no generation."""
    unanswerable = folder / "unanswerable.jsonl"
    unanswerable.write_text((REPO / "data/sample/unanswerable.jsonl").read_text().splitlines(keepends=True)[0])
    config = {
        "collection": "sample",
        "ingest": {"paths": [str(REPO / "data/sample/corpus")]},
        "golden": {"file": str(REPO / "data/sample/golden.jsonl"), "generate": False},
        "retrieval": {"ks": [1, 3, 5, 10]},
        "answers": {
            "unanswerable": str(unanswerable),
            "max_questions": 4,
            "configurations": [
                {"label": "fulltext", "search_type": "fulltext", "k": 3, "max_answer_tokens": 160},
                {"label": "hybrid", "search_type": "hybrid", "k": 3, "max_answer_tokens": 160},
            ],
        },
        "judge": {"backend": "smollm2"},
    }
    for configuration in config["answers"]["configurations"]:
        configuration["model"] = {"backend": "smollm2"}
    path = folder / "pipeline.json"
    path.write_text(json.dumps(config))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("screenshots"))
    arguments = parser.parse_args()
    out = arguments.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="ragassay-screens-"))
    home = folder / "workspace"
    prefect_port, mlflow_port = free_port(), free_port()
    api = f"http://127.0.0.1:{prefect_port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(folder / "prefect"),
        "PREFECT_API_URL": api,
        "PREFECT_UI_URL": f"http://127.0.0.1:{prefect_port}",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "RAGASSAY_HOME": str(home),
    }
    servers = []
    try:
        servers.append(
            subprocess.Popen(
                [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(prefect_port)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        wait_for(f"{api}/health")
        run = subprocess.run(
            [str(BIN / "ragassay"), "run", "--config", str(pipeline_file(folder)), "--json"],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if run.returncode not in (0, 1):
            raise SystemExit(f"ragassay run exited {run.returncode}:\n{run.stderr[-3000:]}")
        report = json.loads(run.stdout)
        (out / "pipeline-report.json").write_text(json.dumps(report, indent=2))

        sys.path.insert(0, str(REPO))
        from ragassay import tracking

        mlflow_client = tracking.client(home)
        parent = mlflow_client.get_run(report["parent_run_id"])
        experiment_id = parent.info.experiment_id
        answer_run = report["answers"]["run_ids"]["hybrid"]
        traces = tracking.find_traces(home, answer_run)
        # A question whose faithfulness is below 1, if any: what a user opens to find out why.
        chosen = next(
            (
                t
                for t in traces
                if any(a.name == "faithfulness" and a.value is not None and a.value < 1 for a in t.info.assessments)
            ),
            traces[0],
        )
        servers.append(
            subprocess.Popen(
                [
                    str(BIN / "mlflow"),
                    "server",
                    "--backend-store-uri",
                    tracking.tracking_uri(home),
                    "--default-artifact-root",
                    (home / "mlartifacts").as_uri(),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(mlflow_port),
                ],
                env={**env, "MLFLOW_DISABLE_TELEMETRY": "true"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        ui = f"http://127.0.0.1:{mlflow_port}"
        wait_for(f"{ui}/health")
        profile = folder / "chromium"
        screenshot(f"{ui}/#/experiments/{experiment_id}/runs/{parent.info.run_id}", out / "mlflow-batch.png", profile)
        screenshot(
            f"{ui}/#/experiments/{experiment_id}/traces?selectedEvaluationId={chosen.info.trace_id}",
            out / "mlflow-trace.png",
            profile,
        )
        screenshot(
            f"{ui}/#/experiments/{experiment_id}/runs/{answer_run}/traces", out / "mlflow-run-traces.png", profile
        )
        flow_run_id = report["prefect_flow_run_id"]
        screenshot(
            f"http://127.0.0.1:{prefect_port}/runs/flow-run/{flow_run_id}", out / "prefect-flow-run.png", profile
        )
        artifacts = httpx.post(
            f"{api}/artifacts/filter", json={"artifacts": {"key": {"any_": ["pipeline-sample-report"]}}}, timeout=30
        ).json()
        screenshot(
            f"http://127.0.0.1:{prefect_port}/artifacts/artifact/{artifacts[0]['id']}",
            out / "prefect-report.png",
            profile,
        )
        screenshot(f"http://127.0.0.1:{prefect_port}/runs", out / "prefect-runs.png", profile)
    finally:
        for server in servers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, 15)
            server.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
