"""Settings from the environment: one typed model, listed in the documentation, read nowhere else."""

from __future__ import annotations

import re
import subprocess

import pytest

from ragassay.environment import Environment, environment, models_dir
from ragassay.errors import ConfigError
from tests.conftest import REPO


def test_the_documentation_lists_exactly_the_variables_the_model_declares():
    section = (REPO / "docs/reference/environment.md").read_text()
    listed = set(re.findall(r"^\| `(RAGASSAY_[A-Z_]+)` \|", section, re.M))
    assert listed == {f"RAGASSAY_{name.upper()}" for name in Environment.model_fields}


# os.environ.get("RAGASSAY_..."), os.getenv(...), or os.environ["RAGASSAY_..."] not being assigned.
READ = re.compile(r"""(environ\.get|getenv)\(\s*["']RAGASSAY_|environ\[["']RAGASSAY_\w+["']\](?!\s*=)""")


def test_no_other_module_reads_a_ragassay_variable():
    files = subprocess.run(["git", "ls-files", "ragassay", "flows", "tasks"], capture_output=True, text=True, cwd=REPO)
    readers = [
        path
        for path in files.stdout.split()
        if path.endswith(".py") and path != "ragassay/environment.py" and READ.search((REPO / path).read_text())
    ]
    assert readers == []


def test_a_malformed_value_is_a_config_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv("RAGASSAY_LOCK_TIMEOUT", "ten")
    with pytest.raises(ConfigError, match="RAGASSAY_LOCK_TIMEOUT"):
        environment()


def test_models_live_in_the_per_user_cache_unless_moved(monkeypatch, tmp_path):
    monkeypatch.delenv("RAGASSAY_MODELS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("RAGASSAY_HOME", str(tmp_path / "workspace"))
    assert models_dir() == (tmp_path / "xdg" / "ragassay" / "models").resolve()
    monkeypatch.setenv("RAGASSAY_MODELS", str(tmp_path / "shared"))
    assert models_dir() == (tmp_path / "shared").resolve()
