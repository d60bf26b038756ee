"""The `ragassay` command: exit codes, --json output, and help, on real files and flows."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragassay.cli.main import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def json_of(result) -> dict:
    return json.loads(result.stdout)


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "smoke.txt").write_text("Smoke masks the alarm pheromone of guard bees.", encoding="utf-8")
    (root / "wax.md").write_text("# Wax\n\nBeeswax melts at 63 degrees.", encoding="utf-8")
    return root


@pytest.mark.slow
@pytest.mark.flows
def test_ingest_index_search_and_list_round_trip(home, corpus):
    ingested = invoke("ingest", "--collection", "bees", str(corpus), "--json")
    assert ingested.exit_code == 0, ingested.output
    assert json_of(ingested)["counts"] == {"ingested": 2, "replaced": 0, "unchanged": 0, "rejected": 0}

    indexed = invoke("index", "--collection", "bees", "--json")
    assert indexed.exit_code == 0 and json_of(indexed)["chunks"] == 2

    found = invoke("search", "--collection", "bees", "--mode", "fulltext", "--json", "when does wax melt")
    assert found.exit_code == 0
    results = json_of(found)["results"]
    assert results[0]["doc_id"] == "wax.md" and results[0]["rank"] == 1

    human = invoke("search", "--collection", "bees", "wax melting point")
    assert human.exit_code == 0 and "wax.md" in human.stdout

    listed = invoke("documents", "list", "--collection", "bees", "--json")
    assert sorted(d["doc_id"] for d in json_of(listed)) == ["smoke.txt", "wax.md"]

    deleted = invoke("documents", "delete", "--collection", "bees", "smoke.txt", "--json")
    assert deleted.exit_code == 0 and json_of(deleted) == {
        "collection": "bees",
        "deleted": ["smoke.txt"],
        "reindexed": True,
    }
    after = invoke("search", "--collection", "bees", "--mode", "fulltext", "--json", "smoke alarm pheromone")
    assert json_of(after)["results"] == []

    collections = invoke("collections", "list", "--json")
    assert [c["collection"] for c in json_of(collections)["collections"]] == ["bees"]
    assert invoke("collections", "delete", "bees").exit_code == 0
    assert json_of(invoke("collections", "list", "--json"))["collections"] == []


@pytest.mark.flows
def test_rejected_files_give_exit_code_1_and_are_listed(home, corpus):
    (corpus / "bad.pdf").write_bytes(b"%PDF-1.4 garbage")
    result = invoke("ingest", "--collection", "bees", str(corpus))
    assert result.exit_code == 1
    assert "bad.pdf" in result.stdout and "unreadable" in result.stdout


@pytest.mark.flows
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "--collection", "nowhere", "query"], "no collection 'nowhere'"),
        (["search", "--collection", "x", "--mode", "vector", "query"], "mode"),
        (["ingest", "--collection", "bad name!", "."], "collection name"),
        (["ingest", "--collection", "c", "--chunk-size", "200", "--chunk-overlap", "300", "."], "chunk_overlap"),
        (["ingest", "--collection", "c", "/does/not/exist"], "does not exist"),
        (["documents", "delete", "--collection", "nowhere", "doc"], "no collection"),
    ],
)
def test_usage_and_configuration_errors_exit_2_with_a_message(home, args, message):
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.flows
def test_unknown_document_delete_exits_2_and_deletes_nothing(home, corpus):
    invoke("ingest", "--collection", "bees", str(corpus))
    result = invoke("documents", "delete", "--collection", "bees", "smoke.txt", "ghost.txt")
    assert result.exit_code == 2 and "ghost.txt" in result.output
    assert len(json_of(invoke("documents", "list", "--collection", "bees", "--json"))) == 2


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["ingest"],
        ["index"],
        ["search"],
        ["answer"],
        ["documents", "list"],
        ["documents", "delete"],
        ["collections", "list"],
        ["collections", "delete"],
        ["golden", "add"],
        ["golden", "import"],
        ["golden", "generate"],
        ["golden", "list"],
        ["golden", "delete"],
        ["eval", "retrieval"],
        ["runs", "list"],
        ["runs", "show"],
        ["runs", "compare"],
    ],
)
def test_every_subcommand_has_help_and_a_json_flag(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    if command:
        assert "--json" in result.output


def test_models_are_chosen_by_name_file_or_server(tmp_path):
    from ragassay.cli.options import judge_override, model_settings
    from ragassay.errors import ConfigError

    assert model_settings("qwen2.5-1.5b", None, None, None, None) == {"backend": "qwen2.5-1.5b"}
    assert model_settings("smollm2", None, None, None, None) == {"backend": "smollm2"}
    assert model_settings(str(tmp_path / "judge.gguf"), None, None, None, None) == {
        "backend": "gguf",
        "path": tmp_path / "judge.gguf",
    }
    assert model_settings(None, None, None, "http://gpu:8080", "qwen") == {
        "backend": "openai",
        "url": "http://gpu:8080",
        "model": "qwen",
    }
    assert model_settings(None, None, None, None, None) == {} and judge_override(None, None, None, None, None) is None
    with pytest.raises(ConfigError, match=r"neither a model name .*qwen2\.5-1\.5b.* nor a \.gguf file"):
        model_settings("gpt-7", None, None, None, None)
    with pytest.raises(ConfigError, match="--judge-model or a backend option"):
        judge_override("smollm2", "gguf", None, None, None)


def test_an_unknown_model_name_is_a_usage_error(home):
    result = CliRunner().invoke(app, ["answer", "-c", "sample", "--model", "gpt-7", "What melts wax?"])
    assert result.exit_code == 2 and "gpt-7" in result.output and "smollm2" in result.output


def test_the_answer_summary_names_the_answer_models_and_the_judge_on_their_own_line():
    from ragassay.cli.common import out
    from ragassay.cli.render import render_answer_models

    with out.capture() as captured:
        render_answer_models({"fulltext": "qwen2.5-1.5b:Q", "hybrid": "qwen2.5-1.5b:Q"}, "qwen2.5-1.5b:Q")
    assert captured.get() == "answered by fulltext, hybrid: qwen2.5-1.5b:Q · judged by qwen2.5-1.5b:Q\n"
    with out.capture() as captured:
        render_answer_models({"small": "smollm2:S", "mine": "system under test (http)"}, "qwen2.5-1.5b:Q")
    first, warning = captured.get().splitlines()
    assert first == "answered by small: smollm2:S; mine: system under test (http) · judged by qwen2.5-1.5b:Q"
    assert warning.startswith("SmolLM2-135M writes fast answers too weak")


def test_eval_options_override_a_configs_file_only_when_given_and_say_the_declared_defaults():
    """An option left out keeps the --configs file's value; --groundedness reaches the --mode
    configurations or the declared default one, never a file's (a system's has no such setting);
    each option's help says the default its setting declares."""
    from ragassay.cli.eval import _mode_configurations
    from ragassay.cli.options import given_over

    assert given_over(
        {"seed": 3, "assertions": ["a:x>=1"]},
        {"assertions": ["b:y<=2"]},
        seed=None,
        max_questions=7,
        collections=["sample"],
        configurations=[],
        pairwise=False,
    ) == {
        "seed": 3,
        "max_questions": 7,
        "collections": ["sample"],
        "pairwise": False,
        "assertions": ["a:x>=1", "b:y<=2"],
    }
    assert _mode_configurations({}, [], "off") == [{"label": "hybrid", "search_type": "hybrid", "groundedness": "off"}]
    assert _mode_configurations({}, ["fulltext"], None) == [{"label": "fulltext", "search_type": "fulltext"}]
    system = [{"label": "team", "system": {"kind": "records", "path": "r.jsonl"}}]
    assert given_over(
        {"configurations": system}, configurations=_mode_configurations({"configurations": system}, [], "off")
    ) == {"configurations": system}
    retrieval_help = runner.invoke(app, ["eval", "retrieval", "--help"], env={"COLUMNS": "200"}).stdout
    assert "Default 1,3,5,10." in retrieval_help and "Default 100." in retrieval_help
    assert "Default None" not in retrieval_help, "an option without a default says none"
