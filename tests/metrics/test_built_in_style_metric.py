"""A judged metric added as a built-in one is, in one module (tests/plugins/lead_over_passages.py),
found everywhere the declarations reach: the metric lists, the
labelling sample and screen, and one answer's judging (refused answers included: each metric's
refusal is the declaration's, so none can crash on it). Real SmolLM2 judge; the module is loaded
in a subprocess because the declarations are read once, at import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

SCRIPT = r"""
import json
import numpy as np
from ragassay.answer.grounding import AnsweredStatement, Citation, GroundedAnswer, Source
from ragassay.cli.judge.screens import item_screen
from ragassay.judge.answer_judgement import judge_answer
from ragassay.judge.judge import Judge
from ragassay.judge.calibration.labels.sample import SUPPORT_METRICS, SampleItem
from ragassay.llm.registry import ChatModels
from ragassay.llm.settings import ChatModelConfig
from ragassay.metrics.declared import BY_NAME, LABELLED_METRICS
from ragassay.metrics.names import ANSWER_METRICS, REPORTED_ANSWER_METRICS

name = "lead_over_passages"
sources = [Source(1, "sample", "hives.md", "hives.md#0", 0, 30, None, "Hive 1 was inspected on Monday.")]
statement = AnsweredStatement("Hive 1 was inspected on Monday.", [Citation(1, "hives.md", "hives.md#0", 0, 30, "")])
answered = GroundedAnswer("When was hive 1 inspected?", "answered", "answered", [statement], sources)
refused = GroundedAnswer("When was hive 1 inspected?", "refused", "refused", [], sources)
models = ChatModels()
judge = Judge(models.get(ChatModelConfig(backend="smollm2")))
embed = lambda text: np.ones(3) / np.sqrt(3)
out = {
    "answer_metrics": list(ANSWER_METRICS),
    "reported": name in REPORTED_ANSWER_METRICS,
    "labelled": name in LABELLED_METRICS and name in SUPPORT_METRICS,
}
judged = judge_answer(judge, answered, "On Monday.", embed)
lead = judged.judgement.scores()[name]
out["answered"] = lead.value if lead.value is not None else lead.excluded
out["rows"] = [row["metric"] for row in judged.judgement.verdicts]
out["calls"] = judged.usage.calls
only = judge_answer(judge, answered, "On Monday.", embed, metrics=frozenset({name}))
out["alone_calls"] = only.usage.calls + only.reused  # asked, or remembered from the first judging
out["refused"] = judge_answer(judge, refused, "On Monday.", embed).judgement.scores()[name].excluded
item = SampleItem(**{**{f: None for f in SampleItem.__dataclass_fields__}, "metric": name, "statement": statement.text,
                     "question": answered.question, "answer": answered.text, "context": "[1] Hive 1 was inspected on Monday.",
                     "cited_sources": [], "query_collection": "sample", "query_id": "g1", "configuration": "hybrid"})
out["screen"] = [line.text for line in item_screen(item, 1, 1, (100, 30)).lines]
models.close()
print(json.dumps(out))
"""


def test_a_judged_metric_in_one_module_is_listed_estimated_labelled_and_judged(tmp_path):
    environment = {**os.environ, "RAGASSAY_PLUGINS": "tests.plugins.lead_over_passages", "PYTHONPATH": str(REPO)}
    environment["RAGASSAY_HOME"] = str(tmp_path / "workspace")
    finished = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environment, cwd=REPO, timeout=600
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    out = json.loads(finished.stdout.strip().splitlines()[-1])
    assert out["answer_metrics"][-1] == "lead_over_passages" and out["reported"] and out["labelled"]
    # SmolLM2's verdict: supported, unsupported, or (too weak a judge) unreadable, said so.
    assert out["answered"] in (0.0, 1.0) or out["answered"].startswith("unreadable judge output")
    # Its verdict is recorded under its own name, and the statement it shares with faithfulness
    # and mean support was judged once: asked alone it costs the same single verdict.
    assert out["rows"].count("lead_over_passages") == 1 and out["rows"].count("faithfulness") == 1
    assert out["alone_calls"] >= 1
    assert out["refused"] == "refused"
    assert "Is the answer's first statement supported by the context below?" in out["screen"]
