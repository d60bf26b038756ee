#!/usr/bin/env bash
# Sets ragassay up (if needed), checks lint and formatting (ruff) and the one-way layers
# (import-linter contracts in pyproject.toml), then runs the whole test suite. Extra arguments go
# to pytest: `bash scripts/test.sh -m "not slow"` is the fast loop (README.md, "Tests").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
.venv/bin/lint-imports --no-logo --no-cache
# Every core, each test file on one worker (its module fixtures built once), the longest files
# first (tests/conftest.py, LONGEST_FIRST); `-n 0` overrides.
# The 25 slowest tests are listed at the end, so a test that grew slow shows in every run.
exec .venv/bin/python -m pytest -n auto --dist loadfile --no-loadscope-reorder --durations=25 "$@"
