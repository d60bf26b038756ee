"""The glossary's reserved words (ARCHITECTURE.md, "Glossary") keep one meaning in the code, its
help texts and the messages users read: "quality gate" is golden generation's, "batch" an MLflow
batch (never a slice of work: that is a "part"), "publish" a Prefect artifact put on a flow run
(an index is swapped in). Each rule is a pattern of the other meaning and the files where the
word may stand; a new use elsewhere fails here, naming the file and line."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import REPO


def _sources() -> dict[str, str]:
    listed = subprocess.run(["git", "ls-files", "ragassay", "flows", "tasks"], capture_output=True, text=True, cwd=REPO)
    return {path: (REPO / path).read_text() for path in listed.stdout.split() if path.endswith(".py")}


# The quality gate is what a generated golden question must pass: named only where generation
# is (the golden package, its flow, task and command, the config of generation, the packages'
# indexes), and where the gates package says it is not one of them.
QUALITY_GATE_FILES = re.compile(
    r"^(ragassay/golden/.*|ragassay/config/(stages|pipeline)\.py|ragassay/cli/golden\.py|flows/generate_golden\.py|"
    r"tasks/generate_golden\.py|(ragassay|flows|tasks)/__init__\.py|ragassay/gates/__init__\.py)$"
)
# A slice of work is a part (work_parts.py): "a batch of files", "batches of documents", a task
# named "...-file-batch" is the other meaning.
WORK_BATCH = re.compile(
    r"\bbatch(es)? of (the )?(files|documents|texts|chunks|questions|rows)\b|-file-batch"
    r"|\b(extraction|embedding|ingest) batch(es)?\b|\ba batch at a time\b",
    re.I,
)
# Building an index ends in a swap, not a publication.
INDEX_FILES = re.compile(r"^(ragassay/index/.*|flows/index\.py|tasks/index\.py)$")


def _lines(pattern: re.Pattern, allowed=None) -> list[str]:
    found = []
    for path, text in _sources().items():
        if allowed is not None and allowed.match(path):
            continue
        found += [f"{path}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if pattern.search(line)]
    return found


def test_quality_gate_names_golden_generation_only():
    assert _lines(re.compile(r"quality gate", re.I), QUALITY_GATE_FILES) == []


def test_a_slice_of_work_is_a_part_not_a_batch():
    assert _lines(WORK_BATCH) == []


def test_an_index_is_swapped_in_not_published():
    found = [line for line in _lines(re.compile(r"publish", re.I)) if INDEX_FILES.match(line.split(":", 1)[0])]
    assert found == []


@pytest.mark.parametrize(
    "sentence",
    [
        "Extract one batch of files",
        "batches of documents are staged",
        'task(name="extract-file-batch")',
        "configurations, embedding groups, extraction batches",
        "its texts are read a batch at a time",
    ],
)
def test_the_work_batch_pattern_catches_the_other_meaning(sentence):
    """The rule above would have caught what it replaced."""
    assert WORK_BATCH.search(sentence)
