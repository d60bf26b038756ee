#!/usr/bin/env bash
# Sets ragassay up (if needed), checks lint and formatting (ruff), the one-way layers
# (import-linter contracts in pyproject.toml) and the documentation site (mkdocs --strict), then
# runs the whole test suite. Extra arguments go
# to pytest: `bash scripts/test.sh -m "not slow"` is the fast loop (docs/reference/layout.md, "Tests").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
.venv/bin/lint-imports --no-logo --no-cache
# The documentation site: no broken link, no page outside the navigation (mkdocs.yml, strict).
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$site"
rm -rf "$site"
# Every core, each test file on one worker (its module fixtures built once), the longest files
# first (tests/conftest.py, LONGEST_FIRST); `-n 0` overrides.
# The 25 slowest tests are listed at the end, so a test that grew slow shows in every run.
exec .venv/bin/python -m pytest -n auto --dist loadfile --no-loadscope-reorder --durations=25 "$@"
