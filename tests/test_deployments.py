"""The production shape, end to end on real servers: a PostgreSQL database (when the machine has
PostgreSQL), an MLflow tracking server on it, a Prefect server, `prefect deploy --all` of
prefect.yaml, a process worker, and the pipeline deployment run on the sample corpus. Checked
through both servers' APIs. Everything the test starts, it stops."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO, SAMPLE

pytestmark = pytest.mark.slow  # real PostgreSQL, MLflow and Prefect servers and a worker

BIN = Path(sys.executable).parent
PREFECT = str(BIN / "prefect")
MLFLOW = str(BIN / "mlflow")

# The deployment's own parameters, with the answer stage cut to two questions and one
# configuration, SmolLM2 as judge and no generation, so the run stays short.
TEST_CONFIG = {
    "collection": "sample",
    "ingest": {"paths": ["data/sample/corpus"]},
    "golden": {"file": "data/sample/golden.jsonl", "generate": False},
    "retrieval": {"assertions": ["hybrid:recall@5>=0.5"]},
    # Small on purpose: the deployment's plumbing is what this checks (one answerable and one
    # unanswerable question, short answers).
    "answers": {
        "max_questions": 1,
        "pairwise": False,
        "configurations": [
            {"label": "hybrid", "search_type": "hybrid", "groundedness": "off", "k": 2, "max_answer_tokens": 96}
        ],
    },
    "judge": {"backend": "smollm2"},
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_up(url: str, process: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{url} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"{url} did not answer in {timeout}s:\n{log.read_text()[-3000:]}")


class Services:
    """Background processes started by this test, each in its own process group, so stopping
    one stops its children (gunicorn or uvicorn workers) too."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.processes: list[subprocess.Popen] = []
        self.stops: list[list[str]] = []

    def start(self, name: str, command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, Path]:
        log = self.folder / f"{name}.log"
        process = subprocess.Popen(
            command, env=env, cwd=REPO, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
        )
        self.processes.append(process)
        return process, log

    def stop_all(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=10)
        for command in self.stops:
            subprocess.run(command, capture_output=True, timeout=60)


