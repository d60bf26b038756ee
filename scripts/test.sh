#!/usr/bin/env bash
# Sets ragassay up (if needed), checks the one-way layers (import-linter contracts in
# pyproject.toml), then runs the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/lint-imports --no-logo --no-cache
exec .venv/bin/python -m pytest "$@"
