"""What a user sees in the browser after a pipeline run: starts a Prefect server and runs a small
pipeline of the sample corpus against it (SmolLM2 answering and judging, so it takes minutes, not
an hour), starts MLflow's UI on the run's store, takes headless Chromium screenshots, and stops
both servers.

The pipeline has one bound that cannot hold, so the batch shown is a failed one. Screenshots (PNG,
in --out): the MLflow batch's parent run (its description: the report), the batch's view of the
runs list, the Traces view of one question of an answer run (its retrieved passages, verdicts and
assessments), the run's Traces tab, MLflow's runs list (the batch named `… failed`), the Prefect
flow run's page (Failed, the bound named), its pipeline report and assertions artifacts and the
runs list; then the three clicks docs/how-to/evaluating.md ("Three clicks from a low score") walks
through (click-0 … click-3: the batch, its least faithful answers, a question,
the statement judged unsupported beside its passage), each a real click on the screen before;
MLflow's Sessions view of the dialogues (a session per dialogue and configuration) and one
dialogue opened turn by turn; and the documentation site (built with mkdocs into the work
folder): its home and a how-to page.

    .venv/bin/python scripts/screenshots.py --out /tmp/screens
Needs Debian's `chromium` (`apt-get install chromium`) and Playwright's Python package (`pip
install playwright`, which drives that Chromium: no browser download), neither a dependency of
ragassay. Loopback only.
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
from urllib.parse import quote

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


# What a first visit shows over the page (MLflow's assistant panel and feature tours), closed
# before the picture is taken, as a user would close them.
DISMISS = ("Got it", "Dismiss", "Skip")


def screenshot(browser, url: str, path: Path, width: int = 1900, height: int = 1150, click: str | None = None) -> None:
    """One page once it has rendered, its first-visit pop-ups closed (and the element whose text
    starts with `click` clicked, as a user opening it would)."""
    from playwright.sync_api import Error as PlaywrightError

    page = browser.new_page(viewport={"width": width, "height": height})
    # Both UIs keep polling their servers, so the network never goes quiet: load, then let the
    # page's scripts render.
    page.goto(url, wait_until="load", timeout=120_000)
    page.wait_for_timeout(7000)
    for _ in range(2):
        for text in DISMISS:
            for button in page.get_by_role("button", name=text, exact=True).all():
                with contextlib.suppress(PlaywrightError):
                    button.click(timeout=2000, force=True)
        page.wait_for_timeout(800)
    if click is not None:
        # "button:NAME" clicks the button of that accessible name (an icon's label), else the text.
        if click.startswith("button:"):
            target = page.get_by_role("button", name=click.removeprefix("button:")).first
        else:
            target = page.get_by_text(click).first
        with contextlib.suppress(PlaywrightError):
            target.click(timeout=5000, force=True)
            page.wait_for_timeout(2500)
    close_assistant(page)
    page.screenshot(path=str(path))
    page.close()
    print(f"{path.name}: {url}")


def pipeline_file(folder: Path) -> Path:
    """The sample pipeline, small: SmolLM2 everywhere, four golden questions, two golden dialogues
    and one unanswerable question under two answer configurations, no generation."""
    unanswerable = folder / "unanswerable.jsonl"
    unanswerable.write_text((REPO / "data/sample/unanswerable.jsonl").read_text().splitlines(keepends=True)[0])
    config = {
        "collection": "sample",
        "ingest": {"paths": [str(REPO / "data/sample/corpus")]},
        "golden": {
            "file": [str(REPO / "data/sample/golden.jsonl"), str(REPO / "data/sample/dialogues.jsonl")],
            "generate": False,
        },
        # One bound that holds and one that cannot: the batch a user sees is a failed one (its
        # flow run Failed with the bound named, its MLflow run named and tagged `failed`).
        "retrieval": {"ks": [1, 3, 5, 10], "assertions": ["hybrid:recall@5>=0.5", "fulltext:recall@1>=0.99"]},
        "answers": {
            "unanswerable": str(unanswerable),
            "max_questions": 4,
            "max_dialogues": 2,
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


def ports(folder: Path) -> dict[str, int]:
    """The servers' ports: new ones, or a kept folder's own (its reports' links name them)."""
    saved = folder / "ports.json"
    if saved.exists():
        return json.loads(saved.read_text())
    chosen = {"prefect": free_port(), "mlflow": free_port()}
    saved.write_text(json.dumps(chosen))
    return chosen


def close_assistant(page) -> None:
    """MLflow's assistant panel opens beside every page on a first visit; a user closes it."""
    from playwright.sync_api import Error as PlaywrightError

    if page.get_by_text("MLflow Assistant").count():
        with contextlib.suppress(PlaywrightError):
            page.get_by_role("button", name="Close").last.click(timeout=3000)
            page.wait_for_timeout(800)


def three_clicks(browser, batch_url: str, label: str, trace_id: str, verdict_span: str, out: Path) -> None:
    """What docs/how-to/evaluating.md ("Three clicks from a low score") walks through: the batch's page, then its link to the
    least faithful answers (mean support below its bound), a question, and the statement judged unsupported beside its
    passage. Each step is a real click on what the step before showed."""
    page = browser.new_page(viewport={"width": 1900, "height": 1150})
    page.goto(batch_url, wait_until="load", timeout=120_000)
    page.wait_for_timeout(7000)
    for text in DISMISS:
        for button in page.get_by_role("button", name=text, exact=True).all():
            with contextlib.suppress(Exception):
                button.click(timeout=2000, force=True)
    close_assistant(page)
    link = page.get_by_role("link", name=label, exact=True).first
    link.scroll_into_view_if_needed()
    page.screenshot(path=str(out / "click-0-batch.png"))
    # MLflow opens a description's links in a new tab.
    with page.context.expect_page(timeout=15_000) as opened:
        link.click()
    page = opened.value
    page.set_viewport_size({"width": 1900, "height": 1150})
    page.wait_for_load_state("load")
    page.wait_for_timeout(7000)
    close_assistant(page)
    page.screenshot(path=str(out / "click-1-unfaithful.png"))
    print(f"click-1-unfaithful.png: {page.url}")
    page.get_by_text(trace_id[:10]).first.click()
    page.wait_for_timeout(4000)
    page.screenshot(path=str(out / "click-2-question.png"))
    page.get_by_text(verdict_span, exact=True).first.click()
    page.wait_for_timeout(2500)
    page.screenshot(path=str(out / "click-3-statement.png"))
    print(f"click-3-statement.png: {verdict_span}")
    page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("screenshots"))
    parser.add_argument(
        "--keep",
        type=Path,
        help="a folder for the workspace and the Prefect server's database, kept afterwards; when it "
        "holds a run already (pipeline-report.json), that run is shown again instead of a new one",
    )
    arguments = parser.parse_args()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise SystemExit("needs Playwright's Python package (pip install playwright; no browser download)") from None
    if not shutil.which("chromium"):
        raise SystemExit("needs Debian's chromium (apt-get install chromium)")
    out = arguments.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    folder = arguments.keep.resolve() if arguments.keep else Path(tempfile.mkdtemp(prefix="ragassay-screens-"))
    folder.mkdir(parents=True, exist_ok=True)
    kept_report = folder / "pipeline-report.json"
    home = folder / "workspace"
    port = ports(folder)
    api = f"http://127.0.0.1:{port['prefect']}/api"
    ui = f"http://127.0.0.1:{port['mlflow']}"
    env = {
        **os.environ,
        "PREFECT_HOME": str(folder / "prefect"),
        "PREFECT_API_URL": api,
        "PREFECT_UI_URL": f"http://127.0.0.1:{port['prefect']}",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "RAGASSAY_HOME": str(home),
        # The reports' links point at the MLflow UI this script starts.
        "RAGASSAY_MLFLOW_UI_URL": ui,
    }
    servers = []
    try:
        servers.append(
            subprocess.Popen(
                [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port["prefect"])],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        wait_for(f"{api}/health")
        if kept_report.exists():
            report = json.loads(kept_report.read_text())
        else:
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
            kept_report.write_text(json.dumps(report, indent=2))
        (out / "pipeline-report.json").write_text(json.dumps(report, indent=2))

        sys.path.insert(0, str(REPO))
        from ragassay import tracking

        mlflow_client = tracking.client(home)
        parent = mlflow_client.get_run(report["parent_run_id"])
        experiment_id = parent.info.experiment_id
        label = "hybrid"
        answer_run = report["answers"]["run_ids"][label]
        traces = tracking.find_traces(home, answer_run)
        # A question among the least faithful answers (what the report links to: mean support
        # below its bound, the answer-level score) with a statement judged unsupported (what a user
        # opens to find out why).
        from ragassay.metrics.answer_metrics.mean_support import MEAN_SUPPORT_FAITHFUL_AT

        below = [
            t
            for t in traces
            # A single question: a dialogue's turn sits folded inside its session's row.
            if "mlflow.trace.session" not in (t.info.trace_metadata or {})
            and any(
                a.name == "mean_support" and a.value is not None and a.value < MEAN_SUPPORT_FAITHFUL_AT
                for a in t.info.assessments
            )
            and any(
                s.name.startswith("faithfulness ") and (s.outputs or {}).get("verdict") == "unsupported"
                for s in t.data.spans
            )
        ]
        chosen = (below or traces)[0]
        unsupported = [
            span.name
            for span in chosen.data.spans
            if span.name.startswith("faithfulness ") and (span.outputs or {}).get("verdict") == "unsupported"
        ]
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
                    str(port["mlflow"]),
                ],
                env={**env, "MLFLOW_DISABLE_TELEMETRY": "true"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        wait_for(f"{ui}/health")
        artifacts = {
            a["key"]: a
            for a in httpx.post(
                f"{api}/artifacts/filter",
                json={"artifacts": {"flow_run_id": {"any_": [report["prefect_flow_run_id"]]}}},
                timeout=30,
            ).json()
        }
        prefect_ui = f"http://127.0.0.1:{port['prefect']}"
        runs = f"{ui}/#/experiments/{experiment_id}/runs"
        sessions = sorted({t.info.trace_metadata.get("mlflow.trace.session") for t in traces} - {None})
        site = folder / "site"
        subprocess.run(
            [str(BIN / "mkdocs"), "build", "--quiet", "--site-dir", str(site)],
            cwd=REPO,
            env={**env, "NO_MKDOCS_2_WARNING": "1"},
            check=True,
        )
        pages = {
            "mlflow-batch.png": f"{runs}/{parent.info.run_id}",
            "mlflow-runs-view.png": report["runs_view_url"],
            "mlflow-trace.png": f"{ui}/#/experiments/{experiment_id}/traces?selectedEvaluationId={chosen.info.trace_id}",
            "mlflow-run-traces.png": f"{runs}/{answer_run}/traces",
            "mlflow-runs.png": runs,
            "prefect-flow-run.png": f"{prefect_ui}/runs/flow-run/{report['prefect_flow_run_id']}",
            "prefect-report.png": f"{prefect_ui}/artifacts/artifact/{artifacts['pipeline-sample-report']['id']}",
            "prefect-assertions.png": f"{prefect_ui}/artifacts/artifact/{artifacts['pipeline-sample-assertions']['id']}",
            "prefect-runs.png": f"{prefect_ui}/runs",
            # MLflow 3.17 shows sessions in the Traces tab, grouped by its "Group by session" button.
            "mlflow-sessions.png": f"{ui}/#/experiments/{experiment_id}/traces",
            "docs-home.png": (site / "index.html").as_uri(),
            "docs-own-rag-system.png": (site / "how-to/own-rag-system/index.html").as_uri(),
        }
        if sessions:
            pages["mlflow-session.png"] = (
                f"{ui}/#/experiments/{experiment_id}/chat-sessions/{quote(sessions[0], safe='')}"
            )
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_FLAGS)
            for name, url in pages.items():
                # The report is read down the page: its whole length, the follow-up tables included.
                screenshot(
                    browser,
                    url,
                    out / name,
                    height=9000 if name == "prefect-report.png" else 1150,
                    click="button:Group traces by session" if name == "mlflow-sessions.png" else None,
                )
            if below and unsupported:
                three_clicks(browser, pages["mlflow-batch.png"], label, chosen.info.trace_id, unsupported[0], out)
            else:
                print(f"no answer of {label} has a statement judged unsupported: the three clicks are not shown")
            browser.close()
    finally:
        for server in servers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, 15)
            server.wait(timeout=30)
        if not arguments.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