def as_postgres_user(command: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; CI machines run as root.
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def start_postgres(services: Services) -> str | None:
    """A throwaway PostgreSQL cluster on a loopback port; its URI, or None without PostgreSQL."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if not (initdb and pg_ctl) or (os.geteuid() == 0 and not shutil.which("runuser")):
        return None
    # Not under pytest's tmp_path: the postgres user must be able to reach the folder.
    folder = Path(tempfile.mkdtemp(prefix="ragassay-pg-"))
    folder.chmod(0o755)
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    port = free_port()
    subprocess.run(
        as_postgres_user([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    services.stops.append(as_postgres_user([pg_ctl, "-D", str(data), "stop", "-m", "fast"]))
    services.stops.append(["rm", "-rf", str(folder)])
    subprocess.run(
        as_postgres_user(
            [
                pg_ctl,
                "-D",
                str(data),
                "-l",
                str(folder / "postgres.log"),
                "-w",
                "-t",
                "60",
                "start",
                "-o",
                f"-p {port} -h 127.0.0.1 -k {folder}",
            ]
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def prefect_cli(*args: str, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [PREFECT, "--no-prompt", *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"prefect {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


class WebhookRecorder(BaseHTTPRequestHandler):
    """A webhook receiver on loopback: each POST's JSON body kept in the server's `calls`."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.calls.append(json.loads(body or b"{}"))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *arguments):
        pass


def failure_alert(env: dict[str, str], webhook_url: str) -> None:
    """The failure alert of docs/how-to/team-setup.md, made as a team would: a webhook
    notification block (created by Prefect's own client) and the documented automation, its
    JSON read from the page itself."""
    made = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from prefect.blocks.notifications import CustomWebhookNotificationBlock\n"
            "block = CustomWebhookNotificationBlock(name='recorder', url=sys.argv[1],\n"
            "    json_data={'subject': '{{subject}}', 'body': '{{body}}'})\n"
            "print(block.save('recorder', overwrite=True))",
            webhook_url,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    block_id = made.stdout.strip().splitlines()[-1]
    page = (REPO / "docs" / "how-to" / "team-setup.md").read_text()
    documented = page.split("prefect automation create --from-json '", 1)[1].split("'\n", 1)[0]
    prefect_cli("automation", "create", "--from-json", documented.replace("BLOCK_ID", block_id), env=env)
    assert "ragassay run failed" in prefect_cli("automation", "ls", env=env).stdout


@pytest.fixture
def servers(tmp_path, outer_models_dir):
    """PostgreSQL (if installed), MLflow's tracking server and a Prefect server, on loopback ports;
    the environment a deployer and a worker would have."""
    services = Services(tmp_path)
    try:
        database = start_postgres(services)
        mlflow_port, prefect_port = free_port(), free_port()
        base = {key: value for key, value in os.environ.items() if not key.startswith(("PREFECT_", "MLFLOW_"))}
        backend = (
            database.replace("postgresql://", "postgresql+psycopg2://")
            if database
            else f"sqlite:///{tmp_path / 'mlflow.db'}"
        )
        mlflow, mlflow_log = services.start(
            "mlflow",
            [
                MLFLOW,
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(mlflow_port),
                "--workers",
                "1",
                "--backend-store-uri",
                backend,
                "--artifacts-destination",
                (tmp_path / "mlartifacts").as_uri(),
            ],
            base,
        )
        prefect_env = {**base, "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        prefect, prefect_log = services.start(
            "prefect", [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(prefect_port)], prefect_env
        )
        mlflow_url, api_url = f"http://127.0.0.1:{mlflow_port}", f"http://127.0.0.1:{prefect_port}/api"
        wait_until_up(f"{mlflow_url}/health", mlflow, mlflow_log)
        wait_until_up(f"{api_url}/health", prefect, prefect_log)
        env = {
            **prefect_env,
            "PREFECT_API_URL": api_url,
            "MLFLOW_TRACKING_URI": mlflow_url,
            "RAGASSAY_REPO": str(REPO),
            "RAGASSAY_HOME": str(tmp_path / "workspace"),
            "RAGASSAY_MODELS": str(outer_models_dir),
        }
        yield {"env": env, "api": api_url, "mlflow": mlflow_url, "database": database, "services": services}
    finally:
        services.stop_all()


def test_pipeline_deployment_runs_on_real_servers(servers, tmp_path):
    env, api = servers["env"], servers["api"]
    unanswerable = tmp_path / "unanswerable.jsonl"
    unanswerable.write_text((SAMPLE / "unanswerable.jsonl").read_text().splitlines(keepends=True)[0])
    config = {**TEST_CONFIG, "answers": {**TEST_CONFIG["answers"], "unanswerable": str(unanswerable)}}
    prefect_cli("work-pool", "create", "ragassay-local", "--type", "process", "--overwrite", env=env)
    deployed = prefect_cli("deploy", "--all", env=env)
    for name in ("pipeline/sample-pipeline-nightly", "run-cases/sample-cases"):
        assert name in deployed.stdout
    deployment = httpx.get(f"{api}/deployments/name/pipeline/sample-pipeline-nightly", timeout=30).json()
    assert deployment["schedules"][0]["schedule"]["cron"] == "0 2 * * *"
    assert deployment["job_variables"]["env"]["RAGASSAY_HOME"] == env["RAGASSAY_HOME"]
    assert deployment["job_variables"]["env"]["RAGASSAY_MODELS"] == env["RAGASSAY_MODELS"]
    assert deployment["job_variables"]["env"]["MLFLOW_TRACKING_URI"] == servers["mlflow"]
    for name in ("pipeline/sample-pipeline-nightly", "eval-retrieval/prod-rag-nightly", "run-cases/sample-cases"):
        assert name in deployed.stdout, "the three deployments prefect.yaml declares"

    started = prefect_cli(
        "deployment",
        "run",
        "pipeline/sample-pipeline-nightly",
        "--params",
        json.dumps({"config": config}),
        env=env,
    )
    assert "Created flow run" in started.stdout
    # --run-once: the worker takes the scheduled run, waits for it to finish, and exits.
    worker, worker_log = servers["services"].start(
        "worker", [PREFECT, "worker", "start", "--pool", "ragassay-local", "--run-once"], env
    )
    try:
        worker.wait(timeout=900)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the worker did not finish the run:\n{worker_log.read_text()[-4000:]}")

    # Prefect: the pipeline run and its five stages completed, and the stages published artifacts.
    flows = {f["id"]: f["name"] for f in httpx.post(f"{api}/flows/filter", json={}, timeout=30).json()}
    # The nightly schedule has put future runs on the server too; these are the ones that ran.
    runs = [
        run
        for run in httpx.post(f"{api}/flow_runs/filter", json={}, timeout=30).json()
        if run["state"]["type"] != "SCHEDULED"
    ]
    states = {flows[run["flow_id"]]: run["state"]["type"] for run in runs}
    assert states.get("pipeline") == "COMPLETED", f"{states}\n{worker_log.read_text()[-4000:]}"
    for stage in ("ingest", "index", "eval-retrieval", "eval-answers"):
        assert states.get(stage) == "COMPLETED", (stage, states)
    pipeline_run = next(run for run in runs if flows[run["flow_id"]] == "pipeline")
    artifacts = {a["key"]: a for a in httpx.post(f"{api}/artifacts/filter", json={}, timeout=30).json() if a["key"]}
    for key in (
        "retrieval-sample-metrics",
        "retrieval-sample-report",
        "answers-sample-metrics",
        "answers-sample-report",
        "pipeline-sample-report",
    ):
        assert key in artifacts, sorted(artifacts)
    table = json.loads(artifacts["retrieval-sample-metrics"]["data"])
    assert {row["configuration"] for row in table} == {"fulltext", "semantic", "hybrid"}
    assert all(row["ci_low"] <= row["mean"] <= row["ci_high"] and row["scored"] == 30 for row in table)
    assert servers["mlflow"] in artifacts["retrieval-sample-report"]["data"], "the report links to the MLflow run"

    # The verdict and the batch's metrics on the pipeline's own flow run, where a client looks.
    mine = {
        a["key"]: json.loads(a["data"])
        for a in httpx.post(
            f"{api}/artifacts/filter", json={"artifacts": {"flow_run_id": {"any_": [pipeline_run["id"]]}}}, timeout=30
        ).json()
        if a["type"] == "table"
    }
    assert [(row["assertion"], row["outcome"]) for row in mine["pipeline-sample-assertions"]] == [
        ("hybrid:recall@5>=0.5", "passed")
    ]
    assert {(row["stage"], row["configuration"]) for row in mine["pipeline-sample-metrics"]} == {
        ("retrieval", "fulltext"),
        ("retrieval", "semantic"),
        ("retrieval", "hybrid"),
        ("answers", "hybrid"),
    }
    published = next(
        row
        for row in mine["pipeline-sample-metrics"]
        if (row["configuration"], row["metric"]) == ("hybrid", "recall@5")
    )
    assert published == {
        **next(row for row in table if row["configuration"] == "hybrid" and row["metric"] == "recall@5"),
        "stage": "retrieval",
        **dict.fromkeys(("corrected", "corrected_low", "corrected_high")),
    }

    # MLflow: one batch, its parent carrying summary metrics, plots and the Prefect flow run; the
    # configurations and stages as children.
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=servers["mlflow"])
    experiment = client.get_experiment_by_name("ragassay/sample")
    batch_runs = client.search_runs([experiment.experiment_id], "tags.`ragassay.kind` = 'pipeline'")
    assert len(batch_runs) == 1
    parent = batch_runs[0]
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["ragassay.prefect.flow_run_id"] == pipeline_run["id"]
    assert parent.data.tags["ragassay.prefect.flow_run_url"].endswith(f"/runs/flow-run/{pipeline_run['id']}")
    assert parent.data.tags["mlflow.user"] and parent.data.tags["mlflow.source.name"] == "ragassay run"
    assert parent.data.metrics["retrieval/hybrid/recall_at_5"] >= 0.5 and parent.data.metrics["gates/failed"] == 0
    assert parent.data.tags["ragassay.verdict"] == "passed" and parent.info.run_name.startswith("passed: pipeline-")
    assert parent.data.metrics["retrieval/hybrid/recall_at_5"] == pytest.approx(published["mean"], abs=5e-5)
    assert {"answers/hybrid/refusal_recall", "seconds/answers", "documents/ingested"} <= set(parent.data.metrics)
    plots = {a.path for a in client.list_artifacts(parent.info.run_id, "plots")}
    assert {"plots/retrieval_metrics.png", "plots/retrieval_recall_at_k.png", "plots/answer_metrics.png"} <= plots
    batch_id = parent.data.tags["ragassay.batch_id"]
    children = client.search_runs(
        [experiment.experiment_id],
        f"tags.`ragassay.batch_id` = '{batch_id}' and tags.`ragassay.role` = 'configuration'",
    )
    names = {run.info.run_name for run in children}
    # Named by what differs (the batch id is in a tag and the parent's name).
    assert names == {
        "ingest/sample",
        "index/sample",
        "retrieval/fulltext",
        "retrieval/semantic",
        "retrieval/hybrid",
        "answers/hybrid",
    }
    fulltext = next(run for run in children if run.info.run_name.endswith("retrieval/fulltext"))
    assert not any(key.startswith(("config.fusion", "config.rerank_model")) for key in fulltext.data.params), (
        "only params that apply"
    )
    assert fulltext.data.tags["ragassay.prefect.flow_run_id"] == pipeline_run["id"]

    # --json stays pure JSON on stdout when MLflow is a tracking server (MLflow's own "View run"
    # lines are switched off).
    evaluated = subprocess.run(
        [str(BIN / "ragassay"), "eval", "retrieval", "-c", "sample", "--mode", "fulltext", "--json"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    report = json.loads(evaluated.stdout)
    assert report["mlflow_url"].startswith(servers["mlflow"]) and report["means"]["fulltext"]["recall@5"] > 0

    hybrid = next(run for run in children if run.info.run_name == "retrieval/hybrid")
    assert hybrid.data.metrics["lo/recall_at_5"] == pytest.approx(published["ci_low"], abs=5e-5)
    assert hybrid.data.tags["ragassay.verdict"] == "passed"

    if servers["database"]:
        import psycopg2

        with psycopg2.connect(servers["database"]) as connection, connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM runs")
            assert cursor.fetchone()[0] == 1 + len(children) + 2, "MLflow's runs live in PostgreSQL"

    # From CI over plain HTTP: the shipped script creates a run of the deployment with only what
    # changes (`overrides`), waits, and reads the verdict and metrics from both servers' APIs.
    # Retrieval only, over what the first run built: a bound that cannot hold, then one that does.
    worker, worker_log = servers["services"].start(
        "ci-worker",
        [PREFECT, "worker", "start", "--pool", "ragassay-local", "--prefetch-seconds", "5"],
        {**env, "PREFECT_WORKER_QUERY_SECONDS": "2"},
    )
    quick = ["--set", "golden.generate=false", "--set", "answers.enabled=false"]

    def ci(*bounds: str, extra: tuple[str, ...] = ()) -> tuple[int, dict, str]:
        done = subprocess.run(
            [
                sys.executable,
                str(REPO / "scripts" / "ci_evaluate.py"),
                "--prefect-api",
                api,
                "--deployment",
                "pipeline/sample-pipeline-nightly",
                "--mlflow",
                servers["mlflow"],
                "--poll",
                "1",
                "--timeout",
                "600",
                *quick,
                "--set",
                f"retrieval.assertions={json.dumps(list(bounds))}",
                *extra,
            ],
            env={key: value for key, value in env.items() if key != "PYTHONPATH"},
            capture_output=True,
            text=True,
            timeout=900,
        )
        return (
            done.returncode,
            json.loads(done.stdout) if done.stdout.strip() else {},
            done.stderr + worker_log.read_text()[-3000:],
        )

    # The documented failure alert, with its notification pointed at a local webhook receiver.
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), WebhookRecorder)
    receiver.calls = []
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    failure_alert(env, f"http://127.0.0.1:{receiver.server_address[1]}/hook")

    code, failed, log = ci("fulltext:recall@1<=0.01", "hybrid:recall@5>=0.5")
    assert code == 1, log
    # A deployment's run carries the `ragassay` tag (prefect.yaml), so the alert fires for it,
    # its message naming the failed assertion.
    run = httpx.get(f"{api}/flow_runs/{failed['flow_run_id']}", timeout=30).json()
    assert "ragassay" in run["tags"], run["tags"]
    deadline = time.monotonic() + 120
    while not receiver.calls and time.monotonic() < deadline:
        time.sleep(1)
    receiver.shutdown()
    assert receiver.calls, "the failure alert never called the webhook"
    assert "failed" in receiver.calls[0]["subject"]
    assert "fulltext:recall@1<=0.01" in receiver.calls[0]["body"]
    assert failed["state"] == "FAILED" and failed["verdict"] == "failed"
    assert "1 of 2 assertions failed: fulltext:recall@1<=0.01 (measured " in failed["message"]
    assert [row["outcome"] for row in failed["assertions"]] == ["failed", "passed"]
    assert failed["mlflow"]["verdict"] == "failed" and failed["mlflow"]["batch_id"]
    assert {row["stage"] for row in failed["metrics"]} == {"retrieval"}, "answers were switched off by an override"
    code, passed, log = ci("hybrid:recall@5>=0.5")
    assert code == 0, log
    assert passed["state"] == "COMPLETED" and passed["verdict"] == "passed" and passed["mlflow"]["verdict"] == "passed"
    assert passed["mlflow"]["metrics"]["retrieval/hybrid/recall_at_5"] == pytest.approx(
        next(
            row["mean"] for row in passed["metrics"] if (row["configuration"], row["metric"]) == ("hybrid", "recall@5")
        ),
        abs=5e-5,
    )
    # A key that is no setting fails the run at once, naming it; no verdict, exit 2.
    code, refused, log = ci("hybrid:recall@5>=0.5", extra=("--set", "answers.max_question=2"))
    assert code == 2 and refused["state"] == "FAILED", log
    assert "answers.max_question: unknown key" in refused["message"]
    os.killpg(worker.pid, signal.SIGTERM)
    worker.wait(timeout=60)

    # Cancelled from the Prefect UI (its API) while models answer: the worker stops the run, and
    # the pipeline's MLflow batch ends KILLED with what its stages logged, not RUNNING for ever.
    slow = {**config, "answers": {**config["answers"], "max_questions": 20, "unanswerable": None}}
    started = prefect_cli(
        "deployment", "run", "pipeline/sample-pipeline-nightly", "--params", json.dumps({"config": slow}), env=env
    )
    worker, worker_log = servers["services"].start(
        "cancelled-worker", [PREFECT, "worker", "start", "--pool", "ragassay-local", "--run-once"], env
    )
    deadline, batch = time.monotonic() + 600, None
    while time.monotonic() < deadline and batch is None:
        time.sleep(1)
        running = client.search_runs(
            [experiment.experiment_id], "tags.`ragassay.kind` = 'pipeline' and attributes.status = 'RUNNING'"
        )
        answering = running and client.search_runs(
            [experiment.experiment_id],
            f"tags.`ragassay.batch_id` = '{running[0].data.tags['ragassay.batch_id']}' and tags.`ragassay.kind` = 'retrieval'",
        )
        batch = running[0] if answering else None  # retrieval logged: the answers stage is under way
    assert batch is not None, worker_log.read_text()[-4000:]
    flow_run_id = batch.data.tags["ragassay.prefect.flow_run_id"]
    cancelled = httpx.post(
        f"{api}/flow_runs/{flow_run_id}/set_state", json={"state": {"type": "CANCELLING"}, "force": True}, timeout=30
    )
    assert cancelled.status_code in (200, 201), cancelled.text
    try:
        worker.wait(timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the worker did not stop the cancelled run:\n{worker_log.read_text()[-4000:]}")
    state = httpx.get(f"{api}/flow_runs/{flow_run_id}", timeout=30).json()["state"]["type"]
    assert state == "CANCELLED", f"{state}\n{worker_log.read_text()[-4000:]}"
    ended = client.get_run(batch.info.run_id)
    assert ended.info.status == "KILLED", worker_log.read_text()[-4000:]
    assert ended.data.tags["ragassay.interrupted"].startswith("stopped")
