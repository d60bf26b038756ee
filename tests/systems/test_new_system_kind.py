"""A kind of system under test added from one module outside the library (tests/plugins), with no
other file touched: parsed from a configuration, asked, ranked, scored and logged like the
built-in kinds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLE

pytestmark = pytest.mark.flows

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_system_kind_from_a_plugin_module_is_evaluated_like_the_built_in_ones(sample_home, tmp_path):
    from ragassay.golden.store import add_from_file

    add_from_file(sample_home, "sample", SAMPLE / "golden.jsonl")
    golden = [json.loads(line) for line in (SAMPLE / "golden.jsonl").read_text().splitlines() if line.strip()]
    shelf = ["guides/overview.md", "guides/hive-types.md"]
    configs = tmp_path / "configs.json"
    configs.write_text(
        json.dumps({"configurations": [{"label": "shelf", "system": {"kind": "shelf", "documents": shelf}}]})
    )
    environment = {
        **os.environ,
        "RAGASSAY_HOME": str(sample_home),
        "RAGASSAY_PLUGINS": "tests.plugins.toy_system_kind",
        "PYTHONPATH": str(REPO),
    }
    command = [
        str(Path(sys.executable).parent / "ragassay"),
        "eval",
        "retrieval",
        "-c",
        "sample",
        "--configs",
        str(configs),
    ]
    finished = subprocess.run([*command, "--json"], capture_output=True, text=True, env=environment, cwd=REPO)
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(finished.stdout)
    # The shelf holds the expected document of the questions that expect one of its two documents.
    hits = [bool(set(entry["expected_document_ids"]) & set(shelf)) for entry in golden]
    assert report["questions"] == len(golden)
    assert report["means"]["shelf"]["hit_rate@10"] == pytest.approx(sum(hits) / len(golden))
    # Without the plugin the kind is unknown, and the error names what is known.
    del environment["RAGASSAY_PLUGINS"]
    refused = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=REPO)
    assert refused.returncode == 2
    assert "'shelf'" in refused.stderr and "'http'" in refused.stderr, refused.stderr[-2000:]


def test_a_plugin_module_that_cannot_be_imported_is_one_line_naming_it(home):
    command = [str(Path(sys.executable).parent / "ragassay"), "collections", "list"]
    plugin = {"RAGASSAY_PLUGINS": "tests.plugins.no_such_module", "PYTHONPATH": str(REPO)}
    environment = {**os.environ, "RAGASSAY_HOME": str(home), **plugin}
    refused = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=REPO)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "error: RAGASSAY_PLUGINS names module 'tests.plugins.no_such_module', which cannot be imported: "
        "No module named 'tests.plugins.no_such_module'"
    )
