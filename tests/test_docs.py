"""The documentation site builds with --strict (no broken link, no page outside the navigation),
offline, and its generated references hold every command, option and pipeline key the code
declares: walked here from the typer app and the pydantic models, found in the built pages."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import typer
from pydantic import BaseModel

from tests.conftest import REPO


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr[-3000:]
    return folder


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def _commands(command, path: str):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, f"{path} {name}")


def test_every_command_and_option_is_in_the_cli_reference(site):
    from ragassay.cli.main import app

    reference = _text(site / "reference/cli/index.html")
    walked = list(_commands(typer.main.get_command(app), "ragassay"))
    assert len(walked) > 30, "the app's commands were walked"
    for path, command in walked:
        assert path in reference, f"{path} is not in the CLI reference"
        for parameter in command.params:
            for flag in getattr(parameter, "opts", []):
                if flag.startswith("--"):
                    assert flag in reference, f"{path} {flag} is not in the CLI reference"


def _keys(model: type[BaseModel], prefix: str = "", seen: tuple = ()):
    """(dotted key, its description) of every key a pipeline file may hold."""
    for name, field in model.model_fields.items():
        yield prefix + name, field.description
        inner = [
            a for a in [field.annotation, *_flat(field.annotation)] if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        listed = "[]" if re.search(r"\b(tuple|list)\[", str(field.annotation)) else ""
        for nested in inner:
            if nested not in seen:
                yield from _keys(nested, f"{prefix}{name}{listed}.", (*seen, nested))


def _flat(annotation):
    for argument in typing.get_args(annotation):
        yield argument
        yield from _flat(argument)


def test_every_pipeline_key_is_in_the_configuration_reference(site):
    from ragassay.config import PipelineConfig

    reference = _text(site / "reference/configuration/index.html")
    described = dict(_keys(PipelineConfig))
    assert {"answers.configurations[].k", "index.embedding_model.url", "judge.backend"} <= set(described)
    missing = sorted(key for key in described if key not in reference)
    assert missing == [], f"keys not in the configuration reference: {missing[:10]}"
    undescribed = sorted(key for key, description in described.items() if not description)
    assert undescribed == [], f"keys declared without a description: {undescribed[:10]}"


def test_the_site_reads_offline_and_every_page_is_in_the_navigation(site):
    """No web font or script from elsewhere; every Markdown page under docs/ became a page."""
    index = (site / "index.html").read_text()
    assert "fonts.googleapis.com" not in index
    pages = [p.relative_to(REPO / "docs").with_suffix("") for p in (REPO / "docs").rglob("*.md")]
    for page in pages:
        built = site / (page.parent if page.name == "index" else page) / "index.html"
        assert built.exists(), f"docs/{page}.md was not built"
    mkdocs = (REPO / "mkdocs.yml").read_text()
    assert all(f"{page}.md" in mkdocs for page in pages), "a page outside the navigation"
