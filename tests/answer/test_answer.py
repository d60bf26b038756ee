"""`ragassay answer` with the real SmolLM2 on the sample corpus: cited, declined, or refused."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragassay.answer.answering import answer_question
from ragassay.answer.settings import AnswerSettings
from ragassay.cli.main import app
from ragassay.resources import Resources
from ragassay.store.workspace import collection_paths, load_documents

runner = CliRunner()


@pytest.mark.slow
def test_an_answerable_question_gets_citations_to_real_spans(sample_home):
    answer = answer_question(
        Resources(), sample_home, ["sample"], "What temperature does beeswax melt at?", AnswerSettings()
    )
    usage = answer.usage
    assert answer.outcome == "answered", answer.reason
    documents = load_documents(collection_paths(sample_home, "sample"), with_text=True)
    texts = dict(zip(documents["doc_id"], documents["text"]))
    cited = [c for statement in answer.statements for c in statement.citations]
    assert cited and answer.dropped_citations == 0
    for citation in cited:
        assert texts[citation.doc_id][citation.char_start : citation.char_end] == citation.quote
        assert citation.number in {s.number for s in answer.sources}
    assert "community/beeswax-processing.md" in {c.doc_id for c in cited}
    assert usage.calls >= 1 and usage.prompt_tokens > 0


def test_an_off_topic_question_is_declined_without_calling_the_model(sample_home):
    answer = answer_question(Resources(), sample_home, ["sample"], "What is the capital of Mongolia?", AnswerSettings())
    usage = answer.usage
    assert answer.outcome == "refused" and answer.reason.startswith("nothing relevant retrieved")
    assert answer.relevance is not None and answer.relevance < AnswerSettings().min_relevance
    assert usage.calls == 0


@pytest.mark.slow
def test_answer_command_prints_json_with_sources_model_and_tokens(sample_home, monkeypatch):
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    result = runner.invoke(app, ["answer", "-c", "sample", "--json", "What temperature does beeswax melt at?"])
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert payload["outcome"] == "answered" and payload["sources"]
    assert (
        payload["model_id"] == "smollm2:SmolLM2-135M-Instruct.Q4_1" and payload["prompt_version"] == "grounded-answer/2"
    )
    assert payload["usage"]["model_prompt_tokens"] > 0
    bad = runner.invoke(app, ["answer", "-c", "sample", "--groundedness", "loose", "q"])
    assert bad.exit_code == 2 and "groundedness" in bad.output
